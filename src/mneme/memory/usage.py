"""Use of memories: how often each one was injected into a turn or shown by a tool, and when last.

Counts live in their own namespace (`("memory_usage", user)`, one small row per memory ever
used, no vector) rather than in the record: rewriting a record re-embeds its text, which would
cost a turn about 80 ms per memory, while a use row is a plain key-value write. The rows are
logged like any memory change, so every process's lexical mirror sees them; ranking reads them
from there (`Context.w_use`), and they slow the decay of a memory's importance.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from mneme.memory.record import check_user, namespace, now_iso
from mneme.memory.revision import USAGE, apply_logged
from mneme.store.locks import exclusive

log = logging.getLogger("mneme.usage")


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
    with exclusive(store, f"usage:{user_id}"):
        current = store.batch([GetOp(ns, i) for i in ids])
        ops = []
        for memory_id, item in zip(ids, current, strict=True):
            count = int(item.value.get("use_count", 0)) if isinstance(item, Item) else 0
            value = {"id": memory_id, "use_count": count + 1, "last_used_at": at}
            ops.append(PutOp(ns, memory_id, value, index=False))
        apply_logged(store, ops)


class _UseWriter:
    """One background thread that writes use counts, so that counting never delays a turn.

    A count costs two small store writes (about 20 to 60 ms on Chroma on disk); the turn only
    puts the ids on a queue. Uses of the same user waiting together are written in one batch.
    Counts still queued when the process exits are written by an exit hook (bounded wait).
    """

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[BaseStore, str, list[str]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, store: BaseStore, user_id: str, ids: list[str]) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="mneme-use-counts", daemon=True)
                self._thread.start()
        self._queue.put((store, user_id, ids))

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first]
            while True:  # take whatever else is waiting, to write it together
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            merged: dict[tuple[int, str], tuple[BaseStore, str, list[str]]] = {}
            for job in batch:
                if job is None:
                    continue
                store, user, ids = job
                key = (id(store), user)
                if key in merged:
                    merged[key][2].extend(ids)
                else:
                    merged[key] = (store, user, list(ids))
            for store, user, ids in merged.values():
                try:
                    record_use(store, user, ids)
                except Exception:  # a lost count must never break anything
                    log.warning("could not record memory use for %s", user, exc_info=True)
            for _ in batch:
                self._queue.task_done()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued count is written (True), or `timeout` seconds (False)."""
        return join_within(self._queue, timeout)


def join_within(work: queue.Queue[Any], timeout: float | None) -> bool:
    """`work.join()` with a timeout: True once every item is done, False if `timeout` passed first."""
    done = threading.Event()

    def wait() -> None:
        work.join()
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    return done.wait(timeout)


_writer = _UseWriter()
atexit.register(_writer.flush, 5.0)


def note_use(store: BaseStore, user_id: str, memory_ids: Iterable[str]) -> None:
    """Count one use of each memory in the background (returns at once); see `record_use`."""
    check_user(user_id)
    ids = [i for i in memory_ids if isinstance(i, str) and i]
    if ids:
        _writer.submit(store, user_id, ids)


def flush_uses(timeout: float = 10.0) -> bool:
    """Wait until every use counted with `note_use` is written (tests, shutdown)."""
    return _writer.flush(timeout)


def use_of(store: BaseStore, user_id: str, memory_id: str) -> tuple[int, str | None]:
    """(use count, last use time) of one memory."""
    item = store.get(namespace(USAGE, user_id), memory_id)
    if item is None:
        return 0, None
    return int(item.value.get("use_count", 0)), item.value.get("last_used_at")


__all__ = ["flush_uses", "join_within", "note_use", "record_use", "use_of"]
