"""Each memory stage on its own, with a scripted model and deterministic embeddings."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.errors import InputError
from mneme.memory.api import Memory
from mneme.memory.repo import Repo
from mneme.nodes import (
    build_context,
    ingest,
    make_agent,
    make_extract_memories,
    make_summarize,
    make_tools,
    retrieve_memories,
)
from mneme.state import State
from mneme.toolkit import default_tools
from tests.fakes import ScriptedChatModel, tool_call


def rt(store: InMemoryStore, user: str = "u1", **ctx: Any) -> Runtime[Context]:
    return Runtime(context=Context(user_id=user, **ctx), store=store)


def human(text: str, mid: str = "h1") -> HumanMessage:
    return HumanMessage(content=text, id=mid)


# -- ingest -------------------------------------------------------------------------------


def test_ingest_refuses_runs_without_user(mem_store: InMemoryStore) -> None:
    with pytest.raises(InputError, match="user_id is required"):
        ingest(State(messages=[human("hi")]), rt(mem_store, user=""))


@pytest.mark.parametrize("text", ["", "   "])
def test_ingest_refuses_empty_messages(mem_store: InMemoryStore, text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        ingest(State(messages=[human(text)]), rt(mem_store))


def test_ingest_refuses_messages_over_the_limit(mem_store: InMemoryStore) -> None:
    with pytest.raises(InputError, match="max_message_chars"):
        ingest(State(messages=[human("x" * 101)]), rt(mem_store, max_message_chars=100))


def test_ingest_records_slots_and_turn_start(mem_store: InMemoryStore) -> None:
    out = ingest(State(messages=[human("订单号20240508001退货怎么处理？")]), rt(mem_store))
    assert out["turn_start"] == "h1"
    assert out["task"]["slots"]["order_id"] == "20240508001"
    assert out["task"]["intent"] == "return"


def test_ingest_merges_a_group_burst(mem_store: InMemoryStore) -> None:
    group = {
        "history": [
            {"sender": "alice", "content": "我不吃辣", "timestamp": "10:00"},
            {"sender": "bot", "content": "好的", "timestamp": "10:01"},
        ],
        "trigger": {"sender": "bob", "content": "@bot 推荐个餐厅", "timestamp": "10:02"},
        "bot_name": "bot",
    }
    out = ingest(State(messages=[], group=group), rt(mem_store, user="room-1"))
    [msg] = out["messages"]
    assert out["participants"] == ["alice", "bob"]
    assert "alice: 我不吃辣" in msg.content and "bot: 好的" not in msg.content
    assert msg.name == "bob" and out["turn_start"] == msg.id and out["group"] is None


# -- retrieve_memories ----------------------------------------------------------------------


def test_retrieve_only_reads_the_runs_user(e5_store: InMemoryStore) -> None:
    Memory(e5_store).add("我不吃辣", user_id="u1")
    Memory(e5_store).add("我喜欢吃辣", user_id="u2")
    out = retrieve_memories(State(messages=[human("推荐一家餐厅")]), rt(e5_store, min_relevance=0.0))
    assert [m["text"] for m in out["memories"]] == ["不吃辣"]
    assert out["memory_refs"] == {"1": out["memories"][0]["id"]}


def test_retrieve_cold_start_injects_nothing(mem_store: InMemoryStore) -> None:
    out = retrieve_memories(State(messages=[human("hello there")]), rt(mem_store))
    assert out["memories"] == []


def test_retrieve_brings_a_standing_instruction_to_the_request_it_touches(e5_store: InMemoryStore) -> None:
    Memory(e5_store).add("麻烦以后都发顺丰", user_id="u1")
    out = retrieve_memories(State(messages=[human("帮我寄个包裹给我妈")]), rt(e5_store))
    assert [(m["kind"], m["text"]) for m in out["memories"]] == [("profile", "快递偏好：以后都发顺丰")]
    chat = retrieve_memories(State(messages=[human("今天天气怎么样")]), rt(e5_store))
    assert chat["memories"] == []  # a request it does not touch is not burdened with it


def test_retrieve_labels_each_participant(e5_store: InMemoryStore) -> None:
    Memory(e5_store).add("我不吃辣", user_id="alice")
    Memory(e5_store).add("I am vegetarian", user_id="bob")
    state = State(messages=[human("推荐一家餐厅 a restaurant for us")], participants=["alice", "bob"])
    out = retrieve_memories(state, rt(e5_store, user="room", min_relevance=0.0))
    assert {(m["who"], m["text"]) for m in out["memories"]} == {
        ("alice", "不吃辣"),
        ("bob", "Is vegetarian"),
    }


# -- build_context / agent ------------------------------------------------------------------


def test_memory_block_respects_its_budget(mem_store: InMemoryStore) -> None:
    memories = [
        {"ref": i, "id": str(i), "who": "", "kind": "semantic", "text": f"fact {i} " * 30, "score": i / 100}
        for i in range(1, 40)
    ]
    state = State(messages=[human("hi")], memories=memories)
    out = build_context(state, rt(mem_store, budget_memory=200))
    assert 0 < out["token_usage"]["memory"] <= 200
    assert "#39" in out["prompt"]["memory_block"]  # the best-scored memory survives
    assert out["token_usage"]["total"] + 1024 <= 8192


def test_memories_of_one_aspect_are_shown_oldest_first_with_when_they_were_said(
    mem_store: InMemoryStore,
) -> None:
    row = {"who": "", "kind": "semantic", "user_id": "u", "constraint": True, "score": None}
    memories = [
        {
            **row,
            "ref": 1,
            "id": "a",
            "text": "我现在能吃一点辣了",
            "aspect": "diet",
            "said": "2026-12-03T10:05:09+00:00",
        },
        {
            **row,
            "ref": 2,
            "id": "b",
            "text": "我对花生过敏",
            "aspect": "allergy",
            "said": "2026-11-01T08:00:00+00:00",
        },
        {
            **row,
            "ref": 3,
            "id": "c",
            "text": "我不吃辣",
            "aspect": "diet",
            "said": "2026-12-03T10:05:01+00:00",
        },
    ]
    block = build_context(State(messages=[human("推荐餐厅")], memories=memories), rt(mem_store))["prompt"][
        "memory_block"
    ]
    lines = [line for line in block.splitlines() if line.startswith("- #")]
    assert lines == [
        "- #3 (constraint, said 2026-12-03 10:05) 我不吃辣",
        "- #2 (constraint) 我对花生过敏",
        "- #1 (constraint, said 2026-12-03 10:05) 我现在能吃一点辣了",
    ]
    assert "the later one holds" in block

    alone = build_context(State(messages=[human("推荐餐厅")], memories=memories[:2]), rt(mem_store))
    assert "said" not in alone["prompt"]["memory_block"]  # nothing to tell apart: no times, no note
    assert "the later one holds" not in alone["prompt"]["memory_block"]


def test_agent_sees_system_prompt_first_with_memories_and_task(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script("好的")
    agent = make_agent(model, default_tools())
    state = State(
        messages=[human("订单号20240508001")],
        prompt={"memory_block": "<memories>\n- #1 (profile) 快递偏好：以后都发顺丰\n</memories>"},
        task={"slots": {"order_id": "20240508001"}, "intent": "order_status"},
    )
    out = agent(state, runtime=rt(mem_store))
    assert out["messages"][0].content == "好的"
    [request] = model.seen
    assert isinstance(request[0], SystemMessage)
    assert "快递偏好" in request[0].content and "20240508001" in request[0].content
    assert request[-1].content == "订单号20240508001"


def test_memory_can_sit_next_to_the_user_input(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script("ok")
    state = State(
        messages=[human("hi")], prompt={"memory_block": "<memories>\n- #1 (semantic) x\n</memories>"}
    )
    make_agent(model, [])(state, runtime=rt(mem_store, memory_position="user"))
    request = model.seen[0]
    assert "<memories>" not in request[0].content and request[-1].content.startswith("<memories>")


# -- tools --------------------------------------------------------------------------------------


def _run_tool(store: InMemoryStore, user: str, name: str, args: dict[str, Any]) -> str:
    node = make_tools(default_tools())
    state = {"messages": [human("q"), tool_call(name, args)]}
    out = node.invoke(
        state, config={"configurable": {"thread_id": "t", "__pregel_runtime": rt(store, user=user)}}
    )
    messages = out["messages"] if isinstance(out, dict) else [m for c in out for m in c.update["messages"]]
    return str(messages[-1].content)


def test_order_tool_answers_only_for_the_owner(mem_store: InMemoryStore) -> None:
    assert '"status": "shipped"' in _run_tool(
        mem_store, "user_123", "lookup_order", {"order_id": "20240508001"}
    )
    assert "not_found" in _run_tool(mem_store, "user_456", "lookup_order", {"order_id": "20240508001"})


def test_memory_tools_use_the_runs_user(mem_store: InMemoryStore) -> None:
    Memory(mem_store).add("我不吃辣", user_id="alice")
    assert "不吃辣" in _run_tool(mem_store, "alice", "search_memory", {"query": "吃辣"})
    assert "不吃辣" not in _run_tool(mem_store, "bob", "search_memory", {"query": "吃辣"})


# -- summarize / extract ----------------------------------------------------------------------


def _long_thread(turns: int) -> list:
    msgs: list = [
        human("我的订单号是20240508001，帮我查一下", "h0"),
        AIMessage(content="好的，已发货", id="a0"),
    ]
    for i in range(1, turns):
        msgs += [
            human(f"第{i}个问题，随便聊聊天气和心情 " * 5, f"h{i}"),
            AIMessage(content="好的，我明白了 " * 10, id=f"a{i}"),
        ]
    return msgs


def test_summarize_folds_old_turns_and_keeps_them_as_episodes(mem_store: InMemoryStore) -> None:
    state = State(messages=_long_thread(30))
    out = make_summarize("offline")(state, runtime=rt(mem_store, budget_history=600))
    removed = [m.id for m in out["messages"] if isinstance(m, RemoveMessage)]
    assert "h0" in removed and "h29" not in removed
    assert "20240508001" in out["summary"]
    episodes = Repo(mem_store).records("u1", ["episodic"])
    assert any("20240508001" in e.text for e in episodes)
    assert len(episodes) == len([i for i in removed if i.startswith("h")])


def test_summarize_does_nothing_under_budget(mem_store: InMemoryStore) -> None:
    assert make_summarize("offline")(State(messages=_long_thread(2)), runtime=rt(mem_store)) == {}


def test_extract_writes_for_the_user_who_spoke(mem_store: InMemoryStore) -> None:
    node = make_extract_memories("offline")
    out = node(
        State(messages=[human("我不吃辣"), AIMessage(content="好的")], turn_start="h1"), runtime=rt(mem_store)
    )
    assert [w["operation"] for w in out["writes"]] == ["ADD"]
    assert [r.text for r in Memory(mem_store).get_all(user_id="u1")] == ["不吃辣"]
    off = node(
        State(messages=[human("我喜欢猫", "h2")], turn_start="h2"), runtime=rt(mem_store, extraction="off")
    )
    assert off == {"writes": []}


def test_extract_in_a_group_writes_to_each_speaker(mem_store: InMemoryStore) -> None:
    group = {
        "history": [{"sender": "alice", "content": "我不吃辣"}],
        "trigger": {"sender": "bob", "content": "我住在上海"},
    }
    merged = ingest(State(messages=[], group=group), rt(mem_store, user="room"))["messages"][0]
    make_extract_memories("offline")(
        State(messages=[merged], turn_start=merged.id), runtime=rt(mem_store, user="room")
    )
    memory = Memory(mem_store)
    assert [r.text for r in memory.get_all(user_id="alice")] == ["不吃辣"]
    assert [r.text for r in memory.get_all(user_id="bob")] == ["住在上海"]
    assert memory.get_all(user_id="room") == []


def test_tool_results_follow_their_calls_in_the_request(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script("done")
    call = tool_call("lookup_order", {"order_id": "1"}, "c1")
    state = State(messages=[human("q"), call, ToolMessage(content="r", tool_call_id="c1", id="t1")])
    make_agent(model, default_tools())(state, runtime=rt(mem_store))
    request = model.seen[0]
    assert [type(m).__name__ for m in request] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    ]
