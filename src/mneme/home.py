"""The data folder of an embedded deployment: Chroma store, SQLite checkpoints, one owner."""

from __future__ import annotations

import atexit
import fcntl
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.sqlite import SqliteSaver

from mneme.embeddings import embedding_dims, resolve_embeddings
from mneme.errors import HomeLockedError
from mneme.memory.usage import flush_uses
from mneme.store.chroma import ChromaStore

_homes: dict[Path, Home] = {}
_homes_lock = threading.Lock()


def resolve_home(home: str | Path | None = None) -> Path:
    """The home folder: the argument, else `$MNEME_HOME`, else `./.mneme`."""
    raw = home if home is not None else os.environ.get("MNEME_HOME") or ".mneme"
    return Path(raw).expanduser().resolve()


class Home:
    """An opened home folder: holds the lock, the store and the checkpoint database.

    Chroma's embedded client is not process-safe (two processes on one folder overwrite each
    other's writes and read stale vectors), so a home is owned by one process at a time; a
    second process gets `HomeLockedError` at once. Several processes share memory through a
    Chroma server instead (`chroma_url`, or `$MNEME_CHROMA_URL`); then no lock is taken on
    the store and only SQLite checkpoints (safe across processes) stay in the folder.
    """

    def __init__(self, path: Path, embeddings: Embeddings, chroma_url: str | None) -> None:
        self.path = path
        self.embeddings = embeddings
        self.chroma_url = chroma_url
        self._refs = 0
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._checkpointer: SqliteSaver | None = None
        path.mkdir(parents=True, exist_ok=True)
        index: Any = {"embed": embeddings, "dims": embedding_dims(embeddings), "fields": ["text"]}
        if chroma_url:
            self.store = ChromaStore.connect(chroma_url, index=index)
        else:
            self._acquire()
            try:
                self.store = ChromaStore.open(str(path / "chroma"), index=index)
            except Exception:
                self._release()
                raise

    def _acquire(self) -> None:
        lock_path = self.path / "lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise HomeLockedError(
                f"mneme: the home {self.path} is in use by process {owner}. Chroma's embedded "
                "store is single-process: stop that process, use another --home, or share "
                "memory through a Chroma server (MNEME_CHROMA_URL=http://host:port)."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def _release(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    @property
    def checkpoint_path(self) -> Path:
        """The SQLite database of thread checkpoints."""
        return self.path / "checkpoints.sqlite"

    def checkpointer(self) -> SqliteSaver:
        """The home's SQLite checkpointer (WAL mode, busy timeout), created once."""
        if self._checkpointer is None:
            conn = sqlite3.connect(self.checkpoint_path, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # deleted checkpoints are overwritten
            self._conn = conn
            self._checkpointer = SqliteSaver(conn)
            self._checkpointer.setup()
        return self._checkpointer

    def close(self) -> None:
        """Drop one reference; the last one closes the database and releases the lock."""
        with _homes_lock:
            self._refs -= 1
            if self._refs > 0:
                return
            _homes.pop(self.path, None)
        # Use counts are written by a background thread: write the queued ones while this
        # process still owns the folder (after the lock is released another process may).
        flush_uses(5.0)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._checkpointer = None
        self._release()


def open_home(
    home: str | Path | None = None,
    *,
    embeddings: str | Embeddings | None = None,
    chroma_url: str | None = None,
) -> Home:
    """Open a home folder, or share the one this process already opened.

    Args:
        home: The folder (default `$MNEME_HOME` or `./.mneme`).
        embeddings: Embeddings for the store (default: the bundled local model).
        chroma_url: A Chroma server to use instead of the embedded store.

    Returns:
        The opened home (reference counted: call `close` once per `open_home`).
    """
    path = resolve_home(home)
    url = chroma_url or os.environ.get("MNEME_CHROMA_URL") or None
    with _homes_lock:
        opened = _homes.get(path)
        if opened is None:
            opened = Home(path, resolve_embeddings(embeddings), url)
            _homes[path] = opened
        opened._refs += 1
        return opened


@atexit.register
def _close_all() -> None:
    for home in list(_homes.values()):
        home._refs = 1
        home.close()
