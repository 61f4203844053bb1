"""The stores LangGraph's own store test suites build, built as mneme's `ChromaStore` instead.

The test files beside this one are LangGraph's (MIT, see `LICENSE`), changed only where they
build a store: each store here is a `ChromaStore` on a fresh temporary folder (Chroma's embedded
client on disk, as `ChromaStore.open` makes it), with LangGraph's deterministic
`CharacterEmbeddings` as its index. The SQL stores' `setup()` (migrations) has nothing to do on
Chroma; the async stores' TTL methods are coroutines, so the async flavour wraps them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from langgraph.store.base import TTLConfig
from langgraph.store.memory import InMemoryStore

from mneme.store.chroma import ChromaStore
from tests.store_contract.embed_test_utils import CharacterEmbeddings

_open: list[ChromaStore] = []
_folder: list[Path] = []


_RAM = Path("/dev/shm")
"""Where the stores go when the machine has it: a RAM-backed folder is still Chroma's on-disk
client and code path, without a disk flush per write (5 ms instead of 35 ms a put here)."""


@pytest.fixture(autouse=True)
def _chroma_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stores made during a test live in a temporary folder of its own and are closed after it.

    (Not `tmp_path`: pytest-retry, which runs the suites' `flaky` tests again, loses it.)
    """
    ram = _RAM.is_dir() and os.access(_RAM, os.W_OK)
    folder = (
        Path(tempfile.mkdtemp(prefix="mneme-contract-", dir=_RAM))
        if ram
        else tmp_path_factory.mktemp("chroma")
    )
    _folder[:] = [folder]
    yield
    while _open:
        store = _open.pop()
        store.close()
    _folder.clear()
    if ram:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


class ContractStore(ChromaStore):
    """`ChromaStore` with the `setup()` that LangGraph's SQL stores have (no migrations here)."""

    def setup(self) -> None:
        """Nothing to migrate: Chroma collections are made on first write."""


class AsyncContractStore(ChromaStore):
    """`ChromaStore` with the coroutine flavour of the SQL stores' setup and TTL methods."""

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing to migrate."""

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await asyncio.to_thread(self._sweep)

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:  # type: ignore[override]
        return ChromaStore.start_ttl_sweeper(self, sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return await asyncio.to_thread(self._stop_sweeper, timeout)


def index_config(index: dict[str, Any] | None) -> dict[str, Any] | None:
    """A LangGraph index config (SQLite's `text_fields`, Postgres's `fields`) as `ChromaStore`'s."""
    if not index:
        return None
    out = {"dims": index["dims"], "embed": index["embed"]}
    fields = index.get("fields", index.get("text_fields"))
    if fields is not None:
        out["fields"] = fields
    return out


def new_store(
    index: dict[str, Any] | None = None,
    ttl: TTLConfig | None = None,
    *,
    cls: type[ChromaStore] = ContractStore,
) -> Any:
    """A `ChromaStore` (of `cls`) on a new folder under the test's temporary folder."""
    if os.environ.get("STORE_CONTRACT_BACKEND") == "inmemory":  # for comparison only, by hand
        return (_AsyncInMemory if cls is AsyncContractStore else _InMemory)(index=index_config(index))  # type: ignore[arg-type]
    folder = tempfile.mkdtemp(prefix="chroma-", dir=_folder[0] if _folder else None)
    store = cls.open(folder, index=index_config(index), ttl=ttl)  # type: ignore[arg-type]
    _open.append(store)
    return store


class ChromaAsSqlStore:
    """Stands where the suites build `SqliteStore` / `PostgresStore.from_conn_string(...)`."""

    @staticmethod
    @contextmanager
    def from_conn_string(
        conn_string: str, *, index: Any = None, ttl: TTLConfig | None = None, **_: Any
    ) -> Iterator[Any]:
        store = new_store(index, ttl)
        try:
            yield store
        finally:
            if isinstance(store, ChromaStore):
                store.stop_ttl_sweeper()


class ChromaAsAsyncSqlStore:
    """Stands where the suites build `AsyncSqliteStore` / `AsyncPostgresStore.from_conn_string(...)`."""

    @staticmethod
    @asynccontextmanager
    async def from_conn_string(
        conn_string: str, *, index: Any = None, ttl: TTLConfig | None = None, **_: Any
    ) -> AsyncIterator[Any]:
        store = new_store(index, ttl, cls=AsyncContractStore)
        try:
            yield store
        finally:
            if isinstance(store, ChromaStore):
                store._stop_sweeper(None)


class ChromaAsInMemoryStore(ContractStore):
    """Stands where the suites build `InMemoryStore(index=...)`: a `ChromaStore` on a new folder."""

    def __init__(self, *, index: Any = None) -> None:
        folder = tempfile.mkdtemp(prefix="chroma-", dir=_folder[0] if _folder else None)
        client = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
        super().__init__(client, index=index_config(index))
        _open.append(self)


class _InMemory(InMemoryStore):
    """LangGraph's own `InMemoryStore`, for running the suites against it by hand.

    `STORE_CONTRACT_BACKEND=inmemory pytest tests/store_contract` shows which tests LangGraph's
    reference store fails too (it has no TTL, for one).
    """

    def setup(self) -> None:
        """Nothing to migrate."""


class _AsyncInMemory(InMemoryStore):
    async def setup(self) -> None:
        """Nothing to migrate."""
