"""Concurrent edits and deletes of one memory keep one order, through the API, the tools and REST.

Two threads race on one id, many rounds: a deleted memory never comes back, and every change
that succeeded has its history row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mneme.errors import MnemeError, NotFoundError
from mneme.memory.api import Memory
from mneme.server.app import create_app
from mneme.server.auth import KeyRing
from mneme.server.ratelimit import RateLimiter
from mneme.store.chroma import ChromaStore
from tests.fakes import HashEmbeddings
from tests.unit.test_fuzz import StoreBackend
from tests.unit.test_retrieval_tools import run as run_tool

ROUNDS = 20


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run calls at once (released together); each one's result, or the MnemeError it raised."""
    barrier = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def go(i: int) -> None:
        barrier.wait()
        try:
            out[i] = calls[i]()
        except MnemeError as exc:
            out[i] = exc

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return out


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    emb = HashEmbeddings()
    return Memory(
        ChromaStore.open(str(tmp_path / "c"), index={"embed": emb, "dims": emb.dims, "fields": ["text"]})
    )


def operations(memory: Memory, memory_id: str, user: str = "ann") -> list[str]:
    return [h.operation for h in memory.history(memory_id, user_id=user)]


def test_update_against_delete_never_brings_a_deleted_memory_back(memory: Memory) -> None:
    for i in range(ROUNDS):
        mid = memory.save(f"I like tea number {i}", user_id="ann").id
        assert mid
        updated, deleted = race(
            lambda mid=mid, i=i: memory.update(mid, f"I like coffee number {i}", user_id="ann"),
            lambda mid=mid: memory.delete(mid, user_id="ann"),
        )
        assert not isinstance(deleted, MnemeError)  # a delete of an existing memory always works
        with pytest.raises(NotFoundError):
            memory.get(mid, user_id="ann")  # and what it deleted stays deleted
        ops = operations(memory, mid)
        if isinstance(updated, NotFoundError):
            assert ops == ["ADD", "DELETE"]  # the edit came second: it found nothing
        else:
            assert ops == ["ADD", "UPDATE", "DELETE"]  # the edit came first, with its row


def test_two_updates_of_one_memory_each_get_a_history_row(memory: Memory) -> None:
    for i in range(ROUNDS):
        mid = memory.save(f"My cat is called Tom {i}", user_id="ann").id
        assert mid
        first, second = race(
            lambda mid=mid, i=i: memory.update(mid, f"My cat is called Mimi {i}", user_id="ann"),
            lambda mid=mid, i=i: memory.update(mid, f"My cat is called Kiki {i}", user_id="ann"),
        )
        assert not isinstance(first, MnemeError) and not isinstance(second, MnemeError)
        rows = memory.history(mid, user_id="ann")
        assert [h.operation for h in rows] == ["ADD", "UPDATE", "UPDATE"]
        assert rows[2].old_text == rows[1].new_text  # one order: the second edit saw the first
        record = memory.get(mid, user_id="ann")
        assert record.version == 3 and record.text == rows[2].new_text


def test_update_delete_update_through_the_memory_tools_keep_one_order(memory: Memory) -> None:
    store = memory.store
    for i in range(ROUNDS // 2):
        user = f"ann{i}"  # a home city is one field: its id is the same for every value of one user
        mid = memory.save(f"I live in Lyon {i}", user_id=user).id
        assert mid
        refs = {"1": mid}
        replies = race(
            lambda refs=refs, user=user: run_tool(
                store, user, "update_memory", {"ref": 1, "text": "I live in Nice"}, refs
            )[0],
            lambda refs=refs, user=user: run_tool(store, user, "forget_memory", {"ref": 1}, refs)[0],
            lambda refs=refs, user=user: run_tool(
                store, user, "update_memory", {"ref": 1, "text": "I live in Metz"}, refs
            )[0],
        )
        assert replies[1] == {"operation": "DELETE", "ref": 1} or "error" in replies[1]
        with pytest.raises(NotFoundError):
            memory.get(mid, user_id=user)
        ops = operations(memory, mid, user)
        assert ops[0] == "ADD" and ops[-1] == "DELETE" and ops.count("DELETE") == 1
        assert ops.count("UPDATE") == sum(
            1 for r in (replies[0], replies[2]) if r.get("operation") == "UPDATE"
        )


def test_rest_edits_racing_a_delete_from_the_api_keep_one_order(memory: Memory) -> None:
    key = "race-operator-key-01"
    app = create_app(StoreBackend(memory), keys=KeyRing({key: None}), rate_limit=RateLimiter(0, 1))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
        for i in range(ROUNDS // 2):
            mid = memory.save(f"I swim on Fridays {i}", user_id="ann").id
            patched, deleted = race(
                lambda mid=mid: client.patch(
                    f"/v1/users/ann/memories/{mid}", json={"text": "I swim on Mondays"}
                ),
                lambda mid=mid: memory.delete(mid, user_id="ann"),
            )
            assert not isinstance(deleted, MnemeError)
            assert patched.status_code in (200, 404), patched.text
            assert client.get(f"/v1/users/ann/memories/{mid}").status_code == 404
            ops = operations(memory, mid)
            if patched.status_code == 200:
                assert ops == ["ADD", "UPDATE", "DELETE"]
            else:  # deleted first, or edited then deleted before the route read it back: gone either way
                assert ops in (["ADD", "DELETE"], ["ADD", "UPDATE", "DELETE"])
