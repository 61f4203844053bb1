"""Named locks over a store: within the process, and across processes where the store is shared.

Reconciling a user's memories (read what exists, then write) and rewriting a user's revision log
must not interleave with another writer of the same user. Inside one process a `threading.Lock`
is enough; processes that share a store also need a lock they all see:

- a Postgres store (`exclusive`): an advisory lock, released by Postgres if the process dies;
- a Chroma server (`ChromaStore.connect`): a file lock (`flock`) per name, in a folder per
  server URL under `$MNEME_LOCK_DIR` (default: the system's temporary folder), so processes on
  one machine exclude each other; processes on several machines need the Postgres store;
- an embedded store (a home folder, owned by one process) or any other store: the in-process
  lock alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

from langgraph.store.base import BaseStore

_locks: dict[tuple[int, str], threading.Lock] = {}
_guard = threading.Lock()


def lock_key(name: str) -> int:
    """The signed 64-bit key of the lock named `name` (a Postgres advisory lock, a byte offset)."""
    digest = hashlib.sha256(f"mneme:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _base(store: BaseStore) -> BaseStore:
    """The store under LangGraph's wrappers (as `mirror.base_store`)."""
    for _ in range(4):
        inner = getattr(store, "_store", None)
        if not isinstance(inner, BaseStore):
            break
        store = inner
    return store


def _thread_lock(store: BaseStore, name: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((id(store), name), threading.Lock())


def lock_dir(url: str) -> Path:
    """The folder of the file locks of processes sharing the Chroma server at `url`."""
    root = Path(os.environ.get("MNEME_LOCK_DIR") or Path(tempfile.gettempdir()) / "mneme-locks")
    return root / hashlib.sha256(url.encode()).hexdigest()[:20]


@contextmanager
def _file_lock(folder: Path, name: str) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _shared_lock(store: BaseStore, name: str) -> AbstractContextManager[None]:
    exclusive = cast(
        "Callable[[str], AbstractContextManager[None]] | None", getattr(store, "exclusive", None)
    )
    if callable(exclusive):
        return exclusive(name)
    url: Any = getattr(store, "url", None)  # ChromaStore.connect: a server other processes share
    if isinstance(url, str) and url:
        return _file_lock(lock_dir(url), name)
    return contextlib.nullcontext()


@contextmanager
def exclusive(store: BaseStore, name: str) -> Iterator[None]:
    """Hold the lock `name` of a store: this process's threads and the store's other processes wait.

    Args:
        store: The store (LangGraph's wrappers are looked through).
        name: What is locked, e.g. `user:<id>` or `revision:<label>`.
    """
    base = _base(store)
    with _thread_lock(base, name), _shared_lock(base, name):
        yield


__all__ = ["exclusive", "lock_dir", "lock_key"]
