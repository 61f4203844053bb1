"""Ranking: fuse dense and lexical evidence, read the conversation around each hit, add use and time.

Pure numpy over the slots of a user's lexical index (no store access here). The weights come
from `Context` through `Ranking`; `docs/benchmarks.md` says how each default was chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time
from typing import Literal

import numpy as np

from mneme.memory.dates import Period
from mneme.memory.lexical import LexicalIndex, LexicalScores

Mode = Literal["hybrid", "dense", "lexical"]

DAY_S = 86400.0
SESSION_TOP = 3
"""A session's relevance is the mean fused score of its best this-many candidates."""
SECOND_NEIGHBOUR = 0.4
"""The turns two steps away weigh this share of the adjacent turns' weights."""
NEIGHBOUR_MATCH = 0.8
"""A turn next to a relevant turn is itself this relevant at least (the answer after a question)."""
RANK_MID = 2.0
RANK_SCALE = 1.0
"""The fused rank (in standard deviations) maps to 0..1 through a logistic: 0.5 at `RANK_MID`."""


@dataclass(frozen=True)
class Ranking:
    """Every weight of the ranking (defaults: `Context`; the reasons are documented there)."""

    mode: Mode = "hybrid"
    dense_weight_en: float = 0.6
    dense_weight_zh: float = 0.8
    w_prev_turn: float = 0.5
    w_next_turn: float = 0.3
    w_session: float = 0.4
    w_speaker: float = 1.5
    w_date: float = 2.0
    date_slack_days: int = 3
    w_recency: float = 0.1
    w_recency_present: float = 0.2
    w_importance: float = 0.1
    w_use: float = 0.05
    recency_half_life_days: float = 30.0
    importance_half_life_days: float = 90.0


@dataclass
class QueryEvidence:
    """What one query text found: dense candidates and lexical scores over every slot."""

    text: str
    weight: float
    chinese: bool
    dense_slots: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    """Slots of the dense candidates."""
    dense_cos: np.ndarray = field(default_factory=lambda: np.empty(0))
    """Their cosine similarity to the query."""
    dense_relevance: np.ndarray = field(default_factory=lambda: np.empty(0))
    """Their calibrated relevance (0..1)."""
    lexical: LexicalScores | None = None
    lexical_top: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    """The best lexical slots (allowed and matching), best first."""


@dataclass
class Ranked:
    """The candidates of one search, best first."""

    slots: np.ndarray
    scores: np.ndarray
    """Final score in 0..1 (fused relevance, recency, importance and use)."""
    relevance: np.ndarray
    """Absolute match (0..1): calibrated dense relevance or lexical coverage, the better."""

    def __len__(self) -> int:
        return len(self.slots)


def _empty() -> Ranked:
    return Ranked(np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))


def _zscore(values: np.ndarray, over: np.ndarray) -> np.ndarray:
    if not over.any():
        return np.zeros_like(values)
    sample = values[over]
    std = float(sample.std())
    return (values - float(sample.mean())) / (std if std > 1e-9 else 1.0)


def _follow(links: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """The linked slot of each slot (-1 where there is none, or where the slot is -1)."""
    out = np.full(len(slots), -1, dtype=np.int64)
    ok = slots >= 0
    out[ok] = links[slots[ok]]
    return out


def _at(values: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """values[slots], 0 where the slot is -1."""
    return np.where(slots >= 0, values[np.maximum(slots, 0)], 0.0)


def _session_boost(sessions: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Standardized relevance of each candidate's session (mean of its best `SESSION_TOP`)."""
    out = np.zeros(len(sessions))
    has = sessions >= 0
    if has.sum() < 2:
        return out
    sess, vals = sessions[has], base[has]
    order = np.lexsort((-vals, sess))
    sess, vals = sess[order], vals[order]
    starts = np.r_[0, np.nonzero(np.diff(sess))[0] + 1]
    if len(starts) < 2:
        return out
    position = np.arange(len(sess)) - np.repeat(starts, np.diff(np.r_[starts, len(sess)]))
    top = position < SESSION_TOP
    groups = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(sess)]))
    sums = np.bincount(groups[top], weights=vals[top], minlength=len(starts))
    counts = np.bincount(groups[top], minlength=len(starts))
    means = sums / np.maximum(counts, 1)
    z = (means - means.mean()) / (means.std() or 1.0)
    per_session = dict(zip(sess[starts].tolist(), z.tolist(), strict=True))
    out[has] = [per_session[s] for s in sessions[has].tolist()]
    return out


def _said_in(index: LexicalIndex, slots: np.ndarray, periods: list[Period], slack_days: int) -> np.ndarray:
    said = index.cols["said"][slots]
    hit = np.zeros(len(slots), dtype=bool)
    months = (said.astype("datetime64[s]").astype("datetime64[M]").astype(np.int64) % 12) + 1
    slack_months = (
        (said - slack_days * DAY_S).astype("datetime64[s]").astype("datetime64[M]").astype(np.int64) % 12
    ) + 1
    for p in periods:
        if p.month is not None:
            hit |= (months == p.month) | (slack_months == p.month)
        elif p.start is not None and p.end is not None:
            start = datetime.combine(p.start, time.min, UTC).timestamp()
            end = datetime.combine(p.end, time.max, UTC).timestamp() + slack_days * DAY_S
            hit |= (said >= start) & (said <= end)
    return hit & (said > 0)


def rank(
    index: LexicalIndex,
    allowed: np.ndarray,
    queries: list[QueryEvidence],
    ranking: Ranking,
    *,
    now: float,
    periods: list[Period],
    speakers: list[int],
    lexical_candidates: int,
    present: bool = False,
) -> Ranked:
    """Rank the candidates of one search, best first.

    Args:
        index: The user's lexical index.
        allowed: Which slots may be returned (filters already applied).
        queries: Evidence per query text (the newest input first).
        ranking: The weights.
        now: POSIX time used for recency and decay.
        periods: Periods the newest query names (said-time matching).
        speakers: Speaker codes the newest query names (boosted when exactly one).
        lexical_candidates: How many lexical hits each query contributes.
        present: The newest query asks how things stand now (recency weighs
            `w_recency_present` instead of `w_recency`).

    Returns:
        Every candidate with its final score and its absolute relevance, best first.
    """
    n = index.n
    if n == 0 or not queries:
        return _empty()
    allowed = allowed[:n]
    context = ranking.mode == "hybrid"
    total_w = sum(q.weight for q in queries) or 1.0
    base = np.zeros(n, dtype=np.float64)
    match = np.zeros(n, dtype=np.float64)
    candidate = np.zeros(n, dtype=bool)
    for q in queries:
        dz: np.ndarray | float = 0.0
        if len(q.dense_slots) and ranking.mode != "lexical":
            cos = q.dense_cos
            std = float(cos.std()) if len(cos) > 1 else 0.0
            z = (cos - float(cos.mean())) / (std if std > 1e-9 else 1.0)
            dz = np.full(n, float(z.min()))
            dz[q.dense_slots] = z
            candidate[q.dense_slots] = True
            np.maximum.at(match, q.dense_slots, q.weight * q.dense_relevance)
        bz: np.ndarray | float = 0.0
        if q.lexical is not None and ranking.mode != "dense":
            bz = _zscore(q.lexical.bm25.astype(np.float64), allowed)
            candidate[q.lexical_top[:lexical_candidates]] = True
            np.maximum(match, q.weight * q.lexical.coverage, out=match)
        if ranking.mode == "dense":
            base += q.weight * dz
        elif ranking.mode == "lexical":
            base += q.weight * bz
        else:
            wd = ranking.dense_weight_zh if q.chinese else ranking.dense_weight_en
            base += q.weight * (wd * dz + (1.0 - wd) * bz)
    base /= total_w
    prev, nxt = index.cols["prev"][:n], index.cols["next"][:n]
    if context:  # the turns around each candidate become candidates too
        core = np.nonzero(candidate)[0]
        for links in (prev, nxt):
            one = _follow(links, core)
            two = _follow(links, one)
            candidate[one[one >= 0]] = True
            candidate[two[two >= 0]] = True
    slots = np.nonzero(candidate & allowed)[0]
    if not len(slots):
        return _empty()
    score = base[slots].copy()
    rel = match[slots].copy()
    if context:
        # The conversation around a turn: the answer often follows the turn that matches.
        shown = np.where(allowed, base, 0.0)
        own = np.where(allowed, match, 0.0)
        for links, weight in ((prev, ranking.w_prev_turn), (nxt, ranking.w_next_turn)):
            one = _follow(links, slots)
            two = _follow(links, one)
            score += weight * (_at(shown, one) + SECOND_NEIGHBOUR * _at(shown, two))
            rel = np.maximum(rel, NEIGHBOUR_MATCH * _at(own, one))
        if periods:
            score += ranking.w_date * _said_in(index, slots, periods, ranking.date_slack_days)
        if ranking.w_session:
            score += ranking.w_session * _session_boost(index.cols["session"][slots], base[slots])
        if ranking.w_speaker and len(speakers) == 1:
            score += ranking.w_speaker * (index.cols["speaker"][slots] == speakers[0])
    if present:
        ranking = replace(ranking, w_recency=ranking.w_recency_present)
    return _final(index, slots, score, rel, ranking, now)


def _final(
    index: LexicalIndex,
    slots: np.ndarray,
    score: np.ndarray,
    relevance: np.ndarray,
    ranking: Ranking,
    now: float,
) -> Ranked:
    c = index.cols
    rel01 = 1.0 / (1.0 + np.exp(-(score - RANK_MID) / RANK_SCALE))
    said = c["said"][slots]
    # Recency counts from the newest candidate, not from the clock: what matters is which of
    # two statements is the later one, also in a history imported long after it was said.
    newest = min(now, float(said.max()))
    age = np.maximum(0.0, newest - said) / DAY_S
    recency = np.power(0.5, age / max(ranking.recency_half_life_days, 1e-6))
    fresh = np.maximum(c["updated"][slots], c["last_used"][slots])
    idle = np.maximum(0.0, now - fresh) / DAY_S
    importance = c["importance"][slots] * np.power(0.5, idle / max(ranking.importance_half_life_days, 1e-6))
    use = np.minimum(1.0, np.log1p(c["use_count"][slots]) / math.log1p(10.0))
    w_rest = ranking.w_recency + ranking.w_importance + ranking.w_use
    final = (
        (1.0 - w_rest) * rel01
        + ranking.w_recency * recency
        + ranking.w_importance * importance
        + ranking.w_use * use
    )
    order = np.argsort(-final, kind="stable")
    return Ranked(slots[order], final[order], np.minimum(1.0, relevance[order]))


__all__ = ["Mode", "QueryEvidence", "Ranked", "Ranking", "rank"]
