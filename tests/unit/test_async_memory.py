"""`AsyncMemory`: the event loop never waits on the store, and one user's calls keep their order."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from mneme.errors import InputError, NotFoundError
from mneme.memory.aio import PER_USER, AsyncMemory
from mneme.memory.api import Memory
from mneme.memory.record import MemoryChange, MemoryRecord

DELAY = 0.5  # well above a save's own work (redaction, the guard, the user model's reading)


class SlowMemory(Memory):
    """A memory whose writes and listings take a while, and that records how they overlap."""

    def __init__(self, store: InMemoryStore) -> None:
        super().__init__(store)
        self.lock = threading.Lock()
        self.running: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.order: list[str] = []

    def _enter(self, what: str) -> None:
        with self.lock:
            self.running[what] = self.running.get(what, 0) + 1
            self.most[what] = max(self.most.get(what, 0), self.running[what])

    def _leave(self, what: str) -> None:
        with self.lock:
            self.running[what] -= 1

    def save(self, text: str, *, user_id: str, **kwargs: Any) -> MemoryChange:
        self._enter(f"write:{user_id}")
        try:
            time.sleep(DELAY)
            self.order.append(text)
            return super().save(text, user_id=user_id, **kwargs)
        finally:
            self._leave(f"write:{user_id}")

    def get_all(self, *, user_id: str, **kwargs: Any) -> list[MemoryRecord]:
        self._enter(f"read:{user_id}")
        try:
            time.sleep(DELAY)
            return super().get_all(user_id=user_id, **kwargs)
        finally:
            self._leave(f"read:{user_id}")


@pytest.fixture
def slow(mem_store: InMemoryStore) -> SlowMemory:
    return SlowMemory(mem_store)


def test_a_read_after_a_write_sees_it(slow: SlowMemory) -> None:
    async def scenario() -> list[str]:
        mem = AsyncMemory(slow)
        write = asyncio.ensure_future(mem.save("我不吃辣", user_id="ann"))
        await asyncio.sleep(0)  # the write has arrived first
        hits = await mem.search("吃辣", user_id="ann")  # a fast read: it only waits for the write
        await write
        return [h.text for h in hits]

    assert asyncio.run(scenario()) == ["我不吃辣"]


def test_one_users_writes_run_one_at_a_time_in_arrival_order(slow: SlowMemory) -> None:
    texts = [f"fact number {i}" for i in range(5)]

    async def scenario() -> None:
        mem = AsyncMemory(slow)
        await asyncio.gather(*(mem.save(t, user_id="ann") for t in texts))

    asyncio.run(scenario())
    assert slow.most["write:ann"] == 1
    assert slow.order == texts
    assert [r.text for r in Memory.get_all(slow, user_id="ann")] == texts


def test_reads_of_one_user_and_calls_of_different_users_run_in_parallel(slow: SlowMemory) -> None:
    async def scenario() -> float:
        mem = AsyncMemory(slow)
        t0 = time.perf_counter()
        await asyncio.gather(
            mem.get_all(user_id="ann"),
            mem.get_all(user_id="ann"),
            mem.save("bob likes tea", user_id="bob"),
            mem.save("carol likes coffee", user_id="carol"),
        )
        return time.perf_counter() - t0

    elapsed = asyncio.run(scenario())
    assert slow.most["read:ann"] == PER_USER == 2
    assert elapsed < 1.8 * DELAY  # four calls of DELAY each, overlapped


def test_a_user_who_floods_the_server_holds_only_a_few_workers(slow: SlowMemory) -> None:
    async def scenario() -> float:
        mem = AsyncMemory(slow, workers=4)
        flood = [asyncio.ensure_future(mem.get_all(user_id="ann")) for _ in range(12)]
        await asyncio.sleep(0.01)  # ann's twelve reads arrived first
        t0 = time.perf_counter()
        await mem.save("bob likes tea", user_id="bob")  # bob still finds a free worker
        waited = time.perf_counter() - t0
        await asyncio.gather(*flood)
        return waited

    waited = asyncio.run(scenario())
    assert slow.most["read:ann"] == PER_USER
    assert waited < 1.8 * DELAY  # not behind ann's 12 reads (6 rounds of DELAY on 2 workers)


def test_the_event_loop_keeps_running_while_the_store_works(slow: SlowMemory) -> None:
    async def scenario() -> int:
        mem = AsyncMemory(slow)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.ensure_future(ticker())
        await mem.save("我住在北京", user_id="ann")
        task.cancel()
        return ticks

    assert asyncio.run(scenario()) >= DELAY / 0.01 / 2


def test_a_cancelled_caller_does_not_let_the_next_call_overtake_its_write(slow: SlowMemory) -> None:
    async def scenario() -> list[str]:
        mem = AsyncMemory(slow)
        write = asyncio.ensure_future(mem.save("我的猫叫咪咪", user_id="ann"))
        await asyncio.sleep(DELAY / 5)  # the write is running in its thread
        write.cancel()
        hits = await mem.search("猫", user_id="ann")
        return [h.text for h in hits]

    assert asyncio.run(scenario()) == ["我的猫叫咪咪"]


def test_errors_reach_the_caller_and_release_the_queue(slow: SlowMemory) -> None:
    async def scenario() -> list[str]:
        mem = AsyncMemory(slow)
        with pytest.raises(InputError, match="empty"):
            await mem.search("   ", user_id="ann")
        with pytest.raises(NotFoundError):
            await mem.update("no-such-id", "x", user_id="ann")
        await mem.save("我不吃辣", user_id="ann")
        hits = await mem.search("吃辣", user_id="ann")
        return [h.text for h in hits]

    assert asyncio.run(scenario()) == ["我不吃辣"]
