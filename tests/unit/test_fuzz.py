"""Hostile input through every door: no 5xx, no exception but a `MnemeError`, nothing changed on error.

Hypothesis draws calls of every `Memory` method, every REST route and every MCP tool with
valid and hostile arguments (`tests/hostile.py`); a broken call fails the test with the
smallest example hypothesis finds. `benchmarks/fuzz.py` runs the same doors with many more
examples and reports the counts in docs/benchmarks.md ("Hostile input", "Fuzzing").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langgraph.checkpoint.memory import InMemorySaver

from mneme.memory.aio import AsyncMemory
from mneme.memory.api import Memory
from mneme.server.app import create_app
from mneme.server.auth import KeyRing
from mneme.server.backend import Backend
from mneme.server.ratelimit import RateLimiter
from mneme.sessions import Sessions
from mneme.store.chroma import ChromaStore
from tests import hostile
from tests.fakes import HashEmbeddings
from tests.unit.test_retrieval_tools import run as run_tool

EXAMPLES = int(os.environ.get("MNEME_FUZZ_EXAMPLES", "60"))
"""Examples per door group in `make test` (x2 for `Memory` and REST; the benchmark runs many more)."""
KEY = "fuzz-operator-key-0001"


def seeded(path: Path) -> tuple[Memory, list[str], dict[str, Any]]:
    """A memory on Chroma with a few memories of ann and bob; their ids and ann's export."""
    emb = HashEmbeddings()
    store = ChromaStore.open(str(path), index={"embed": emb, "dims": emb.dims, "fields": ["text"]})
    memory = Memory(store)
    ids = [
        memory.save("I like green tea", user_id="ann").id,
        memory.save("我住在上海", user_id="ann", kind="profile", subject="city", value="上海").id,
        memory.add([{"role": "user", "content": "booked a table for two"}], user_id="ann", infer=False)[0].id,
        memory.save("bob likes coffee", user_id="bob").id,
    ]
    memory.update(ids[0], "I like green tea a lot", user_id="ann")
    return memory, [i for i in ids if i] + ["no-such-id"], memory.export(user_id="ann")


class StoreBackend(Backend):
    """The app's backend over a memory the test built."""

    def __init__(self, memory: Any) -> None:
        super().__init__()
        self._given = memory

    async def _open(self) -> AsyncMemory:
        return AsyncMemory(self._given)

    def list_sessions(self, user_id: str) -> list[dict[str, Any]]:
        sessions = Sessions(InMemorySaver(), self._given.store)
        return [s.model_dump(mode="json") for s in sessions.list(user_id=user_id)]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Memory, list[str], dict[str, Any]]]:
    yield seeded(tmp_path / "chroma")


def report(fuzz: hostile.Fuzz) -> None:
    for door, counts in fuzz.report().items():
        print(door, counts)  # shown with `pytest -s`


def test_every_memory_method_refuses_hostile_input_cleanly(
    world: tuple[Memory, list[str], dict[str, Any]],
) -> None:
    memory, ids, export = world
    fuzz = hostile.Fuzz()
    hostile.fuzz_memory(fuzz, memory, EXAMPLES * 2, ids, export)
    report(fuzz)
    assert all(t.clean for t in fuzz.tallies.values())
    assert len(fuzz.tallies) >= 15  # nearly every method was reached in this run
    assert sum(t.refused for t in fuzz.tallies.values()) > EXAMPLES // 2  # hostile input was refused


def test_every_rest_route_answers_hostile_requests_with_4xx(
    world: tuple[Memory, list[str], dict[str, Any]],
) -> None:
    memory, ids, export = world
    seen: list[BaseException] = []
    app = create_app(
        StoreBackend(hostile.Watched(memory, seen)), keys=KeyRing({KEY: None}), rate_limit=RateLimiter(0, 1)
    )
    fuzz = hostile.Fuzz()
    with TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {KEY}"}) as client:
        hostile.fuzz_rest(fuzz, client, memory.store, seen, EXAMPLES * 2, ids, export)
    report(fuzz)
    assert all(t.clean for t in fuzz.tallies.values())
    assert len(fuzz.tallies) >= 10


def test_every_mcp_tool_answers_hostile_arguments_with_a_tool_error(
    world: tuple[Memory, list[str], dict[str, Any]],
) -> None:
    memory, ids, _ = world
    fuzz = hostile.Fuzz()
    hostile.fuzz_mcp(fuzz, memory, memory.store, EXAMPLES // 2, ids)
    report(fuzz)
    assert all(t.clean for t in fuzz.tallies.values())
    assert {"MCP search_memory", "MCP save_memory", "MCP forget_memory", "MCP list_memories"} <= set(
        fuzz.tallies
    )


@pytest.mark.parametrize("query", ["bad \ud800", "nul \x00", "x" * 10_001])
def test_the_search_tool_answers_a_bad_query_with_an_error_reply(
    world: tuple[Memory, list[str], dict[str, Any]], query: str
) -> None:
    reply, _ = run_tool(world[0].store, "ann", "search_memory", {"query": query})
    assert "error" in reply and "mneme:" in reply["error"]
