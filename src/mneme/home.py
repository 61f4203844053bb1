"""Where a deployment keeps its data: a home folder (Chroma, SQLite checkpoints) or a Postgres."""

from __future__ import annotations

import atexit
import fcntl
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from mneme.checkpoints import CompactSqliteSaver
from mneme.embeddings import embedding_dims, resolve_embeddings
from mneme.errors import ConfigError, HomeLockedError, InputError
from mneme.memory.usage import flush_uses
from mneme.shutdown import stopping
from mneme.store.chroma import ChromaStore
from mneme.store.split import SplitStore
from mneme.validate import clean_text

_homes: dict[Path | str, Home] = {}
_homes_lock = threading.Lock()


def resolve_home(home: str | Path | None = None) -> Path:
    """The home folder: the argument, else `$MNEME_HOME`, else `./.mneme`.

    Raises:
        InputError: if it is not a path (a string or a `Path`) or holds a NUL character.
    """
    raw = home if home is not None else os.environ.get("MNEME_HOME") or ".mneme"
    if not isinstance(raw, str | os.PathLike) or not isinstance(os.fspath(raw), str):
        raise InputError(f"mneme: the home must be a folder path, not {type(raw).__name__}")
    clean_text(os.fspath(raw), "the home folder", limit=4096)
    return Path(raw).expanduser().resolve()


class Home:
    """An opened home: holds the lock, the store and the checkpoint database.

    Chroma's embedded client is not process-safe (two processes on one folder overwrite each
    other's writes and read stale vectors), so a home is owned by one process at a time; a
    second process gets `HomeLockedError` at once. Its memory is a `SplitStore`: memories and
    vectors in Chroma, plain rows (history, expiry, revision logs...) in `memory.sqlite`, so a
    write costs one Chroma call instead of four. Several processes share memory through a
    Chroma server instead (`chroma_url`, or `$MNEME_CHROMA_URL`); then no lock is taken on
    the store and only SQLite checkpoints (safe across processes) stay in the folder. With a
    Postgres (`postgres`, or `$MNEME_POSTGRES_URL`), threads and memory both live there
    (`PostgresSaver`, and LangGraph's `PostgresStore` with pgvector) and the folder is unused.
    """

    def __init__(
        self,
        path: Path,
        embeddings: Embeddings,
        chroma_url: str | None,
        postgres_url: str | None = None,
    ) -> None:
        self.path = path
        self.embeddings = embeddings
        self.chroma_url = chroma_url
        self.postgres_url = postgres_url
        self._refs = 0
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._checkpointer: BaseCheckpointSaver[Any] | None = None
        self._pool: Any = None
        index: Any = {"embed": embeddings, "dims": embedding_dims(embeddings), "fields": ["text"]}
        self.store: BaseStore
        if postgres_url:
            from mneme.store.postgres import open_postgres

            self._pool, self.store = open_postgres(postgres_url, index)
            return
        path.mkdir(parents=True, exist_ok=True)
        if chroma_url:
            self.store = ChromaStore.connect(chroma_url, index=index)
        else:
            self._acquire()
            try:
                self.store = SplitStore.open(path, index=index)
            except Exception:
                self._release()
                raise

    def _acquire(self) -> None:
        """Take the home: an OS lock (`flock`) on the folder itself, held while it is open.

        The lock is on the folder, not on a file in it, so deleting the `lock` file (which
        only says who owns the home) cannot let a second process in; the OS drops the lock
        when the owner exits, however it exits.
        """
        dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(dir_fd)
            try:
                owner = (self.path / "lock").read_text(errors="replace").strip()[:64]
            except OSError:
                owner = ""
            raise HomeLockedError(
                f"mneme: the home {self.path} is in use by process {owner or 'another process'}. "
                "Chroma's embedded store is single-process: stop that process, use another --home, "
                "or share memory through a Chroma server (MNEME_CHROMA_URL=http://host:port)."
            ) from None
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        self._lock_fd = dir_fd

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

    def checkpointer(self) -> BaseCheckpointSaver[Any]:
        """The home's checkpointer, created once: SQLite (WAL mode, busy timeout) or Postgres."""
        if self._checkpointer is None and self._pool is not None:
            from mneme.store.postgres import postgres_saver

            self._checkpointer = postgres_saver(self._pool)
        if self._checkpointer is None:
            conn = sqlite3.connect(self.checkpoint_path, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # deleted checkpoints are overwritten
            self._conn = conn
            saver = CompactSqliteSaver(conn)
            saver.setup()
            self._checkpointer = saver
        return self._checkpointer

    def close(self) -> None:
        """Drop one reference; the last one closes the database and releases the lock."""
        with _homes_lock:
            self._refs -= 1
            if self._refs > 0:
                return
            _homes.pop(self.postgres_url or self.path, None)
        # Use counts are written by a background thread: write the queued ones while this
        # process still owns the folder (after the lock is released another process may).
        flush_uses(1.0 if stopping() else 5.0)
        # Deferred extractions still running need the store: they are persisted, so what does
        # not finish in time runs again from the queue at the next start.
        from mneme.memory.worker import worker

        worker().flush(1.0 if stopping() else 5.0)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._checkpointer = None
        close_store = getattr(self.store, "close", None)
        if callable(close_store):
            close_store()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
            self._checkpointer = None
        self._release()


def resolve_backends(chroma_url: str | None, postgres: str | None) -> tuple[str | None, str | None]:
    """(Chroma server URL, Postgres URL) from the arguments, else `$MNEME_CHROMA_URL` / `$MNEME_POSTGRES_URL`.

    Raises:
        ConfigError: if both a Chroma server and a Postgres are chosen.
    """
    if chroma_url and postgres:
        raise ConfigError(
            "mneme: choose one back end: a Postgres (--postgres / MNEME_POSTGRES_URL) keeps threads "
            "and memory, a Chroma server (--chroma-url / MNEME_CHROMA_URL) keeps memory only"
        )
    if postgres:
        return None, postgres
    if chroma_url:
        return chroma_url, None
    env_chroma = os.environ.get("MNEME_CHROMA_URL") or None
    env_pg = os.environ.get("MNEME_POSTGRES_URL") or None
    if env_chroma and env_pg:
        raise ConfigError("mneme: both MNEME_POSTGRES_URL and MNEME_CHROMA_URL are set: unset one")
    return env_chroma, env_pg


def open_home(
    home: str | Path | None = None,
    *,
    embeddings: str | Embeddings | None = None,
    chroma_url: str | None = None,
    postgres: str | None = None,
) -> Home:
    """Open a home, or share the one this process already opened.

    Args:
        home: The folder (default `$MNEME_HOME` or `./.mneme`); unused with a Postgres.
        embeddings: Embeddings for the store (default: the bundled local model).
        chroma_url: A Chroma server to use instead of the embedded store.
        postgres: A Postgres URL (`postgresql://...`): threads and memory live there; also
            read from `$MNEME_POSTGRES_URL`.

    Returns:
        The opened home (reference counted: call `close` once per `open_home`).

    Raises:
        ConfigError: if the Postgres cannot be reached or set up (the message names the setting).
        HomeLockedError: if another process owns the embedded home folder.
    """
    path = resolve_home(home)
    url, pg = resolve_backends(chroma_url, postgres)
    key: Path | str = pg if pg else path
    with _homes_lock:
        opened = _homes.get(key)
        if opened is None:
            opened = Home(path, resolve_embeddings(embeddings), url, pg)
            _homes[key] = opened
        opened._refs += 1
        return opened


def home_of(store: Any) -> Path | None:
    """The folder of the open home whose store this is, if any (a store given to `create_agent`)."""
    with _homes_lock:
        return next((h.path for h in _homes.values() if h.store is store), None)


@atexit.register
def _close_all() -> None:
    for home in list(_homes.values()):
        home._refs = 1
        home.close()
