"""`MemoryMiddleware` on LangChain's `create_agent`, with a scripted model, an in-memory store and saver."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ModelFallbackMiddleware, PIIMiddleware
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from mneme.errors import InputError
from mneme.memory.api import Memory
from mneme.memory.worker import worker
from mneme.middleware import MemoryMiddleware
from mneme.sessions import Sessions
from tests.fakes import ScriptedChatModel, tool_call

SYSTEM = "You are the assistant of a small shop."


def agent_for(
    store: InMemoryStore, model: ScriptedChatModel, *middleware: Any, tools: list[Any] | None = None
) -> Any:
    return create_agent(
        model,
        tools or [],
        system_prompt=SYSTEM,
        middleware=list(middleware) or [MemoryMiddleware()],
        store=store,
        checkpointer=InMemorySaver(),
    )


def say(agent: Any, text: str, thread: str, user: str, **context: Any) -> dict[str, Any]:
    out: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user, **context},
    )
    return out


def request_text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


@pytest.mark.parametrize(
    ("first", "later", "remembered"),
    [
        ("我不吃辣，以后都发顺丰", "推荐一道菜吧，我能吃辣吗？", "不吃辣"),
        ("I live in Berlin and I prefer aisle seats", "Which seats do I prefer on trains?", "aisle"),
    ],
)
def test_an_agent_remembers_its_user_across_sessions(
    mem_store: InMemoryStore, first: str, later: str, remembered: str
) -> None:
    model = ScriptedChatModel.script("好的 / noted", "answer", "answer")
    agent = agent_for(mem_store, model)
    out = say(agent, first, "s1", "alice")
    assert out["messages"][-1].content == "好的 / noted"
    assert remembered.lower() in " ".join(w["text"] for w in out["writes"]).lower()

    out = say(agent, later, "s2", "alice")
    system = model.seen[1][0]
    assert isinstance(system, SystemMessage) and system.content.startswith(SYSTEM)  # the agent's own, pinned
    block = str(system.content).split("<memories>")[1]
    assert remembered in block.lower()  # retrieved and injected
    assert "<previous_sessions>" in system.content and out["recaps"][0]["thread_id"] == "s1"

    say(agent, later, "s3", "mallory")  # another user: nothing of alice's
    assert remembered.lower() not in request_text(model.seen[2]).lower().replace(later.lower(), "")


def test_task_state_is_injected_and_every_request_fits_the_budget(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script(*["ok"] * 12)
    agent = agent_for(mem_store, model)
    ctx = {"context_window": 1400, "budget_output": 200, "budget_history": 300}
    say(agent, "我的订单号是20240508001，想退货", "t", "bob", **ctx)
    for i in range(10):
        out = say(
            agent, f"第{i}个问题：这个商品的尺码和颜色还有别的选择吗？麻烦详细说说" * 2, "t", "bob", **ctx
        )
        assert out["token_usage"]["total"] <= 1400 - 200
    last = model.seen[-1]
    assert "20240508001" in str(last[0].content)  # the order id survives in the task state
    assert out["summary"]  # older turns were folded into the summary...
    assert len(out["messages"]) < 22  # ...and left the thread
    found = Memory(mem_store).search("20240508001 退货", user_id="bob", limit=5)
    assert any("20240508001" in h.text for h in found)  # ...and stay searchable


def test_a_run_without_a_user_is_refused_clearly(mem_store: InMemoryStore) -> None:
    agent = agent_for(mem_store, ScriptedChatModel.script("hi"))
    with pytest.raises(InputError, match="user"):
        agent.invoke({"messages": [{"role": "user", "content": "hi"}]}, {"configurable": {"thread_id": "x"}})


def test_the_user_can_come_from_configurable(mem_store: InMemoryStore) -> None:
    agent = agent_for(mem_store, ScriptedChatModel.script("ok"))
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "我不吃辣"}]},
        {"configurable": {"thread_id": "x", "user_id": "carol"}},
    )
    assert out["writes"][0]["text"] == "不吃辣"
    assert [r.text for r in Memory(mem_store).get_all(user_id="carol")] == ["不吃辣"]


def test_memory_tools_act_for_the_runs_user_only(mem_store: InMemoryStore) -> None:
    Memory(mem_store).save("喜欢靠窗的座位", user_id="alice")
    model = ScriptedChatModel.script(
        tool_call("search_memory", {"query": "座位"}),
        "您喜欢靠窗",
        tool_call("search_memory", {"query": "座位"}, "call_2"),
        "没有记录",
        tool_call("save_memory", {"text": "喜欢靠过道的座位"}, "call_3"),
        "记住了",
    )
    agent = agent_for(mem_store, model)
    out = say(agent, "我喜欢什么座位？", "a", "alice")
    [result] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "靠窗" in str(result.content)
    out = say(agent, "我喜欢什么座位？", "m", "mallory")
    [result] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "靠窗" not in str(result.content)
    say(agent, "记一下", "m", "mallory")
    assert [r.text for r in Memory(mem_store).get_all(user_id="mallory")] == ["喜欢靠过道的座位"]
    assert [r.text for r in Memory(mem_store).get_all(user_id="alice")] == ["喜欢靠窗的座位"]


def test_deferred_extraction_queues_then_writes(mem_store: InMemoryStore) -> None:
    agent = agent_for(mem_store, ScriptedChatModel.script("ok"))
    out = say(agent, "I am allergic to peanuts", "d", "dora", extraction="deferred")
    assert [w["operation"] for w in out["writes"]] == ["DEFERRED"]
    assert worker().flush(30)
    assert [r.text for r in Memory(mem_store).get_all(user_id="dora")] == ["Allergic to peanuts"]


def test_pii_middleware_before_it_keeps_pii_out_of_memory_and_the_model(mem_store: InMemoryStore) -> None:
    keep = {"redact_email": "keep"}  # mneme's own redaction off, to see what PIIMiddleware does
    text = "我的邮箱是 alice@example.com，我不吃辣"
    model = ScriptedChatModel.script("好的", "ok")
    agent = agent_for(mem_store, model, PIIMiddleware("email", strategy="redact"), MemoryMiddleware())
    say(agent, text, "p1", "erin", **keep)
    say(agent, "我有什么忌口？", "p2", "erin", **keep)  # a new session: the last one's recap is stored
    stored = [r.text for r in Memory(mem_store).get_all(user_id="erin")]
    assert "不吃辣" in stored
    assert not any("alice@example.com" in t for t in stored)
    assert not any("alice@example.com" in request_text(seen) for seen in model.seen)
    assert "alice@example.com" not in str(Sessions(InMemorySaver(), mem_store).list(user_id="erin"))

    # Without it, the same settings keep the address: the test above is not vacuous.
    other = InMemoryStore(index=mem_store.index_config)  # type: ignore[arg-type]
    say(agent_for(other, ScriptedChatModel.script("好的")), text, "p1", "erin", **keep)
    assert any("alice@example.com" in r.text for r in Memory(other).get_all(user_id="erin"))


def test_human_in_the_loop_gates_the_memory_tools(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script(
        tool_call("save_memory", {"text": "喜欢靠窗的座位"}),
        "记住了",
        tool_call("save_memory", {"text": "喜欢靠过道的座位"}, "c2"),
        "好的",
    )
    hitl = HumanInTheLoopMiddleware(interrupt_on={"save_memory": True})
    agent = agent_for(mem_store, model, MemoryMiddleware(), hitl)
    cfg = {"configurable": {"thread_id": "h"}}
    ctx = {"user_id": "fay"}
    out = agent.invoke({"messages": [{"role": "user", "content": "我喜欢靠窗的座位"}]}, cfg, context=ctx)
    assert out["__interrupt__"] and Memory(mem_store).get_all(user_id="fay") == []  # nothing before approval
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg, context=ctx)
    assert out["messages"][-1].content == "记住了"
    assert [r.text for r in Memory(mem_store).get_all(user_id="fay")] == ["喜欢靠窗的座位"]

    agent.invoke({"messages": [{"role": "user", "content": "帮我把那个也记一下"}]}, cfg, context=ctx)
    out = agent.invoke(Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), cfg, context=ctx)
    assert out["messages"][-1].content == "好的"
    assert [r.text for r in Memory(mem_store).get_all(user_id="fay")] == ["喜欢靠窗的座位"]


class DownModel(ScriptedChatModel):
    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.seen.append(list(messages))
        raise ConnectionError("primary model is down")


def test_model_fallback_gets_the_same_memories(mem_store: InMemoryStore) -> None:
    Memory(mem_store).save("不吃辣", user_id="gus")
    primary = DownModel.script("never")
    fallback = ScriptedChatModel.script("给您推荐清蒸鱼")
    agent = agent_for(mem_store, primary, MemoryMiddleware(), ModelFallbackMiddleware(fallback))
    out = say(agent, "我不吃辣，推荐一道菜吧", "f", "gus")
    assert out["messages"][-1].content == "给您推荐清蒸鱼"
    assert "不吃辣" in str(primary.seen[0][0].content) and "不吃辣" in str(fallback.seen[0][0].content)


def test_async_runs_use_the_same_stages(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script("ok", "ok")
    agent = agent_for(mem_store, model)

    async def run() -> dict[str, Any]:
        ctx = {"user_id": "hal"}
        await agent.ainvoke(
            {"messages": [{"role": "user", "content": "我不吃辣"}]},
            {"configurable": {"thread_id": "1"}},
            context=ctx,
        )
        out: dict[str, Any] = await agent.ainvoke(
            {"messages": [{"role": "user", "content": "我能吃辣吗"}]},
            {"configurable": {"thread_id": "2"}},
            context=ctx,
        )
        return out

    out = asyncio.run(run())
    assert "不吃辣" in str(model.seen[1][0].content).split("<memories>")[1] and out["memories"]
