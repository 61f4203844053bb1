"""mneme's SQLite checkpointer: short versions, threads written by `SqliteSaver` go on, turn locks."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph, add_messages
from langgraph.store.memory import InMemoryStore
from typing_extensions import TypedDict

from mneme.checkpoints import CompactSqliteSaver, shared_turn_lock
from mneme.graph import build_graph

CTX = {"user_id": "ann", "model": "offline"}
CFG = {"configurable": {"thread_id": "t"}}


def _say(graph, text: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    out = graph.invoke({"messages": [{"role": "user", "content": text}]}, CFG, context=CTX)
    return [(m.type, m.content) for m in out["messages"]]


def test_a_thread_written_by_sqlitesaver_goes_on_with_short_versions(
    tmp_path: Path, mem_store: InMemoryStore
) -> None:
    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False)
    old = SqliteSaver(conn)
    old.setup()
    _say(build_graph(model="offline", checkpointer=old, store=mem_store), "I live in Lyon")
    before = old.get_tuple(CFG)
    assert before is not None and all(len(v) > 40 for v in before.checkpoint["channel_versions"].values())

    new = CompactSqliteSaver(conn)
    graph = build_graph(model="offline", checkpointer=new, store=mem_store)
    said = _say(graph, "I have a cat named Tom")
    assert [t for t, _ in said] == ["human", "ai", "human", "ai"]  # every node ran on the old thread
    assert said[2] == ("human", "I have a cat named Tom")
    after = new.get_tuple(CFG)
    assert after is not None
    versions = after.checkpoint["channel_versions"]
    assert len(versions["messages"]) == 12 and len(max(versions.values())) == 12  # the newest sort last
    assert int(versions["messages"]) > int(before.checkpoint["channel_versions"]["messages"].split(".")[0])
    assert [t for t, _ in _say(graph, "thanks")] == ["human", "ai"] * 3
    conn.close()


class Before(TypedDict):
    """How mneme's state was checkpointed before: whole values at every step."""

    messages: Annotated[list, add_messages]
    summary: str


def test_a_thread_checkpointed_before_delta_channels_is_read_whole(
    tmp_path: Path, mem_store: InMemoryStore
) -> None:
    """Threads from before `messages` & co. became delta channels keep their history."""

    def earlier(state: Before) -> dict:
        return {"messages": [AIMessage("you said you live in Lyon")], "summary": "The user lives in Lyon."}

    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False)
    saver = CompactSqliteSaver(conn)
    saver.setup()
    old = StateGraph(Before).add_node(earlier).add_edge(START, "earlier").compile(checkpointer=saver)
    old.invoke({"messages": [HumanMessage("I live in Lyon")]}, CFG)

    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    values = graph.get_state(CFG).values
    assert [m.content for m in values["messages"]] == ["I live in Lyon", "you said you live in Lyon"]
    assert values["summary"] == "The user lives in Lyon."
    said = _say(graph, "thanks")
    assert said[:3] == [("human", "I live in Lyon"), ("ai", "you said you live in Lyon"), ("human", "thanks")]
    assert graph.get_state(CFG).values["summary"] == "The user lives in Lyon."
    conn.close()


def test_a_read_of_a_long_thread_replays_only_its_last_few_turns(
    tmp_path: Path, mem_store: InMemoryStore
) -> None:
    """Every delta channel gets a full copy every few turns, so `get_state` never walks far back."""
    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False)
    saver = CompactSqliteSaver(conn)
    saver.setup()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    for i in range(14):
        _say(graph, f"message {i}: I like green tea and long walks")
    steps_per_turn = len(list(saver.list(CFG))) / 14
    counters = saver.get_tuple(CFG).metadata["counters_since_delta_snapshot"]  # type: ignore[union-attr]
    assert set(counters) >= {"messages", "summary", "recaps", "memories", "prompt"}
    # [updates, supersteps] since each channel's last full copy: a handful of turns at most.
    assert max(steps for _, steps in counters.values()) <= 6 * steps_per_turn
    conn.close()


HOLDER = """
import sqlite3, sys, time
from pathlib import Path
from mneme.checkpoints import CompactSqliteSaver, shared_turn_lock

saver = CompactSqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
with shared_turn_lock(saver).hold("t1"):
    Path(sys.argv[2]).touch()
    time.sleep(2.0)
"""


def test_another_process_waits_for_a_threads_turn_and_only_that_thread(tmp_path: Path) -> None:
    db, held = tmp_path / "threads.sqlite", tmp_path / "held"
    saver = CompactSqliteSaver(sqlite3.connect(db, check_same_thread=False))
    lock = shared_turn_lock(saver)
    assert lock is not None
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(held)])
    try:
        while not held.exists():
            assert child.poll() is None
            time.sleep(0.01)
        start = time.monotonic()
        with lock.hold("t2"):  # another thread: no wait
            assert time.monotonic() - start < 0.5

        async def turn() -> float:
            async with lock.ahold("t1"):
                return time.monotonic() - start

        assert asyncio.run(turn()) > 0.5  # waited for the other process's turn
    finally:
        child.wait(timeout=30)
    assert shared_turn_lock(CompactSqliteSaver(sqlite3.connect(":memory:"))) is None
