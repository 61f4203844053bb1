"""The whole graph with a scripted tool-calling model, an in-memory store and checkpointer."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.graph import build_graph, graph
from tests.fakes import ScriptedChatModel, tool_call

NODES = {"ingest", "retrieve_memories", "build_context", "agent", "tools", "summarize", "extract_memories"}


def test_every_memory_stage_is_a_node() -> None:
    assert set(graph.get_graph().nodes) >= NODES
    assert graph.checkpointer is None and graph.store is None  # the server injects both


def test_react_loop_runs_tools_then_remembers(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script(tool_call("lookup_order", {"order_id": "20240508001"}), "已发货")
    g = build_graph(model=model, checkpointer=InMemorySaver(), store=mem_store)
    cfg = {"configurable": {"thread_id": "t1"}}
    out = g.invoke(
        {"messages": [{"role": "user", "content": "我的订单号20240508001发货了吗"}]},
        cfg,
        context={"user_id": "user_123"},
    )
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert isinstance(out["messages"][2], ToolMessage) and "shipped" in out["messages"][2].content
    assert out["messages"][-1].content == "已发货"
    assert [w["operation"] for w in out["writes"]] == ["ADD"]
    # The second request to the model carried the tool call and its result together.
    second = model.seen[1]
    assert isinstance(second[-2], AIMessage) and second[-2].tool_calls and isinstance(second[-1], ToolMessage)


def test_user_id_in_configurable_is_enough(mem_store: InMemoryStore) -> None:
    g = build_graph(model=ScriptedChatModel.script("hi"), checkpointer=InMemorySaver(), store=mem_store)
    out = g.invoke(
        {"messages": [{"role": "user", "content": "我不吃辣"}]},
        {"configurable": {"thread_id": "t", "user_id": "carol"}},
    )
    assert out["writes"][0]["text"] == "不吃辣"


def test_long_threads_are_summarized_not_dropped(mem_store: InMemoryStore) -> None:
    g = build_graph(model="offline", checkpointer=InMemorySaver(), store=mem_store)
    cfg = {"configurable": {"thread_id": "long"}}
    ctx = {"user_id": "dave", "budget_history": 400}
    g.invoke({"messages": [{"role": "user", "content": "我的订单号是20240508001"}]}, cfg, context=ctx)
    for i in range(25):
        g.invoke(
            {"messages": [{"role": "user", "content": f"随便聊聊第{i}件事，今天天气不错"}]}, cfg, context=ctx
        )
    state = g.get_state(cfg).values
    assert "20240508001" in state["summary"]
    assert len(state["messages"]) < 52
    assert state["messages"][0].type == "human"


def _said(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def test_new_input_first_finishes_a_turn_left_unfinished(mem_store: InMemoryStore) -> None:
    g = build_graph(
        model=ScriptedChatModel.script("one", "two"), checkpointer=InMemorySaver(), store=mem_store
    )
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}
    # A run stopped between nodes (as a killed process leaves it): its input is checkpointed.
    g.invoke(
        {"messages": [{"role": "user", "content": "first"}]}, cfg, context=ctx, interrupt_before=["agent"]
    )
    assert g.get_state(cfg).next == ("agent",)
    out = g.invoke({"messages": [{"role": "user", "content": "second"}]}, cfg, context=ctx)
    # LangGraph alone would discard the stopped run; the first message keeps its reply.
    assert _said(out["messages"]) == [("human", "first"), ("ai", "one"), ("human", "second"), ("ai", "two")]
    assert g.get_state(cfg).next == ()


def test_async_new_input_first_finishes_a_turn_left_unfinished(mem_store: InMemoryStore) -> None:
    g = build_graph(
        model=ScriptedChatModel.script("one", "two"), checkpointer=InMemorySaver(), store=mem_store
    )
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}

    async def run() -> dict[str, Any]:
        first = {"messages": [{"role": "user", "content": "first"}]}
        await g.ainvoke(first, cfg, context=ctx, interrupt_before=["agent"])
        return await g.ainvoke({"messages": [{"role": "user", "content": "second"}]}, cfg, context=ctx)

    out = asyncio.run(run())
    assert _said(out["messages"]) == [("human", "first"), ("ai", "one"), ("human", "second"), ("ai", "two")]


class _FailsOnce(ScriptedChatModel):
    """A model whose first call fails, as an unreachable API does."""

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if not self.seen:
            self.seen.append(list(messages))
            raise RuntimeError("the model API is down")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_a_turn_that_failed_is_not_retried_by_the_next_input(mem_store: InMemoryStore) -> None:
    model = _FailsOnce.script("answer")
    g = build_graph(model=model, checkpointer=InMemorySaver(), store=mem_store)
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}
    with pytest.raises(RuntimeError, match="API is down"):
        g.invoke({"messages": [{"role": "user", "content": "first"}]}, cfg, context=ctx)
    out = g.invoke({"messages": [{"role": "user", "content": "second"}]}, cfg, context=ctx)
    # Its caller saw the error; retrying it could fail again forever. The new input runs alone.
    assert len(model.seen) == 2
    assert _said(out["messages"]) == [("human", "first"), ("human", "second"), ("ai", "answer")]


def test_a_run_from_a_chosen_checkpoint_is_not_redirected(mem_store: InMemoryStore) -> None:
    g = build_graph(
        model=ScriptedChatModel.script("one", "two"), checkpointer=InMemorySaver(), store=mem_store
    )
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}
    g.invoke(
        {"messages": [{"role": "user", "content": "first"}]}, cfg, context=ctx, interrupt_before=["agent"]
    )
    start = next(s for s in g.get_state_history(cfg) if s.next == ("__start__",))
    out = g.invoke({"messages": [{"role": "user", "content": "instead"}]}, start.config, context=ctx)
    assert _said(out["messages"]) == [("human", "instead"), ("ai", "one")]  # a fork, as LangGraph makes it


class _Slow(ScriptedChatModel):
    """A model that takes a while to answer, so that two turns overlap."""

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        time.sleep(0.3)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_two_turns_sent_at_once_on_one_thread_run_one_after_the_other(mem_store: InMemoryStore) -> None:
    model = _Slow.script("one", "two")
    g = build_graph(model=model, checkpointer=InMemorySaver(), store=mem_store)
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}
    said = ["first", "second"]
    workers = [
        threading.Thread(
            target=g.invoke,
            args=({"messages": [{"role": "user", "content": t}]}, cfg),
            kwargs={"context": ctx},
        )
        for t in said
    ]
    for w in workers:
        w.start()
        time.sleep(0.05)
    for w in workers:
        w.join(30)
    messages = g.get_state(cfg).values["messages"]
    assert len(model.seen) == 2  # each input answered once
    assert [m.type for m in messages] == ["human", "ai", "human", "ai"]
    assert sorted(m.content for m in messages if m.type == "human") == said


def test_two_async_turns_sent_at_once_on_one_thread_run_one_after_the_other(mem_store: InMemoryStore) -> None:
    model = _Slow.script("one", "two")
    g = build_graph(model=model, checkpointer=InMemorySaver(), store=mem_store)
    cfg, ctx = {"configurable": {"thread_id": "t"}}, {"user_id": "ann"}

    async def both() -> None:
        await asyncio.gather(
            *(g.ainvoke({"messages": [{"role": "user", "content": t}]}, cfg, context=ctx) for t in ("a", "b"))
        )

    asyncio.run(both())
    assert len(model.seen) == 2
    assert [m.type for m in g.get_state(cfg).values["messages"]] == ["human", "ai", "human", "ai"]
