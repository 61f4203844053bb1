"""Keeps one lexical index per user in step with the store, whoever writes to it.

The index is derived from the store, never fed by the writers: before each search, the user's
revision log (`revision.py`, one point lookup) says whether anything changed since the index
was built and which keys; those are re-read, or everything is reloaded when the index fell too
far behind. Writers that bypass `Repo` (a store edited by hand, a namespace dropped) are caught
by comparing per-space counts with the store every `RECHECK_S` seconds, and a search that finds
a memory the index does not know (or no longer has) repairs the index on the spot.

Loading a large user's index reads every record (about 0.3 s per 1,000 memories), so a store
that has a folder for derived data (`ChromaStore.open`: `snapshot_dir`) keeps a snapshot of
each large index there, tagged with the revision it reflects: written when the process exits
(or by `save_snapshot`), read at the next process's first search and brought up to date from
the revision log like an index in memory. A snapshot the log cannot bring up to date is
ignored. Writing one takes a few seconds at 100,000 memories, so it never happens in a search.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import pickle
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Item, SearchItem

from mneme.memory.dates import parse_time
from mneme.memory.lexical import SPACES, Doc, LexicalIndex
from mneme.memory.record import ARCHIVE, MEMORIES, namespace, user_label
from mneme.memory.revision import USAGE, Log, read_log

PAGE = 5_000
"""Items read per store call when loading a user's index."""
RECHECK_S = 30.0
"""How often (seconds) a user's per-space counts are compared with the store, to catch writes
that bypassed the revision log. Only for stores that count cheaply (`count(namespace)`)."""
MAX_USERS = 512
"""Indexes kept per store (least recently searched users are dropped first)."""
SNAPSHOT_MIN = 5_000
"""Indexes of at least this many live memories are snapshotted (smaller ones load in < 1.5 s)."""
SNAPSHOT_FORMAT = 1
"""Bumped whenever `LexicalIndex` changes shape: older snapshots are then ignored."""

logger = logging.getLogger(__name__)


def base_store(store: BaseStore) -> BaseStore:
    """The store under LangGraph's wrappers (the server wraps its store per run)."""
    seen = 0
    while seen < 4 and isinstance(getattr(store, "_store", None), BaseStore):
        store = cast(BaseStore, store._store)  # type: ignore[attr-defined]
        seen += 1
    return store


def filters_on_sets(store: BaseStore) -> bool:
    """Whether a store filters on `$in` / `$nin` itself.

    mneme's stores do (they also rank with `nearest`); LangGraph's in-memory and SQLite stores
    do not.
    """
    return callable(getattr(base_store(store), "nearest", None))


def space_namespace(user_id: str, space: str) -> tuple[str, ...]:
    """The store namespace of one space of a user."""
    if space == "archive":
        return namespace(ARCHIVE, user_id)
    return (MEMORIES, user_label(user_id), space)


@dataclass
class _Mirror:
    index: LexicalIndex | None = None
    rev: str | None = None
    checked: float = 0.0
    lock: threading.RLock = field(default_factory=threading.RLock)
    loads: int = 0
    """Full loads so far (tests and benchmarks read it)."""
    restores: int = 0
    """Loads from a snapshot so far."""
    saved_rev: str | None = None
    """The revision of the last snapshot written or read (nothing to save while it is `rev`)."""
    forgotten: bool = False
    """A memory was forgotten since the index was last loaded in full: its words may still be
    in the vocabulary, so no snapshot is written from this index (see `forget_snapshot`)."""


_mirrors: weakref.WeakKeyDictionary[BaseStore, OrderedDict[str, _Mirror]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def _mirror(store: BaseStore, user_id: str) -> _Mirror:
    with _registry_lock:
        users = _mirrors.get(store)
        if users is None:
            users = OrderedDict()
            _mirrors[store] = users
        mirror = users.get(user_id)
        if mirror is None:
            mirror = _Mirror()
            users[user_id] = mirror
            while len(users) > MAX_USERS:
                users.popitem(last=False)
        users.move_to_end(user_id)
        return mirror


def loads(store: BaseStore, user_id: str) -> int:
    """How many times a user's index was loaded in full (for tests and benchmarks)."""
    return _mirror(base_store(store), user_id).loads


def restores(store: BaseStore, user_id: str) -> int:
    """How many times a user's index was read from a snapshot (for tests and benchmarks)."""
    return _mirror(base_store(store), user_id).restores


def lexical_index(store: BaseStore, user_id: str) -> LexicalIndex:
    """The user's lexical index, brought up to date with the store.

    Args:
        store: Any LangGraph store.
        user_id: Whose memories.

    Returns:
        The index; use it under `index_lock` if other threads may search the same user.
    """
    store = base_store(store)
    mirror = _mirror(store, user_id)
    with mirror.lock:
        label = user_label(user_id)
        log = read_log(store, label)
        if mirror.index is None and _restore(store, user_id, mirror, log):
            pass
        elif mirror.index is None or (log is None and mirror.rev is not None):
            _load(store, user_id, mirror, log)
        elif log is not None and log.rev != mirror.rev:
            revisions = log.since(mirror.rev) if mirror.rev is not None else None
            if revisions is None or any(r.keys is None for r in revisions):
                _load(store, user_id, mirror, log)
            else:
                _refresh(store, user_id, mirror.index, {k for r in revisions for k in (r.keys or [])})
                mirror.rev = log.rev
        elif time.monotonic() - mirror.checked > RECHECK_S and not _counts_match(
            store, user_id, mirror.index
        ):
            _load(store, user_id, mirror, log)
        if time.monotonic() - mirror.checked > RECHECK_S:
            mirror.checked = time.monotonic()
        assert mirror.index is not None
        return mirror.index


def index_lock(store: BaseStore, user_id: str) -> threading.RLock:
    """The lock that guards a user's index (searches and repairs take it)."""
    return _mirror(base_store(store), user_id).lock


def _listing(store: BaseStore, ns: tuple[str, ...]) -> Iterator[SearchItem]:
    """Every item of a namespace, read `PAGE` at a time.

    Chroma refuses one read of 100,000 items, and a page is dropped once parsed, so loading
    never holds every stored value at once.
    """
    offset = 0
    while True:
        page = store.search(ns, limit=PAGE, offset=offset)
        yield from page
        offset += len(page)
        if len(page) < PAGE:
            return


def _load(store: BaseStore, user_id: str, mirror: _Mirror, log: Log | None) -> None:
    """Read every memory, archived version and use count of a user into a new index."""
    index = LexicalIndex()
    for row in _listing(store, namespace(USAGE, user_id)):
        _set_usage(index, row.key, row.value)
    docs = []
    for space in SPACES:
        for item in _listing(store, space_namespace(user_id, space)):
            if item.value.get("user_id") in (None, user_id):  # identity comes from the namespace
                docs.append(Doc.of(space, item.key, item.value))
    index.bulk(docs)
    mirror.index = index
    mirror.rev = log.rev if log is not None else None
    mirror.checked = time.monotonic()
    mirror.loads += 1
    mirror.forgotten = False


def _set_usage(index: LexicalIndex, memory_id: str, value: dict[str, Any]) -> None:
    at = parse_time(value.get("last_used_at"))
    try:
        count = float(value.get("use_count", 0))
    except (TypeError, ValueError):
        count = 0.0
    index.set_usage(memory_id, count, at.timestamp() if at else 0.0)


def _refresh(store: BaseStore, user_id: str, index: LexicalIndex, keys: set[tuple[str, str]]) -> None:
    """Re-read the changed keys: upsert what exists, remove what is gone."""
    wanted = sorted(keys)
    ops = [
        GetOp(namespace(USAGE, user_id) if space == "usage" else space_namespace(user_id, space), key)
        for space, key in wanted
    ]
    results = store.batch(ops) if ops else []
    for (space, key), item in zip(wanted, results, strict=True):
        if space == "usage":
            if isinstance(item, Item):
                _set_usage(index, key, item.value)
            continue
        if space not in SPACES:
            continue
        if isinstance(item, Item) and item.value.get("user_id") in (None, user_id):
            index.upsert(space, key, item.value)
        else:
            index.remove(space, key)


def _counts_match(store: BaseStore, user_id: str, index: LexicalIndex) -> bool:
    count = cast("Callable[[tuple[str, ...]], int] | None", getattr(store, "count", None))
    if count is None:
        return True
    return all(count(space_namespace(user_id, s)) == index.count(s) for s in SPACES)


def _snapshot_file(store: BaseStore, user_id: str) -> Path | None:
    folder = getattr(store, "snapshot_dir", None)
    if not isinstance(folder, Path) or not folder.parent.is_dir():  # the store's folder is gone
        return None
    name = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:40]
    return folder / "lexical" / f"{name}.pkl"


def save_snapshot(store: BaseStore, user_id: str) -> bool:
    """Write a user's index to the store's folder for derived data, if it is worth keeping.

    Args:
        store: The store (only one with a `snapshot_dir` keeps snapshots).
        user_id: Whose index.

    Returns:
        Whether a snapshot was written (not when the index is small, has no revision, or is
        already saved at its revision).
    """
    store = base_store(store)
    path = _snapshot_file(store, user_id)
    if path is None:
        return False
    mirror = _mirror(store, user_id)
    with mirror.lock:
        index = mirror.index
        if (
            index is None
            or mirror.forgotten
            or mirror.rev is None
            or mirror.saved_rev == mirror.rev
            or index.size < SNAPSHOT_MIN
        ):
            return False
        data = {"format": SNAPSHOT_FORMAT, "user": user_id, "rev": mirror.rev, "index": index}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as f:
                pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # atomic: a reader sees the old snapshot or the new one
        except OSError as exc:
            logger.warning("mneme: could not save the lexical index of %s: %s", user_id, exc)
            with contextlib.suppress(OSError):  # the folder itself may be what failed
                tmp.unlink(missing_ok=True)
            return False
        mirror.saved_rev = mirror.rev
        return True


def forget_snapshot(store: BaseStore, user_id: str) -> bool:
    """Delete a user's index snapshot after a memory was forgotten, and write none from this index.

    An index keeps no text, but its vocabulary keeps the words of every memory it ever held
    until it is rebuilt: the next process loads the index in full (and snapshots that one).

    Returns:
        Whether a snapshot file was deleted.
    """
    store = base_store(store)
    mirror = _mirror(store, user_id)
    with mirror.lock:
        mirror.forgotten = True
        mirror.saved_rev = None
    path = _snapshot_file(store, user_id)
    if path is None or not path.exists():
        return False
    with contextlib.suppress(OSError):
        path.unlink()
    return not path.exists()


def _restore(store: BaseStore, user_id: str, mirror: _Mirror, log_now: Log | None) -> bool:
    """Read a user's index from its snapshot and catch it up with the log; False if unusable.

    The snapshot is a pickle in the store's own data folder (derived data: whoever can write
    there can already change the memories themselves).
    """
    path = _snapshot_file(store, user_id)
    if path is None or log_now is None or not path.is_file():
        return False
    try:
        with path.open("rb") as f:
            data = pickle.load(f)  # the store's own folder: see the docstring
    except Exception as exc:  # a truncated or foreign file: rebuild from the store
        logger.warning("mneme: ignoring the unreadable lexical index snapshot %s: %s", path, exc)
        return False
    if (
        not isinstance(data, dict)
        or data.get("format") != SNAPSHOT_FORMAT
        or data.get("user") != user_id
        or not isinstance(data.get("index"), LexicalIndex)
    ):
        return False
    rev = str(data.get("rev"))
    revisions = [] if rev == log_now.rev else log_now.since(rev)
    if revisions is None or any(r.keys is None for r in revisions):
        return False  # too far behind: a full load (and a new snapshot at exit)
    index: LexicalIndex = data["index"]
    if revisions:
        _refresh(store, user_id, index, {k for r in revisions for k in (r.keys or [])})
    if not _counts_match(store, user_id, index):
        return False
    mirror.index = index
    mirror.rev = log_now.rev
    mirror.saved_rev = rev
    mirror.checked = time.monotonic()
    mirror.restores += 1
    return True


@atexit.register
def _save_all() -> None:
    """At exit, snapshot every large index that changed since its last snapshot."""
    for store, users in list(_mirrors.items()):
        if getattr(store, "snapshot_dir", None) is None:
            continue
        for user_id in list(users):
            try:
                save_snapshot(store, user_id)
            except Exception as exc:  # never fail an exit over derived data
                logger.warning("mneme: could not save the lexical index of %s: %s", user_id, exc)


def repair(index: LexicalIndex, space: str, key: str, value: dict[str, Any] | None) -> None:
    """Bring one memory of an index in line with what the store just returned (None: gone)."""
    if value is None:
        index.remove(space, key)
        return
    slot = index.slot_of.get((space, key))
    doc = index.docs[slot] if slot is not None else None
    if doc is None or doc.content_hash != str(value.get("content_hash") or ""):
        index.upsert(space, key, value)


__all__ = [
    "base_store",
    "forget_snapshot",
    "index_lock",
    "lexical_index",
    "loads",
    "repair",
    "restores",
    "save_snapshot",
    "space_namespace",
]
