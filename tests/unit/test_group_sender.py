"""A group-chat line that names no sender is refused whole: it is never stored as someone's memory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.errors import InputError
from mneme.graph import build_graph
from mneme.memory.api import Memory
from mneme.nodes.ingest import merge_group

ROOM: Any = {"configurable": {"thread_id": "team-room"}}
TRIGGER = {"sender": "carol", "content": "@bot 帮我们订个餐厅", "timestamp": "2026-12-05 12:01"}


def burst(*history: dict[str, Any], trigger: dict[str, Any] = TRIGGER) -> dict[str, Any]:
    return {"group": {"history": list(history), "trigger": trigger, "bot_name": "bot"}}


def test_a_history_line_without_a_sender_is_refused_and_nothing_is_written(mem_store: InMemoryStore) -> None:
    graph = build_graph(model="offline", checkpointer=InMemorySaver(), store=mem_store)
    lines = ({"sender": "alice", "content": "我对花生过敏"}, {"content": "我不吃辣"})
    with pytest.raises(InputError, match=r"history line 2 \('我不吃辣'\) has no sender"):
        graph.invoke(burst(*lines), ROOM, context={"user_id": "carol"})
    memory = Memory(mem_store)
    for user in ("unknown", "alice", "carol"):
        assert memory.get_all(user_id=user) == []
    assert mem_store.search(()) == []  # no session record either
    assert graph.get_state(ROOM).values == {}  # the refused burst is not in the thread


def test_the_room_works_again_after_a_refused_burst(mem_store: InMemoryStore) -> None:
    graph = build_graph(model="offline", checkpointer=InMemorySaver(), store=mem_store)
    with pytest.raises(InputError, match="has no sender"):
        graph.invoke(burst({"content": "我不吃辣"}), ROOM, context={"user_id": "carol"})
    out = graph.invoke(burst({"sender": "alice", "content": "我不吃辣"}), ROOM, context={"user_id": "carol"})
    assert out["participants"] == ["alice", "carol"]
    assert [r.text for r in Memory(mem_store).get_all(user_id="alice")] == ["不吃辣"]
    assert Memory(mem_store).get_all(user_id="unknown") == []


@pytest.mark.parametrize("sender", [None, "", "  \n "])
def test_a_trigger_without_a_sender_is_refused(mem_store: InMemoryStore, sender: str | None) -> None:
    graph = build_graph(model="offline", checkpointer=InMemorySaver(), store=mem_store)
    trigger: dict[str, Any] = {"content": "@bot 我不吃辣，订个餐厅"}
    if sender is not None:
        trigger["sender"] = sender
    with pytest.raises(InputError, match=r"the trigger .* has no sender"):
        graph.invoke(burst(trigger=trigger), ROOM, context={"user_id": "carol"})
    assert mem_store.search(()) == []


def test_a_graph_of_your_own_gets_the_same_refusal_from_ingest() -> None:
    with pytest.raises(InputError, match="history line 1"):
        merge_group(burst({"sender": None, "content": "我不吃辣"})["group"])


def test_an_async_run_refuses_it_too(mem_store: InMemoryStore) -> None:
    graph = build_graph(model="offline", checkpointer=InMemorySaver(), store=mem_store)
    with pytest.raises(InputError, match="history line 1"):
        asyncio.run(graph.ainvoke(burst({"content": "我不吃辣"}), ROOM, context={"user_id": "carol"}))
    assert Memory(mem_store).get_all(user_id="unknown") == []
    assert graph.get_state(ROOM).values == {}
