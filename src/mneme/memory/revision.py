"""Per-user revision log in the store: which memories changed, so that mirrors can catch up.

Every batch of writes to a user's memories (through `Repo.apply`, which every mneme writer
uses) also rewrites one small item, `("memory_revision", user) / "log"`: a new revision id and
the keys it changed, with the last `LOG_LENGTH` revisions kept. A reader that remembers the
revision it last saw reads that one item (one point lookup) to know whether it is current,
and which keys to re-read when it is not; any process sharing the store (a Chroma server)
sees the same log. A reader whose revision fell out of the log reloads everything.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, Op, PutOp

from mneme.memory.record import ARCHIVE, MEMORIES, now_iso
from mneme.store.locks import exclusive

REVISIONS = "memory_revision"
"""Namespace root of the revision logs: `("memory_revision", user)`."""
USAGE = "memory_usage"
"""Namespace root of use counts: `("memory_usage", user)`, one row per memory ever used."""
LOG_KEY = "log"
LOG_LENGTH = 64
"""Revisions kept in a log; a reader further behind reloads the user's memories."""
MAX_KEYS = 500
"""A revision changing more keys than this is logged as 'reload everything' (a bulk import)."""
LOG_KEYS = 2000
"""Keys kept over the whole log (older revisions are dropped first), so the item stays small."""


def space_of(namespace: tuple[str, ...]) -> tuple[str, str] | None:
    """(user label, space) of a namespace that holds memories or their use counts, else None."""
    if len(namespace) == 3 and namespace[0] == MEMORIES:
        return namespace[1], namespace[2]
    if len(namespace) == 2 and namespace[0] == ARCHIVE:
        return namespace[1], "archive"
    if len(namespace) == 2 and namespace[0] == USAGE:
        return namespace[1], "usage"
    return None


@dataclass(frozen=True)
class Revision:
    """One logged batch of changes."""

    rev: str
    keys: list[tuple[str, str]] | None
    """(space, key) pairs changed; None: too many, reload everything."""


@dataclass(frozen=True)
class Log:
    """A user's revision log as read from the store."""

    rev: str
    """The latest revision."""
    entries: list[Revision]

    def since(self, rev: str) -> list[Revision] | None:
        """The revisions after `rev`, oldest first; None if `rev` is no longer in the log."""
        for i, entry in enumerate(self.entries):
            if entry.rev == rev:
                return self.entries[i + 1 :]
        return None


def _parse(value: dict[str, Any] | None) -> Log | None:
    if not value or not isinstance(value.get("log"), list):
        return None
    entries = []
    for raw in value["log"]:
        keys = raw.get("keys")
        entries.append(
            Revision(
                rev=str(raw.get("rev")),
                keys=None if keys is None else [(str(s), str(k)) for s, k in keys],
            )
        )
    return Log(rev=str(value.get("rev")), entries=entries)


def log_namespace(label: str) -> tuple[str, str]:
    """Namespace of a user's revision log (by user label)."""
    return (REVISIONS, label)


def read_log(store: BaseStore, label: str) -> Log | None:
    """A user's revision log, or None if nothing was ever logged."""
    item = store.get(log_namespace(label), LOG_KEY)
    return _parse(item.value if isinstance(item, Item) else None)


def apply_logged(store: BaseStore, ops: Sequence[Op]) -> list[Any]:
    """Run a batch of store operations, logging a revision for each user whose memories change.

    The log items are written in the same batch, after the changes, so a reader that sees a
    revision also sees what it changed. Reading and rewriting a log happens under the lock
    `revision:<user>` (`store/locks.py`), shared by every process of a shared store, so no
    process overwrites a revision another one logged.

    Args:
        store: The store.
        ops: Any operations (puts into memory namespaces are what gets logged).

    Returns:
        The batch results for `ops` (the log writes' results are dropped).
    """
    ops = list(ops)
    changed: dict[str, list[tuple[str, str]]] = {}
    for op in ops:
        if isinstance(op, PutOp):
            where = space_of(op.namespace)
            if where is not None:
                changed.setdefault(where[0], []).append((where[1], op.key))
    if not changed:
        return store.batch(ops)
    with ExitStack() as stack:
        for label in sorted(changed):
            stack.enter_context(exclusive(store, f"revision:{label}"))
        logs = store.batch([GetOp(log_namespace(label), LOG_KEY) for label in sorted(changed)])
        extra = [
            PutOp(log_namespace(label), LOG_KEY, _next(item, changed[label]), index=False)
            for label, item in zip(sorted(changed), logs, strict=True)
        ]
        return store.batch([*ops, *extra])[: len(ops)]


def _next(item: Any, keys: Iterable[tuple[str, str]]) -> dict[str, Any]:
    old = item.value if isinstance(item, Item) else {}
    log = list(old.get("log") or [])[-(LOG_LENGTH - 1) :]
    unique = list(dict.fromkeys(keys))
    rev = uuid.uuid4().hex
    log.append({"rev": rev, "at": now_iso(), "keys": None if len(unique) > MAX_KEYS else unique})
    while len(log) > 1 and sum(len(e.get("keys") or []) for e in log) > LOG_KEYS:
        log.pop(0)
    return {"rev": rev, "log": log}


__all__ = [
    "LOG_KEY",
    "REVISIONS",
    "USAGE",
    "Log",
    "Revision",
    "apply_logged",
    "log_namespace",
    "read_log",
    "space_of",
]
