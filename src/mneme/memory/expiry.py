"""Time to live: when memories expire, and the sweep that takes expired ones out of the current view.

A memory with an `expires_at` also gets a small row in the user's expiry index
(`("memory_expiry", user)`, no vector). Sweeping reads that index only, so expiry never puts a
metadata filter on the memories themselves (Chroma scans metadata linearly; the search hot path
stays an unfiltered vector query). Searches also skip a record whose time has passed before
the sweep ran, so an expired memory is never shown as current.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from langgraph.store.base import BaseStore, PutOp, SearchItem, SearchOp

from mneme.memory.record import EXPIRY, Kind, MemoryRecord, namespace

LIST_LIMIT = 1_000_000
SWEEP_EVERY_S = 60.0
"""A user's expiry index is swept at most this often per process by writes (`maybe_sweep`)."""

_last_sweep: dict[tuple[int, str], float] = {}
_sweep_lock = threading.Lock()


def expires_at(created: datetime, ttl_days: float | None) -> str | None:
    """The expiry time of a memory written at `created` with a time to live (None: never)."""
    if ttl_days is None or ttl_days <= 0:
        return None
    return (created + timedelta(days=ttl_days)).isoformat()


def ttl_for(kind: Kind, defaults: Mapping[str, float | None]) -> float | None:
    """The default time to live (days) of a kind, from `Context.ttl_*_days` style settings."""
    value = defaults.get(kind)
    return None if value is None or value <= 0 else float(value)


def is_expired(record: MemoryRecord, now: datetime) -> bool:
    """Whether a record's `expires_at` has passed (an unreadable time never expires)."""
    if not record.expires_at:
        return False
    try:
        at = datetime.fromisoformat(record.expires_at)
    except ValueError:
        return False
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at <= now


def index_op(record: MemoryRecord) -> PutOp:
    """Op that keeps a record's expiry index row in step with it (removed if it has none)."""
    ns = namespace(EXPIRY, record.user_id)
    if not record.expires_at or not record.current:
        return PutOp(ns, record.id, None)
    return PutOp(
        ns, record.id, {"id": record.id, "kind": record.kind, "expires_at": record.expires_at}, index=False
    )


def unindex_op(user_id: str, memory_id: str) -> PutOp:
    """Op that removes a memory's expiry index row."""
    return PutOp(namespace(EXPIRY, user_id), memory_id, None)


def due(store: BaseStore, user_id: str, now: datetime) -> list[tuple[str, Kind]]:
    """Ids and kinds of a user's memories whose expiry time has passed, from the index."""
    [items] = store.batch([SearchOp(namespace(EXPIRY, user_id), limit=LIST_LIMIT)])
    out: list[tuple[str, Kind]] = []
    for item in cast("list[SearchItem]", items or []):
        value: dict[str, Any] = item.value
        try:
            at = datetime.fromisoformat(str(value.get("expires_at")))
        except ValueError:
            continue
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        if at <= now:
            out.append((item.key, cast("Kind", value.get("kind", "semantic"))))
    return out


def should_sweep(store: BaseStore, user_id: str, *, every_s: float = SWEEP_EVERY_S) -> bool:
    """Whether this process has not swept this user's expiry index for `every_s` seconds."""
    key = (id(store), user_id)
    with _sweep_lock:
        last = _last_sweep.get(key)
        now = time.monotonic()
        if last is not None and now - last < every_s:
            return False
        _last_sweep[key] = now
        return True
