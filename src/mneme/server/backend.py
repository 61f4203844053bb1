"""Where the HTTP app finds memory: a home folder (`mneme serve`) or the LangGraph server's store."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from mneme.home import Home, open_home
from mneme.memory.aio import AsyncMemory
from mneme.memory.api import Memory


class Backend(ABC):
    """The memory behind the app, opened on first use and closed with the app."""

    def __init__(self) -> None:
        self._memory: AsyncMemory | None = None
        self._lock = asyncio.Lock()

    @abstractmethod
    async def _open(self) -> AsyncMemory:
        """Open the memory (called once)."""

    async def memory(self) -> AsyncMemory:
        """The memory, opened on first use."""
        if self._memory is None:
            async with self._lock:
                if self._memory is None:
                    self._memory = await self._open()
        return self._memory

    @abstractmethod
    def list_sessions(self, user_id: str) -> list[dict[str, Any]]:
        """A user's sessions as JSON-ready dicts, most recent first (runs in a worker thread)."""

    async def sessions(self, user_id: str) -> list[dict[str, Any]]:
        """A user's sessions, in the user's order of operations."""
        mem = await self.memory()
        return await mem.call(user_id, lambda: self.list_sessions(user_id), write=False)

    async def close(self) -> None:
        """Release what `memory` opened."""
        if self._memory is not None:
            memory, self._memory = self._memory, None
            await asyncio.get_running_loop().run_in_executor(None, memory.close)

    @property
    def name(self) -> str:
        """What the memory lives in, for `/healthz` and logs."""
        return type(self).__name__


class HomeBackend(Backend):
    """The memory and sessions of a home: a folder (embedded Chroma, or a Chroma server) or a Postgres.

    An embedded home is owned by one process: while `mneme serve` runs on it, other processes
    (the CLI) get `HomeLockedError`; share memory through a Chroma server (`chroma_url` or
    `$MNEME_CHROMA_URL`) instead. In the same process, the home is shared (reference counted).
    """

    def __init__(
        self, home: str | Path | None = None, *, chroma_url: str | None = None, postgres: str | None = None
    ) -> None:
        """Choose the home.

        Args:
            home: The data folder (default `$MNEME_HOME` or `./.mneme`).
            chroma_url: A Chroma server to use instead of the embedded store.
            postgres: A Postgres (`postgresql://...`) to use instead of the home folder.
        """
        super().__init__()
        self.home = home
        self.chroma_url = chroma_url
        self.postgres = postgres
        self._home: Home | None = None

    def open_now(self) -> None:
        """Open the home at once (blocking), so a home in use fails before the server starts.

        Raises:
            HomeLockedError: if another process owns the home.
            ConfigError: if the Postgres cannot be reached or set up.
        """
        if self._home is None:
            self._home = open_home(self.home, chroma_url=self.chroma_url, postgres=self.postgres)

    def close_now(self) -> None:
        """Release a home opened by `open_now` that no memory uses yet (blocking)."""
        if self._memory is None and self._home is not None:
            self._home.close()
            self._home = None

    async def _open(self) -> AsyncMemory:
        await asyncio.get_running_loop().run_in_executor(None, self.open_now)
        assert self._home is not None
        return AsyncMemory(Memory(self._home.store, owner=self._home))

    async def close(self) -> None:
        """Release the home (the memory owns it once opened)."""
        if self._memory is None and self._home is not None:
            self._home.close()
        self._home = None
        await super().close()

    def list_sessions(self, user_id: str) -> list[dict[str, Any]]:
        """Sessions from the home's checkpoints and session records."""
        from mneme.sessions import Sessions

        assert self._home is not None
        sessions = Sessions(self._home.checkpointer(), self._home.store)
        return [s.model_dump(mode="json") for s in sessions.list(user_id=user_id)]


class LangGraphServerBackend(Backend):
    """The LangGraph server's own store: the one its graph reaches through `runtime.store`.

    Inside `langgraph dev` or a LangGraph deployment, `langgraph_api.store.get_store()` returns
    the store the server gives its runs (in-memory in `langgraph dev`, Postgres in a
    deployment, or a custom `"store": {"path": ...}`), so the routes show exactly what the
    graph remembered, on every backend the server supports.
    """

    async def _open(self) -> AsyncMemory:
        from langgraph_api.store import get_store

        store: BaseStore = await get_store()
        return AsyncMemory(Memory(store))

    async def close(self) -> None:
        """The server owns its store: only stop the worker threads."""
        if self._memory is not None:
            memory, self._memory = self._memory, None
            await asyncio.get_running_loop().run_in_executor(None, memory._pool.shutdown)

    def list_sessions(self, user_id: str) -> list[dict[str, Any]]:
        """Sessions from the session records the graph keeps in the server's store."""
        from langgraph_runtime.checkpoint import Checkpointer

        from mneme.sessions import Sessions

        assert self._memory is not None
        sessions = Sessions(Checkpointer(), self._memory.memory.store)
        return [s.model_dump(mode="json") for s in sessions.list(user_id=user_id)]


__all__ = ["Backend", "HomeBackend", "LangGraphServerBackend"]
