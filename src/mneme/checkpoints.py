"""mneme's checkpointers: `SqliteSaver` with short channel versions, and a turn lock across processes."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from mneme.store.locks import lock_key

log = logging.getLogger("mneme.checkpoints")


class CompactSqliteSaver(SqliteSaver):
    """`SqliteSaver` whose channel versions are 12 digits instead of 32 and a random fraction.

    Every checkpoint lists the version of each channel and the versions each node has seen
    (about 25 of them in mneme's graph, ~7 checkpoints a turn): LangGraph's
    `"00000000000000000000000000000017.0.5798670351945979"` costs 52 bytes each, about
    7 KB of a turn's checkpoints. Versions only need to increase (see
    `BaseCheckpointSaver.get_next_version`); a shorter zero-padded one still sorts after
    every longer one an existing thread holds, so old threads go on unchanged.
    """

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The version after `current` (any format a `SqliteSaver` wrote), as 12 digits."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:012d}"


class SharedTurnLock:
    """A lock on one thread that every process sharing the checkpointer sees.

    Processes that share a checkpointer (several app workers on one Postgres, or on one SQLite
    file) could each start a turn of the same thread from the same checkpoint: the later one to
    write wins, and the other's message is gone from the thread. The turn locks of `MnemeGraph`
    take this lock after the process's own:

    - `PostgresSaver`: a Postgres advisory lock, on one connection per process kept for these
      locks alone (a turn never holds a connection of the pool while it waits). Postgres releases
      it if the process dies, and also if that connection breaks: the next lock call opens a new
      one and takes the process's locks again, and logs an error for a lock another process took
      in the meantime, or one whose connection broke while its turn ran.
    - `SqliteSaver` on a file: a POSIX record lock on one byte of `<database>.turns`, chosen by
      the thread id; the system releases it if the process dies.
    - Any other checkpointer, or SQLite in memory: nothing (one process only).

    A waiter polls (`POLL_S`): a turn lasts far longer than a poll, and a waiting coroutine never
    blocks its event loop.
    """

    POLL_S = 0.02

    def __init__(self, try_lock: Callable[[str], bool], unlock: Callable[[str], None]) -> None:
        """Wrap two calls: take the lock of a thread if free (never waits), and release it."""
        self._try = try_lock
        self._unlock = unlock

    @contextmanager
    def hold(self, thread: str) -> Iterator[None]:
        """Hold the lock of `thread` for the block, waiting for another process's turn."""
        while not self._try(thread):
            time.sleep(self.POLL_S)
        try:
            yield
        finally:
            self._unlock(thread)

    @asynccontextmanager
    async def ahold(self, thread: str) -> AsyncIterator[None]:
        """`hold` for a coroutine: the lock calls run off the event loop."""
        while not await asyncio.to_thread(self._try, thread):
            await asyncio.sleep(self.POLL_S)
        try:
            yield
        finally:
            await asyncio.to_thread(self._unlock, thread)


_shared: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], SharedTurnLock | None] = (
    weakref.WeakKeyDictionary()
)
_files: dict[str, int] = {}  # lock file -> the process's one descriptor of it
_shared_guard = threading.Lock()


def shared_turn_lock(saver: BaseCheckpointSaver[Any]) -> SharedTurnLock | None:
    """The cross-process turn lock of a checkpointer, made once per checkpointer (None: none needed)."""
    with _shared_guard:
        if saver not in _shared:
            _shared[saver] = _make_shared(saver)
        return _shared[saver]


def _make_shared(saver: BaseCheckpointSaver[Any]) -> SharedTurnLock | None:
    if isinstance(saver, SqliteSaver):
        row = saver.conn.execute("PRAGMA database_list").fetchone()
        path = row[2] if row else ""
        return _file_turn_lock(Path(path + ".turns")) if path else None
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # pragma: no cover - the Postgres extra is not installed
        return None
    if isinstance(saver, PostgresSaver):
        return _postgres_turn_lock(saver)
    return None


def _key(thread: str) -> int:
    """The lock key of a thread's turns (`store.locks.lock_key`)."""
    return lock_key(f"turn:{thread}")


def _file_turn_lock(path: Path) -> SharedTurnLock:
    # One descriptor per file for the process's life: closing any descriptor of a file drops
    # every record lock the process holds on it.
    key = str(path.resolve())
    if key not in _files:
        _files[key] = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fd = _files[key]

    def offset(thread: str) -> int:
        return _key(thread) % (1 << 40)

    def try_lock(thread: str) -> bool:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset(thread))
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise
        return True

    def unlock(thread: str) -> None:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset(thread))

    return SharedTurnLock(try_lock, unlock)


def _postgres_turn_lock(saver: Any) -> SharedTurnLock:
    import psycopg
    from psycopg_pool import ConnectionPool

    source = saver.conn
    pooled = isinstance(source, ConnectionPool)
    # a pool: a connection of our own; one connection: its session, between the saver's calls
    guard = threading.Lock() if pooled else saver.lock
    conn: Any = None if pooled else source
    held: set[str] = set()  # the threads whose locks this process holds

    def connection() -> Any:
        nonlocal conn
        if conn is None or conn.closed:
            kwargs = {k: v for k, v in (source.kwargs or {}).items() if k != "row_factory"}
            conn = psycopg.connect(source.conninfo, **{**kwargs, "autocommit": True})
        return conn

    def close() -> None:
        if pooled and conn is not None:
            conn.close()

    weakref.finalize(saver, close)

    def value(sql: str, thread: str) -> bool:
        row = connection().execute(sql, (_key(thread),)).fetchone()
        return bool(row[0] if isinstance(row, tuple) else next(iter(row.values())))

    def reconnect() -> None:
        # The connection broke, and Postgres released every lock it held: take them again on a
        # new one. A lock another process took meanwhile is lost; say so.
        nonlocal conn
        if conn is not None and not conn.closed:
            conn.close()
        conn = None
        for thread in sorted(held):
            if value("SELECT pg_try_advisory_lock(%s)", thread):
                log.warning(
                    "mneme: the turn lock of thread %r was taken again after its connection broke", thread
                )
            else:
                held.discard(thread)
                log.error(
                    "mneme: the turn lock of thread %r was lost when its connection broke; "
                    "another process may be running a turn of the same thread",
                    thread,
                )

    def run(sql: str, thread: str) -> bool:
        try:
            return value(sql, thread)
        except psycopg.OperationalError:
            if not pooled:  # the saver's own connection: nothing of ours to mend
                raise
            reconnect()
            return value(sql, thread)

    def try_lock(thread: str) -> bool:
        with guard:
            taken = run("SELECT pg_try_advisory_lock(%s)", thread)
            if taken:
                held.add(thread)
            return taken

    def unlock(thread: str) -> None:
        with guard:
            if thread not in held:  # lost with a broken connection (logged then)
                return
            held.discard(thread)
            try:
                value("SELECT pg_advisory_unlock(%s)", thread)
            except psycopg.OperationalError:
                if not pooled:
                    raise
                log.error(
                    "mneme: the connection holding the turn lock of thread %r broke during the turn; "
                    "another process may have run a turn of the same thread meanwhile",
                    thread,
                )
                reconnect()  # the locks of the process's other turns

    return SharedTurnLock(try_lock, unlock)
