"""`AsyncMemory`: the `Memory` API for event loops, run in worker threads with per-user ordering."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

from mneme.memory.api import Memory, MessagesOrText
from mneme.memory.record import HistoryEntry, Kind, MemoryChange, MemoryHit, MemoryRecord, check_user
from mneme.memory.usermodel.view import UserModelView
from mneme.shutdown import stopping

T = TypeVar("T")

DEFAULT_WORKERS = 8
"""Worker threads per `AsyncMemory`: enough to overlap store I/O and embedding for a server."""
STOP_WAIT_S = 2.0
"""When the process is stopping, `close` waits this long at most for calls still running."""
PER_USER = 2
"""Worker threads one user's calls may hold at once: the others stay free for other users, so a
user who sends many requests at once waits for their own, not everyone else."""


class _UserQueue:
    """Arrival order of one user's operations: reads run together, a write runs alone.

    A read waits for the writes that arrived before it (so it sees them); a write waits for
    every read and write that arrived before it. Reads that arrive together run in parallel.
    """

    def __init__(self) -> None:
        self.last_write: asyncio.Future[None] | None = None
        self.reads: set[asyncio.Future[None]] = set()
        self.slots = asyncio.Semaphore(PER_USER)

    @property
    def idle(self) -> bool:
        return self.last_write is None and not self.reads


class AsyncMemory:
    """Async front of `Memory` for servers: never blocks the event loop.

    Every call runs the synchronous layer (store and embedding model) in a worker thread. Calls
    about one user keep their arrival order: a search that arrives after an add sees it, and
    two writes never interleave. Calls about different users run in parallel, and one user's
    calls hold at most `PER_USER` of the worker threads, so one busy user never stalls the rest.

    Example:
        >>> mem = AsyncMemory(Memory.open())
        >>> await mem.add("我不吃辣", user_id="alice")
        >>> await mem.search("她能吃辣吗", user_id="alice")
    """

    def __init__(self, memory: Memory, *, workers: int = DEFAULT_WORKERS) -> None:
        """Wrap a synchronous memory.

        Args:
            memory: The memory to run in threads (it owns the store).
            workers: Size of the thread pool the calls run in.
        """
        self.memory = memory
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mneme-memory")
        self._inflight: set[Future[Any]] = set()
        self._queues: dict[str, _UserQueue] = {}

    @classmethod
    def open(
        cls, home: str | Path | None = None, *, workers: int = DEFAULT_WORKERS, **kwargs: Any
    ) -> AsyncMemory:
        """Open the memory of a home folder (arguments as in `Memory.open`)."""
        return cls(Memory.open(home, **kwargs), workers=workers)

    def close(self) -> None:
        """Wait for running calls, then release the home folder.

        While the process is stopping (`mneme.shutdown`), calls not started yet are cancelled,
        and running ones (which end at their next bounded step) are waited for `STOP_WAIT_S` at
        most: what they did not finish was not acknowledged, and every write is idempotent.
        """
        if stopping():
            self._pool.shutdown(wait=False, cancel_futures=True)
            wait(list(self._inflight), timeout=STOP_WAIT_S)
        else:
            self._pool.shutdown(wait=True)
        self.memory.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- scheduling --------------------------------------------------------------------------

    def _queue(self, user_id: str) -> _UserQueue:
        check_user(user_id)
        return self._queues.setdefault(user_id, _UserQueue())

    def _release(self, user_id: str, done: asyncio.Future[None], queue: _UserQueue) -> None:
        if not done.done():
            done.set_result(None)
        queue.reads.discard(done)
        if queue.last_write is done:
            queue.last_write = None
        if queue.idle and self._queues.get(user_id) is queue:
            del self._queues[user_id]

    def _submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """Run a call in the pool, kept in `_inflight` until it ends."""
        future = self._pool.submit(call)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return asyncio.wrap_future(future)

    async def _run(self, fn: Callable[[], T], done: Callable[[], None], slots: asyncio.Semaphore) -> T:
        try:
            await slots.acquire()
        except BaseException:
            done()
            raise
        call = functools.partial(contextvars.copy_context().run, fn)
        task = self._submit(call)

        def finished(_: object = None) -> None:
            slots.release()
            done()

        try:
            return await asyncio.shield(task)
        finally:
            # A cancelled caller must not let the next call overtake a thread still running.
            if task.done():
                finished()
            else:
                task.add_done_callback(finished)

    async def _read(self, user_id: str, fn: Callable[[], T]) -> T:
        queue = self._queue(user_id)
        before = queue.last_write
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.reads.add(done)
        release = functools.partial(self._release, user_id, done, queue)
        try:
            if before is not None:
                await asyncio.shield(before)
        except BaseException:
            release()
            raise
        return await self._run(fn, release, queue.slots)

    async def _write(self, user_id: str, fn: Callable[[], T]) -> T:
        queue = self._queue(user_id)
        before = [f for f in (queue.last_write, *queue.reads) if f is not None]
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.last_write = done
        release = functools.partial(self._release, user_id, done, queue)
        if before:
            waiting = asyncio.gather(*before)
            try:
                await asyncio.shield(waiting)
            except BaseException:
                # Later calls are chained on this write: let them go once what came before is done.
                waiting.add_done_callback(lambda _: release())
                raise
        return await self._run(fn, release, queue.slots)

    async def _free(self, fn: Callable[[], T]) -> T:
        call = functools.partial(contextvars.copy_context().run, fn)
        return await self._submit(call)

    # -- writes ------------------------------------------------------------------------------

    async def add(
        self, messages_or_text: MessagesOrText, *, user_id: str, **options: Any
    ) -> list[MemoryChange]:
        """`Memory.add` (same options: session_id, metadata, infer, agent_id)."""
        return await self._write(
            user_id, functools.partial(self.memory.add, messages_or_text, user_id=user_id, **options)
        )

    async def save(self, text: str, *, user_id: str, **options: Any) -> MemoryChange:
        """`Memory.save` (same options: kind, subject, value, importance, metadata, ...)."""
        return await self._write(
            user_id, functools.partial(self.memory.save, text, user_id=user_id, **options)
        )

    async def update(self, memory_id: str, text: str, *, user_id: str, **options: Any) -> MemoryChange:
        """`Memory.update`."""
        return await self._write(
            user_id, functools.partial(self.memory.update, memory_id, text, user_id=user_id, **options)
        )

    async def delete(self, memory_id: str, *, user_id: str, **options: Any) -> MemoryChange:
        """`Memory.delete`."""
        return await self._write(
            user_id, functools.partial(self.memory.delete, memory_id, user_id=user_id, **options)
        )

    async def delete_all(self, *, user_id: str, **options: Any) -> int:
        """`Memory.delete_all`."""
        return await self._write(
            user_id, functools.partial(self.memory.delete_all, user_id=user_id, **options)
        )

    async def import_data(self, data: dict[str, Any], *, user_id: str, **options: Any) -> list[MemoryChange]:
        """`Memory.import_data`."""
        return await self._write(
            user_id, functools.partial(self.memory.import_data, data, user_id=user_id, **options)
        )

    # -- reads -------------------------------------------------------------------------------

    async def search(self, query: str, *, user_id: str, **options: Any) -> list[MemoryHit]:
        """`Memory.search` (same options: limit, kinds, include_history, filters, ...)."""
        return await self._read(
            user_id, functools.partial(self.memory.search, query, user_id=user_id, **options)
        )

    async def get(self, memory_id: str, *, user_id: str) -> MemoryRecord:
        """`Memory.get`."""
        return await self._read(user_id, functools.partial(self.memory.get, memory_id, user_id=user_id))

    async def get_all(self, *, user_id: str, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """`Memory.get_all`."""
        return await self._read(user_id, functools.partial(self.memory.get_all, user_id=user_id, kinds=kinds))

    async def history(self, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
        """`Memory.history`."""
        return await self._read(user_id, functools.partial(self.memory.history, memory_id, user_id=user_id))

    async def user_model(self, *, user_id: str) -> UserModelView:
        """`Memory.user_model`."""
        return await self._read(user_id, functools.partial(self.memory.user_model, user_id=user_id))

    async def export(self, *, user_id: str) -> dict[str, Any]:
        """`Memory.export`."""
        return await self._read(user_id, functools.partial(self.memory.export, user_id=user_id))

    async def users(self) -> list[str]:
        """`Memory.users`."""
        return await self._free(self.memory.users)

    async def call(self, user_id: str, fn: Callable[[], T], *, write: bool) -> T:
        """Run any other synchronous work about one user in the same order as the calls above.

        Args:
            user_id: The user the work is about.
            fn: The work (runs in a worker thread).
            write: Whether it changes the user's data (runs alone) or only reads.
        """
        return await (self._write(user_id, fn) if write else self._read(user_id, fn))


__all__ = ["AsyncMemory"]
