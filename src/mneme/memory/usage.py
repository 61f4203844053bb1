"""Use of memories: how often each one was injected into a turn or shown by a tool, and when last.

Counts live in their own namespace (`("memory_usage", user)`, one small row per memory ever
used, no vector) rather than in the record: rewriting a record re-embeds its text, which would
cost a turn about 80 ms per memory, while a use row is a plain key-value write. The rows are
logged like any memory change, so every process's lexical mirror sees them; ranking reads them
from there (`Context.w_use`), and they slow the decay of a memory's importance.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from mneme.memory.record import check_user, namespace, now_iso
from mneme.memory.revision import USAGE, apply_logged

_locks: dict[tuple[int, str], threading.Lock] = {}
_guard = threading.Lock()


def _lock(store: BaseStore, user_id: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((id(store), user_id), threading.Lock())


def record_use(store: BaseStore, user_id: str, memory_ids: Iterable[str]) -> None:
    """Count one use of each memory (ids of another user's memories only create idle rows).

    Args:
        store: The store.
        user_id: Whose memories were used.
        memory_ids: The memories injected or returned.
    """
    check_user(user_id)
    ids = list(dict.fromkeys(i for i in memory_ids if isinstance(i, str) and i))
    if not ids:
        return
    ns = namespace(USAGE, user_id)
    at = now_iso()
    with _lock(store, user_id):
        current = store.batch([GetOp(ns, i) for i in ids])
        ops = []
        for memory_id, item in zip(ids, current, strict=True):
            count = int(item.value.get("use_count", 0)) if isinstance(item, Item) else 0
            value = {"id": memory_id, "use_count": count + 1, "last_used_at": at}
            ops.append(PutOp(ns, memory_id, value, index=False))
        apply_logged(store, ops)


def use_of(store: BaseStore, user_id: str, memory_id: str) -> tuple[int, str | None]:
    """(use count, last use time) of one memory."""
    item = store.get(namespace(USAGE, user_id), memory_id)
    if item is None:
        return 0, None
    return int(item.value.get("use_count", 0)), item.value.get("last_used_at")


__all__ = ["record_use", "use_of"]
