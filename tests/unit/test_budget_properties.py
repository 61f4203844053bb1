"""Property tests: whatever the thread and the budget, every model request is valid and within budget."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.nodes import make_agent
from mneme.nodes.build_context import render, system_prompt
from mneme.state import State
from mneme.tokens import counter_for
from tests.fakes import ScriptedChatModel

WORDS = ["order", "订单", "20240508001", "hello", "退货", "address", "Paris", "¥99", "2024-05-08", "ok"]
_ids = itertools.count()


def _text(draw: st.DrawFn, max_words: int) -> str:
    n = draw(st.integers(0, max_words))
    return " ".join(WORDS[i % len(WORDS)] for i in range(draw(st.integers(0, 9)), n + 9))


@st.composite
def tool_round(draw: st.DrawFn, answered: bool = True) -> list[AnyMessage]:
    """An AI message with 1-3 parallel tool calls and (if answered) all their results."""
    calls = [
        {
            "name": "lookup_order",
            "args": {"order_id": str(next(_ids))},
            "id": f"call{next(_ids)}",
            "type": "tool_call",
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    msgs: list[AnyMessage] = [AIMessage(content=_text(draw, 20), tool_calls=calls, id=f"ai{next(_ids)}")]
    if answered:
        for call in calls:
            size = draw(st.sampled_from([5, 50, 400, 3000]))
            msgs.append(ToolMessage(content=_text(draw, size), tool_call_id=call["id"], id=f"t{next(_ids)}"))
    return msgs


@st.composite
def thread(draw: st.DrawFn) -> list[AnyMessage]:
    """Random turns: a user message, tool rounds (sometimes interrupted), a reply."""
    msgs: list[AnyMessage] = []
    turns = draw(st.integers(1, 12))
    for t in range(turns):
        newest = t == turns - 1
        size = draw(st.sampled_from([3, 30, 300, 6000]))
        msgs.append(HumanMessage(content=_text(draw, size), id=f"h{next(_ids)}"))
        for _ in range(draw(st.integers(0, 3))):
            msgs += draw(tool_round(answered=newest or draw(st.booleans()) or True))
        if not newest and draw(st.integers(0, 9)) == 0:
            msgs += draw(tool_round(answered=False))  # a run interrupted before the tools ran
        if not newest and draw(st.integers(0, 9)) == 0:
            msgs.append(ToolMessage(content="stray", tool_call_id="nobody", id=f"t{next(_ids)}"))
        if not newest or draw(st.booleans()):
            msgs.append(
                AIMessage(content=_text(draw, draw(st.sampled_from([5, 100, 1000]))), id=f"a{next(_ids)}")
            )
    return msgs


@st.composite
def contexts(draw: st.DrawFn) -> Context:
    order = ["system", *draw(st.permutations(["summary", "memory", "history"]))]
    window = draw(st.integers(2500, 16000))
    output = draw(st.integers(0, 1024))
    ctx = Context(
        model=draw(st.sampled_from(["offline", "openai:gpt-4o-mini"])),
        context_window=window,
        budget_system=draw(st.integers(200, 1024)),
        budget_summary=draw(st.integers(0, 2000)),
        budget_memory=draw(st.integers(0, 2000)),
        budget_history=draw(st.integers(400, 8000)),
        budget_output=output,
        budget_order=",".join(order),
        memory_position=draw(st.sampled_from(["system", "user"])),
    )
    assume(ctx.history_budget() >= 500)
    return ctx


@st.composite
def states(draw: st.DrawFn) -> State:
    memories = [
        {
            "ref": i + 1,
            "id": f"m{i}",
            "who": draw(st.sampled_from(["", "alice"])),
            "kind": "semantic",
            "text": _text(draw, 40),
            "score": draw(st.floats(0, 1)),
        }
        for i in range(draw(st.integers(0, 12)))
    ]
    recaps = [
        {"id": f"r{i}", "date": "2024-05-08", "text": _text(draw, 200)}
        for i in range(draw(st.integers(0, 3)))
    ]
    return State(
        messages=draw(thread()),
        summary=_text(draw, draw(st.sampled_from([0, 50, 3000]))),
        memories=memories,
        recaps=recaps,
        task={"intent": "order_status", "slots": {"order_id": "20240508001"}}
        if draw(st.booleans())
        else {"slots": {}},
    )


def check_request(request: list[Any], state: State, ctx: Context) -> None:
    """What every chat API accepts and what mneme promises about a request."""
    counter = counter_for(ctx.model)
    # Within the window, with the output reserve kept free.
    assert counter.count_messages(request) + ctx.budget_output <= ctx.context_window
    # The system prompt first, whole.
    assert isinstance(request[0], SystemMessage)
    assert request[0].content.startswith(system_prompt(ctx)[:-6])  # (the minute may tick over)
    assert not any(isinstance(m, SystemMessage) for m in request[1:])
    # No orphan tool call or tool result.
    open_calls: set[str] = set()
    for m in request[1:]:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_calls, "a tool result without its call"
            open_calls.discard(m.tool_call_id)
        else:
            assert not open_calls, "a tool call without its result"
            if isinstance(m, AIMessage):
                open_calls = {c["id"] for c in m.tool_calls}
    assert not open_calls
    # The newest message is always there (shortened if it had to be).
    assert request[-1].id == state.messages[-1].id or isinstance(state.messages[-1], ToolMessage)
    assert any(isinstance(m, HumanMessage) for m in request[1:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=states(), ctx=contexts())
def test_every_request_is_within_budget_and_well_formed(state: State, ctx: Context) -> None:
    request, usage = render(state, ctx, counter_for(ctx.model))
    check_request(request, state, ctx)
    texts = " ".join(str(m.content) for m in request[1:])
    event("a message shortened" if "omitted by mneme" in texts else "nothing shortened")
    event("tool rounds left out" if "tool call round" in texts else "every tool round kept")
    event("older turns left out" if len(request) - 1 < len(state.messages) else "whole thread sent")
    assert usage["total"] + ctx.budget_output <= ctx.context_window
    for part in ("summary", "memory", "history"):
        assert usage[part] <= ctx.part_budget(part)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=states(), ctx=contexts())
def test_the_agent_sends_exactly_such_requests(state: State, ctx: Context) -> None:
    model = ScriptedChatModel.script("ok")
    make_agent(model, [])(state, runtime=Runtime(context=ctx, store=InMemoryStore()))
    [request] = model.seen
    check_request(request, state, ctx)
