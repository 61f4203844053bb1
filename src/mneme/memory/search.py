"""The read path: find a user's memories for a query, by meaning and by words, ranked and cut.

One search:

1. brings the user's lexical index up to date with the store (`mirror.py`: one point lookup
   when nothing changed) and computes, from it, which memories the filters allow (kind and
   validity are namespaces; expiry, sensitivity, session and metadata are masks over the
   index's columns);
2. asks the store for the nearest memories of each query text, over-fetched by exactly the
   number of memories the filters exclude, so that filtering can never starve the result (a
   store-side filter is used only when more than `EXCLUDED_CAP` are excluded);
3. scores every allowed memory with BM25 (Chinese words by jieba, English stems);
4. fuses both, reads the turns around each candidate, the session it belongs to, the speaker and
   the dates the query names, and adds recency, decayed importance and use (`rank.py`);
5. drops what is not relevant enough in absolute terms (cold start injects nothing), and
   reads the winners back from the store, so that nothing deleted meanwhile is returned.
"""

from __future__ import annotations

import json
import math
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, GetOp, Item, SearchItem, SearchOp

from mneme.memory.dates import asks_present, periods
from mneme.memory.lexical import SPACES, Doc, LexicalIndex, check_filters, doc_allowed
from mneme.memory.mirror import (
    base_store,
    filters_on_sets,
    index_lock,
    lexical_index,
    repair,
    space_namespace,
)
from mneme.memory.rank import QueryEvidence, Ranking, rank
from mneme.memory.record import Kind, MemoryHit, MemoryRecord
from mneme.memory.repo import KINDS
from mneme.memory.terms import is_chinese, terms
from mneme.store.chroma import EXACT_KEYS

if TYPE_CHECKING:
    from mneme.context import Context

EXCLUDED_CAP = 200
"""Up to this many excluded memories in a space, the dense query is over-fetched by their count
(exact, and no store filter); beyond it, the store filters by id inside the query."""
VERIFY_EXTRA = 3
"""Hits read back beyond the limit, to replace any found deleted meanwhile."""


@dataclass(frozen=True)
class SearchSettings:
    """What a search returns and how it ranks (build one from a `Context` with `from_context`)."""

    limit: int = 5
    kinds: tuple[Kind, ...] | None = None
    include_history: bool = False
    filters: dict[str, Any] | None = None
    """Conditions on metadata keys or record attributes (see `lexical.check_filters`)."""
    session_id: str | None = None
    """Only memories from this conversation thread."""
    max_sensitivity: int | None = None
    """Only memories at or below this sensitivity level (None: no limit)."""
    min_relevance: float = 0.0
    """Hits whose absolute relevance (0..1) is below this are dropped."""
    candidates: int = 50
    """Dense candidates per query text and space (lexical candidates: twice this)."""
    ranking: Ranking = field(default_factory=Ranking)

    @classmethod
    def from_context(cls, ctx: Context, **overrides: Any) -> SearchSettings:
        """Settings with the weights, limits and threshold of a run's `Context`."""
        ranking = Ranking(
            mode=ctx.retrieval_mode,
            dense_weight_en=ctx.dense_weight_en,
            dense_weight_zh=ctx.dense_weight_zh,
            w_prev_turn=ctx.w_prev_turn,
            w_next_turn=ctx.w_next_turn,
            w_session=ctx.w_session,
            w_speaker=ctx.w_speaker,
            w_date=ctx.w_date,
            date_slack_days=ctx.date_slack_days,
            w_recency=ctx.w_recency,
            w_recency_present=ctx.w_recency_present,
            w_importance=ctx.w_importance,
            w_use=ctx.w_use,
            recency_half_life_days=ctx.recency_half_life_days,
            importance_half_life_days=ctx.importance_half_life_days,
        )
        base = cls(
            limit=ctx.retrieval_limit,
            min_relevance=ctx.min_relevance,
            max_sensitivity=ctx.max_sensitivity,
            candidates=ctx.retrieval_candidates,
            ranking=ranking,
        )
        return replace(base, **overrides)


class Calibrator:
    """Turns raw similarity into a relevance in 0..1 that means the same for every query.

    Small embedding models give every pair a high cosine (E5: 0.75 to 0.95), and how high
    depends on the query's language and length, so a fixed threshold either injects noise or
    misses. The query is therefore also scored against a fixed set of generic memory-like
    sentences in its language; a hit is relevant when it stands out from that background
    (a z-score, mapped through a logistic to 0..1: 0.5 at z = `z_mid`).
    """

    def __init__(self, embeddings: Embeddings, z_mid: float = 2.0, z_scale: float = 0.6) -> None:
        data = json.loads(resources.files("mneme").joinpath("data", "anchors.json").read_text("utf-8"))
        self.embeddings = embeddings
        self.z_mid = z_mid
        self.z_scale = z_scale
        self._anchors: dict[str, np.ndarray] = {}
        self._texts = {"zh": list(data["zh"]), "en": list(data["en"])}
        self._lock = threading.Lock()

    def _anchor_vectors(self, lang: str) -> np.ndarray:
        """One language's anchors; both languages are embedded at the first search.

        A first query in the other language would otherwise wait for the engine later,
        behind other users' long texts.
        """
        with self._lock:
            if lang not in self._anchors:
                texts = [t for name in self._texts for t in self._texts[name]]
                vecs = np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
                start = 0
                for name, group in self._texts.items():
                    self._anchors[name] = vecs[start : start + len(group)]
                    start += len(group)
            return self._anchors[lang]

    def background(self, query: str) -> tuple[float, float]:
        """Mean and spread of the query's similarity to unrelated memories."""
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        q /= np.linalg.norm(q) + 1e-9
        sims = self._anchor_vectors("zh" if is_chinese(query) else "en") @ q
        return float(sims.mean()), float(max(sims.std(), 0.01))

    def relevance(self, score: float, background: tuple[float, float]) -> float:
        """Relevance in 0..1 of a raw similarity, given the query's background."""
        mean, std = background
        z = (score - mean) / std
        return 1.0 / (1.0 + math.exp(-(z - self.z_mid) / self.z_scale))


CHAT_Z_MID = 5.0
CHAT_Z_SCALE = 0.4
"""An episodic memory (a conversation turn, an event, a folded part of a thread) is compared
with generic chit-chat (`data/chat_anchors.json`), and counts as relevant (0.5) at this many
standard deviations above it. Chosen on LoCoMo's held-out conversations and the Chinese set
against off-topic requests (docs/benchmarks.md). Facts and profile fields keep the
`Calibrator` (0.5 at z = 2 against fact-like anchors): how similar a text is to a query depends
on its style, so each memory is compared with generic memories of its own kind."""


class ChatBackground:
    """The query's similarity to generic chit-chat in its language (mean, spread), cached per model."""

    def __init__(self, embeddings: Embeddings) -> None:
        data = json.loads(resources.files("mneme").joinpath("data", "chat_anchors.json").read_text("utf-8"))
        self.embeddings = embeddings
        self._texts = {"zh": list(data["zh"]), "en": list(data["en"])}
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def background(self, query: str) -> tuple[float, float]:
        """Mean and spread of the query's similarity to generic conversation turns."""
        lang = "zh" if is_chinese(query) else "en"
        with self._lock:
            if lang not in self._vectors:
                vecs = np.asarray(self.embeddings.embed_documents(self._texts[lang]), dtype=np.float32)
                self._vectors[lang] = vecs / (np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9)
            anchors = self._vectors[lang]
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        sims = anchors @ (q / (np.linalg.norm(q) + 1e-9))
        return float(sims.mean()), float(max(sims.std(), 0.01))


_chat: weakref.WeakKeyDictionary[Any, ChatBackground] = weakref.WeakKeyDictionary()


def dense_relevance(store: BaseStore, query: str, cosines: np.ndarray, episodic: np.ndarray) -> np.ndarray:
    """Relevance (0..1) of dense hits: each compared with generic memories of its own kind.

    Args:
        store: The store (its embeddings embed the query and the anchors).
        query: The query text.
        cosines: Cosine similarity of each hit to the query.
        episodic: Which hits are episodic (compared with chit-chat rather than facts).
    """
    cal = calibrator_for(store)
    if cal is None:
        return np.clip(cosines, 0.0, 1.0)
    mean, std = cal.background(query)
    short = 1.0 / (1.0 + np.exp(-((cosines - mean) / std - cal.z_mid) / cal.z_scale))
    long_ = np.asarray(episodic, dtype=bool)
    if not long_.any():
        return short
    with _cal_lock:
        chat = _chat.get(cal.embeddings)
        if chat is None:
            chat = ChatBackground(cal.embeddings)
            _chat[cal.embeddings] = chat
    c_mean, c_std = chat.background(query)
    long_rel = 1.0 / (1.0 + np.exp(-((cosines - c_mean) / c_std - CHAT_Z_MID) / CHAT_Z_SCALE))
    return np.where(long_, long_rel, short)


_calibrators: weakref.WeakKeyDictionary[Any, Calibrator] = weakref.WeakKeyDictionary()
_cal_lock = threading.Lock()


def calibrator_for(store: BaseStore) -> Calibrator | None:
    """The calibrator of a store's embeddings (None when the store has no embeddings)."""
    embeddings = getattr(store, "embeddings", None)
    if embeddings is None:  # the LangGraph server wraps its store (BatchedStore._store)
        embeddings = getattr(base_store(store), "embeddings", None)
    if not isinstance(embeddings, Embeddings):
        return None
    with _cal_lock:
        cal = _calibrators.get(embeddings)
        if cal is None:
            cal = Calibrator(embeddings)
            _calibrators[embeddings] = cal
        return cal


def expired(record: MemoryRecord, now: datetime) -> bool:
    """Whether a record's `expires_at` has passed."""
    if not record.expires_at:
        return False
    try:
        at = datetime.fromisoformat(record.expires_at)
    except ValueError:
        return False
    return (at if at.tzinfo else at.replace(tzinfo=UTC)) <= now


@dataclass
class _Found:
    """Values the store already returned this search (no need to read them again)."""

    values: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)


def _spaces(settings: SearchSettings) -> list[str]:
    spaces: list[str] = list(settings.kinds or KINDS)
    if settings.include_history:
        spaces.append("archive")
    return spaces


def _dense(
    store: BaseStore,
    user_id: str,
    index: LexicalIndex,
    allowed: np.ndarray,
    text: str,
    spaces: list[str],
    want: int,
) -> list[tuple[str, str, float, dict[str, Any] | None]]:
    """Nearest memories of each space, enough of them that the filters cannot starve the result.

    Each hit is `(space, key, cosine, value)`; the value is None when the store answered with
    keys and scores only (`ChromaStore.nearest`).
    """
    nearest = getattr(base_store(store), "nearest", None)
    fast = callable(nearest) and "archive" not in spaces
    by_ids = filters_on_sets(store)
    ops: list[SearchOp] = []
    exact: dict[int, list[str]] = {}
    n = index.n
    space_col = index.cols["space"][:n]
    alive = index.cols["alive"][:n]
    for space in spaces:
        live = index.count(space)
        if live == 0:
            continue
        in_space = alive & (space_col == SPACES.index(space))
        excluded = int((in_space & ~allowed[:n]).sum())
        flt: dict[str, Any] | None = None
        limit = want + excluded
        if fast and excluded and int((in_space & allowed[:n]).sum()) <= EXACT_KEYS:
            # Few allowed: score them exactly (an HNSW query under a narrow filter can miss some).
            keys = [index.doc(int(s)).key for s in np.nonzero(in_space & allowed[:n])[0]]
            if not keys:
                continue
            exact[len(ops)] = keys
            limit = want
        elif by_ids and excluded > EXCLUDED_CAP and space != "archive":
            ids_ok = [index.doc(int(s)).id for s in np.nonzero(in_space & allowed[:n])[0]]
            if not ids_ok:
                continue
            ids_out = [index.doc(int(s)).id for s in np.nonzero(in_space & ~allowed[:n])[0]]
            flt = {"id": {"$in": ids_ok}} if len(ids_ok) <= len(ids_out) else {"id": {"$nin": ids_out}}
            limit = want
        ops.append(SearchOp(space_namespace(user_id, space), filter=flt, limit=min(limit, live), query=text))
    out: list[tuple[str, str, float, dict[str, Any] | None]] = []
    if not ops:
        return out
    if fast:
        # Keys and scores only: the index knows these memories; `_read_back` reads the winners.
        for i, op in enumerate(ops):
            space = op.namespace_prefix[2]
            pairs = nearest(op.namespace_prefix, text, op.limit, op.filter, keys=exact.get(i))  # type: ignore[misc]
            out.extend((space, key, float(score), None) for key, score in pairs)
        return out
    for op, items in zip(ops, store.batch(ops), strict=True):
        space = "archive" if op.namespace_prefix[0] != "memories" else op.namespace_prefix[2]
        for item in cast("list[SearchItem]", items or []):
            if item.score is None or item.value.get("user_id") not in (None, user_id):
                continue
            out.append((space, item.key, float(item.score), item.value))
    return out


def _evidence(
    store: BaseStore,
    user_id: str,
    index: LexicalIndex,
    queries: list[tuple[str, float]],
    settings: SearchSettings,
    spaces: list[str],
    allowed_of: Any,
    found: _Found,
) -> tuple[list[QueryEvidence], np.ndarray]:
    mode = settings.ranking.mode
    raw: list[tuple[str, float, list[tuple[str, str, float, dict[str, Any] | None]]]] = []
    allowed = allowed_of()
    for text, weight in queries:
        hits = (
            _dense(store, user_id, index, allowed, text, spaces, settings.candidates)
            if mode != "lexical"
            else []
        )
        unknown = [
            (space, key)
            for space, key, _, value in hits
            if value is None and (space, key) not in index.slot_of
        ]
        if unknown:  # written behind the revision log's back: read them to index them
            got = store.batch([GetOp(space_namespace(user_id, sp), key) for sp, key in unknown])
            fetched = {
                sk: (item.value if isinstance(item, Item) else None)
                for sk, item in zip(unknown, got, strict=True)
            }
            hits = [
                (sp, key, score, fetched.get((sp, key), value) if value is None else value)
                for sp, key, score, value in hits
            ]
            hits = [h for h in hits if h[3] is not None or (h[0], h[1]) in index.slot_of]
        for space, key, _, value in hits:  # the store is the truth: repair a stale index now
            if value is not None:
                repair(index, space, key, value)
        raw.append((text, weight, hits))
    allowed = allowed_of()  # repairs may have added slots
    evidence: list[QueryEvidence] = []
    for text, weight, hits in raw:
        ev = QueryEvidence(text=text, weight=weight, chinese=is_chinese(text))
        slots: list[int] = []
        cosines: list[float] = []
        episodic: list[bool] = []
        for space, key, score, value in sorted(hits, key=lambda h: h[2], reverse=True):
            slot = index.slot_of.get((space, key))
            if slot is None or not allowed[slot] or len(slots) >= settings.candidates * len(spaces):
                continue
            if value is not None:
                found.values[(space, key)] = value
            slots.append(slot)
            cosines.append(score)
            episodic.append(space == "episodic" or (value is not None and value.get("kind") == "episodic"))
        if slots:
            ev.dense_slots = np.asarray(slots, dtype=np.int64)
            ev.dense_cos = np.asarray(cosines, dtype=np.float64)
            ev.dense_relevance = dense_relevance(store, text, ev.dense_cos, np.asarray(episodic))
        if mode != "dense":
            scores = index.score(terms(text))
            ev.lexical = scores
            pool = np.nonzero(scores.matched & allowed[: len(scores.matched)])[0]
            want = settings.candidates * 2
            if len(pool) > want:
                pool = pool[np.argpartition(-scores.bm25[pool], want - 1)[:want]]
            ev.lexical_top = pool
        evidence.append(ev)
    return evidence, allowed


def _read_back(
    store: BaseStore,
    user_id: str,
    docs: list[tuple[float, Doc]],
    settings: SearchSettings,
    allows: Any,
    found: _Found,
    index: LexicalIndex,
    now: float,
) -> list[MemoryHit]:
    """The winners as hits, read from the store (dense ones came with their values).

    A winner that is gone, or that the filters no longer allow (a write that bypassed the
    revision log), is skipped and repaired in the index.
    """
    hits: list[MemoryHit] = []
    at = datetime.fromtimestamp(now, UTC)
    pos = 0
    while pos < len(docs) and len(hits) < settings.limit:
        batch = docs[pos : pos + settings.limit - len(hits) + VERIFY_EXTRA]
        pos += len(batch)
        missing = [d for _, d in batch if (d.space, d.key) not in found.values]
        got = (
            store.batch([GetOp(space_namespace(user_id, d.space), d.key) for d in missing]) if missing else []
        )
        for d, item in zip(missing, got, strict=True):
            found.values[(d.space, d.key)] = item.value if isinstance(item, Item) else None
        for score, doc in batch:
            value = found.values.get((doc.space, doc.key))
            if value is None or value.get("user_id") not in (None, user_id):
                repair(index, doc.space, doc.key, None)
                continue
            fresh = Doc.of(doc.space, doc.key, value)
            if fresh.content_hash != doc.content_hash or not allows(fresh):
                repair(index, doc.space, doc.key, value)
                if not allows(fresh):
                    continue
            record = MemoryRecord.from_store(value)
            if expired(record, at):
                continue
            hits.append(MemoryHit.of(record, score))
            if len(hits) >= settings.limit:
                break
    return hits


def search(
    store: BaseStore,
    user_id: str,
    query: str | Sequence[tuple[str, float]],
    settings: SearchSettings,
) -> list[MemoryHit]:
    """Search one user's memories.

    Args:
        store: Any LangGraph store.
        user_id: Whose memories; the search never leaves this user's namespaces.
        query: What to look for; or several `(text, weight)` queries (the new input first,
            then earlier turns with lower weights) whose evidence is fused by weight. Each
            text is embedded on its own, so earlier turns' vectors come from the cache.
        settings: Limits, filters, threshold and ranking weights.

    Returns:
        Hits, best first, each with its final score (0..1).
    """
    queries = [(query, 1.0)] if isinstance(query, str) else [(q, w) for q, w in query if q.strip()]
    queries = [(q.strip(), float(w)) for q, w in queries if q.strip() and w > 0]
    if not queries or settings.limit < 1:
        return []
    filters = check_filters(settings.filters)
    spaces = _spaces(settings)
    now = time.time()
    found = _Found()
    with index_lock(store, user_id):
        index = lexical_index(store, user_id)
        if index.size == 0:
            return []

        def allowed_of() -> np.ndarray:
            return index.mask(
                spaces,
                now=now,
                max_sensitivity=settings.max_sensitivity,
                session=settings.session_id,
                filters=filters,
            )

        evidence, allowed = _evidence(store, user_id, index, queries, settings, spaces, allowed_of, found)
        newest = queries[0][0]
        context = settings.ranking.mode == "hybrid"
        ranked = rank(
            index,
            allowed,
            evidence,
            settings.ranking,
            now=now,
            periods=periods(newest) if context else [],
            speakers=index.named_speakers(newest) if context else [],
            lexical_candidates=settings.candidates * 2,
            present=context and asks_present(newest),
        )
        keep = ranked.relevance >= settings.min_relevance
        # Read back at most what could be needed: the limit, and a margin for stale entries.
        upto = settings.limit * 4 + VERIFY_EXTRA
        docs = [
            (float(sc), index.doc(int(sl)))
            for sl, sc in zip(
                ranked.slots[keep][:upto].tolist(), ranked.scores[keep][:upto].tolist(), strict=True
            )
        ]

        def allows(doc: Doc) -> bool:
            return doc_allowed(
                doc,
                spaces,
                now=now,
                max_sensitivity=settings.max_sensitivity,
                session=settings.session_id,
                filters=filters,
            )

        return _read_back(store, user_id, docs, settings, allows, found, index, now)


__all__ = ["Calibrator", "SearchSettings", "calibrator_for", "expired", "search"]
