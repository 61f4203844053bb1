"""The read path: find a user's memories for a query, score them, cut by relevance."""

from __future__ import annotations

import json
import math
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

from mneme.memory.extract import is_chinese
from mneme.memory.record import Kind, MemoryHit, MemoryRecord
from mneme.memory.repo import Repo


@dataclass(frozen=True)
class SearchSettings:
    """How a search ranks and cuts its results."""

    limit: int = 5
    kinds: tuple[Kind, ...] | None = None
    include_history: bool = False
    filters: dict[str, Any] | None = None
    min_relevance: float = 0.0
    """Hits whose relevance (0..1) is below this are dropped."""
    overfetch: int = 4
    """Candidates fetched per result wanted, before scoring."""
    w_recency: float = 0.1
    w_importance: float = 0.1
    half_life_days: float = 30.0


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
        with self._lock:
            if lang not in self._anchors:
                vecs = np.asarray(self.embeddings.embed_documents(self._texts[lang]), dtype=np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
                self._anchors[lang] = vecs
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


_calibrators: weakref.WeakKeyDictionary[Any, Calibrator] = weakref.WeakKeyDictionary()
_cal_lock = threading.Lock()


def calibrator_for(store: BaseStore) -> Calibrator | None:
    """The calibrator of a store's embeddings (None when the store has no embeddings)."""
    embeddings = getattr(store, "embeddings", None)
    if embeddings is None:  # the LangGraph server wraps its store (BatchedStore._store)
        embeddings = getattr(getattr(store, "_store", None), "embeddings", None)
    if not isinstance(embeddings, Embeddings):
        return None
    with _cal_lock:
        cal = _calibrators.get(embeddings)
        if cal is None:
            cal = Calibrator(embeddings)
            _calibrators[embeddings] = cal
        return cal


def _age_days(record: MemoryRecord, now: datetime) -> float:
    try:
        at = datetime.fromisoformat(record.updated_at)
    except ValueError:
        return 0.0
    return max(0.0, (now - at).total_seconds() / 86400.0)


def expired(record: MemoryRecord, now: datetime) -> bool:
    """Whether a record's `expires_at` has passed."""
    if not record.expires_at:
        return False
    try:
        return datetime.fromisoformat(record.expires_at) <= now
    except ValueError:
        return False


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
        query: What to look for; or several `(text, weight)` queries (the new input, then
            earlier turns with lower weights) whose results are fused by weighted relevance.
            Each text is embedded on its own, so the earlier turns' vectors come from the
            embedding cache and a long conversation costs one short embedding per turn.
        settings: Limits, filters and weights.

    Returns:
        Hits, best first, each with its final score.
    """
    queries = [(query, 1.0)] if isinstance(query, str) else [(q, w) for q, w in query if q.strip()]
    repo = Repo(store)
    cal = calibrator_for(store)
    now = datetime.now(UTC)
    best: dict[tuple[str, bool], tuple[float, MemoryRecord]] = {}
    for text, weight in queries:
        found = repo.search(
            user_id,
            text,
            kinds=settings.kinds,
            limit=max(settings.limit * settings.overfetch, settings.limit),
            filters=settings.filters,
            include_history=settings.include_history,
        )
        if not found:
            continue
        background = cal.background(text) if cal is not None else None
        for record, raw in found:
            if raw is None:  # a store without vectors: nothing to rank by but recency
                relevance = 0.5
            elif cal is not None and background is not None:
                relevance = cal.relevance(raw, background)
            else:
                relevance = max(0.0, min(1.0, raw))
            key = (record.id, record.current)
            relevance *= weight
            if key not in best or relevance > best[key][0]:
                best[key] = (relevance, record)
    w_rel = 1.0 - settings.w_recency - settings.w_importance
    hits: list[tuple[float, MemoryHit]] = []
    for relevance, record in best.values():
        if relevance < settings.min_relevance or expired(record, now):
            continue
        recency = 0.5 ** (_age_days(record, now) / settings.half_life_days)
        score = w_rel * relevance + settings.w_recency * recency + settings.w_importance * record.importance
        hits.append((score, MemoryHit.of(record, score)))
    hits.sort(key=lambda h: h[0], reverse=True)
    return [h for _, h in hits[: settings.limit]]
