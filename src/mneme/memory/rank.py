"""Ranking: fuse dense and lexical evidence, read the conversation around each hit, add use and time.

Pure numpy over the slots of a user's lexical index (no store access here). The weights come
from `Context` through `Ranking`; `docs/benchmarks.md` says how each default was chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
    dense: dict[int, float] = field(default_factory=dict)
    """Cosine similarity of each dense candidate slot."""
    dense_relevance: dict[int, float] = field(default_factory=dict)
    """Calibrated relevance (0..1) of each dense candidate slot."""
    lexical: LexicalScores | None = None
    lexical_top: list[int] = field(default_factory=list)
    """The best lexical slots (allowed and matching), best first."""


@dataclass
class Ranked:
    """One ranked slot."""

    slot: int
    score: float
    """Final score in 0..1 (fused relevance, recency, importance and use)."""
    relevance: float
    """Absolute match (0..1): calibrated dense relevance or lexical coverage, the better."""


def _zscore(values: np.ndarray, over: np.ndarray) -> np.ndarray:
    if not over.any():
        return np.zeros_like(values)
    sample = values[over]
    std = float(sample.std())
    return (values - float(sample.mean())) / (std if std > 1e-9 else 1.0)


def _neighbour_sum(index: LexicalIndex, values: np.ndarray, ranking: Ranking) -> np.ndarray:
    """Σ weight × value of the turns around each slot in its session (0 where there is none)."""
    n = len(values)
    prev = index.cols["prev"][:n]
    nxt = index.cols["next"][:n]
    out = np.zeros(n, dtype=np.float64)
    steps = (
        (prev, ranking.w_prev_turn),
        (nxt, ranking.w_next_turn),
    )
    for links, weight in steps:
        if weight == 0:
            continue
        has = links >= 0
        near = np.where(has, values[np.maximum(links, 0)], 0.0)
        out += weight * near
        far_links = np.where(has, index.cols["prev" if links is prev else "next"][np.maximum(links, 0)], -1)
        far = far_links >= 0
        out += weight * SECOND_NEIGHBOUR * np.where(far, values[np.maximum(far_links, 0)], 0.0)
    return out


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
) -> list[Ranked]:
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

    Returns:
        Every candidate with its final score and its absolute relevance.
    """
    n = index.n
    if n == 0 or not queries:
        return []
    allowed = allowed[:n]
    context = ranking.mode == "hybrid"
    total_w = sum(q.weight for q in queries) or 1.0
    base = np.zeros(n, dtype=np.float64)
    match = np.zeros(n, dtype=np.float64)
    candidate = np.zeros(n, dtype=bool)
    for q in queries:
        dz = np.zeros(n, dtype=np.float64)
        if q.dense and ranking.mode != "lexical":
            slots = np.fromiter(q.dense.keys(), dtype=np.int64, count=len(q.dense))
            cos = np.fromiter(q.dense.values(), dtype=np.float64, count=len(q.dense))
            std = float(cos.std()) if len(cos) > 1 else 0.0
            z = (cos - float(cos.mean())) / (std if std > 1e-9 else 1.0)
            dz[:] = float(z.min()) if len(z) else 0.0
            dz[slots] = z
            candidate[slots] = True
            rel = np.zeros(n, dtype=np.float64)
            rel[slots] = np.fromiter((q.dense_relevance.get(int(s), 0.0) for s in slots), dtype=np.float64)
            match = np.maximum(match, q.weight * rel)
        bz = np.zeros(n, dtype=np.float64)
        if q.lexical is not None and ranking.mode != "dense":
            bz = _zscore(q.lexical.bm25.astype(np.float64), allowed)
            top = q.lexical_top[:lexical_candidates]
            candidate[top] = True
            match = np.maximum(match, q.weight * q.lexical.coverage.astype(np.float64))
        if ranking.mode == "dense":
            fused = dz
        elif ranking.mode == "lexical":
            fused = bz
        else:
            wd = ranking.dense_weight_zh if q.chinese else ranking.dense_weight_en
            fused = wd * dz + (1.0 - wd) * bz
        base += q.weight * fused
    base /= total_w
    score = base.copy()
    if context:
        # The conversation around a turn: the answer often follows the turn that matches.
        near = _neighbour_sum(index, np.where(allowed, base, 0.0), ranking)
        score += near
        prev, nxt = index.cols["prev"][:n], index.cols["next"][:n]
        own = np.where(allowed, match, 0.0)
        for links in (prev, nxt):
            near_match = np.where(links >= 0, own[np.maximum(links, 0)], 0.0)
            match = np.maximum(match, NEIGHBOUR_MATCH * near_match)
        grow = candidate.copy()
        for links in (prev, nxt):
            linked = links[candidate]
            linked = linked[linked >= 0]
            grow[linked] = True
            second = links[linked]
            grow[second[second >= 0]] = True
        candidate = grow
    if context and periods:
        said_days = np.nonzero(candidate & allowed)[0]
        hit = index.said_in(periods, said_days, ranking.date_slack_days)
        score[said_days[hit]] += ranking.w_date
    candidate &= allowed
    slots = np.nonzero(candidate)[0]
    if not len(slots):
        return []
    if context and ranking.w_session:
        sessions = index.cols["session"][slots]
        per: dict[int, list[float]] = {}
        for s, b in zip(sessions.tolist(), base[slots].tolist(), strict=True):
            if s >= 0:
                per.setdefault(s, []).append(b)
        if len(per) > 1:
            means = {s: float(np.mean(sorted(v, reverse=True)[:SESSION_TOP])) for s, v in per.items()}
            vals = np.array(list(means.values()))
            std = float(vals.std()) or 1.0
            for i, s in enumerate(sessions.tolist()):
                if s in means:
                    score[slots[i]] += ranking.w_session * (means[s] - float(vals.mean())) / std
    if context and ranking.w_speaker and len(speakers) == 1:
        score[slots] += ranking.w_speaker * (index.cols["speaker"][slots] == speakers[0])
    return _final(index, slots, score, match, ranking, now)


def _final(
    index: LexicalIndex,
    slots: np.ndarray,
    score: np.ndarray,
    match: np.ndarray,
    ranking: Ranking,
    now: float,
) -> list[Ranked]:
    c = index.cols
    rel01 = 1.0 / (1.0 + np.exp(-(score[slots] - RANK_MID) / RANK_SCALE))
    # Recency counts from the user's newest memory, not from the clock: what matters is which
    # of two statements is the later one, also in a history imported long after it was said.
    newest = min(now, float(c["said"][slots].max()))
    age = np.maximum(0.0, newest - c["said"][slots]) / DAY_S
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
    out = [
        Ranked(slot=int(s), score=float(f), relevance=float(min(1.0, m)))
        for s, f, m in zip(slots.tolist(), final.tolist(), match[slots].tolist(), strict=True)
    ]
    out.sort(key=lambda r: r.score, reverse=True)
    return out


__all__ = ["Mode", "QueryEvidence", "Ranked", "Ranking", "rank"]
