"""The budget: parts filled in a configurable order, a pinned system prompt, tool rounds kept whole."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from mneme.context import Context
from mneme.errors import InputError
from mneme.nodes.build_context import render
from mneme.state import State
from mneme.tokens import counter_for
from mneme.window import fit_messages, pair_tools

COUNTER = counter_for("openai:gpt-4o-mini")


def _memories(n: int) -> list[dict]:
    return [
        {
            "ref": i,
            "id": f"m{i}",
            "who": "",
            "kind": "semantic",
            "text": f"fact number {i} " * 8,
            "score": 0.5,
        }
        for i in range(1, n + 1)
    ]


def _chat(turns: int, words: int = 60) -> list[AnyMessage]:
    msgs: list[AnyMessage] = []
    for i in range(turns):
        msgs += [
            HumanMessage(content=f"question {i} " + "word " * words, id=f"h{i}"),
            AIMessage(content=f"answer {i} " + "word " * words, id=f"a{i}"),
        ]
    return msgs


def _round(n_calls: int, result_words: int, tag: str) -> list[AnyMessage]:
    calls = [
        {"name": "lookup_order", "args": {"order_id": f"{tag}{k}"}, "id": f"{tag}c{k}", "type": "tool_call"}
        for k in range(n_calls)
    ]
    return [
        AIMessage(content="", tool_calls=calls, id=f"{tag}ai"),
        *(
            ToolMessage(content="status shipped " * result_words, tool_call_id=c["id"], id=f"{tag}r{k}")
            for k, c in enumerate(calls)
        ),
    ]


def test_the_fill_order_decides_which_part_is_cut_when_the_window_is_tight() -> None:
    state = State(messages=_chat(30), memories=_memories(60))
    common = {"model": "openai:gpt-4o-mini", "context_window": 3000, "budget_output": 500}
    common |= {"budget_memory": 1500, "budget_history": 1500, "budget_summary": 0}
    memory_first = Context(budget_order="system,memory,summary,history", **common)
    history_first = Context(budget_order="system,history,summary,memory", **common)
    _, a = render(state, memory_first, COUNTER)
    _, b = render(state, history_first, COUNTER)
    assert a["memory"] > b["memory"] and a["history"] < b["history"]
    for usage in (a, b):
        assert usage["total"] + 500 <= 3000


def test_parts_are_laid_out_in_the_fill_order_after_the_system_prompt() -> None:
    state = State(messages=_chat(1), memories=_memories(1), summary="earlier: order 20240508001")
    for order, first in (
        ("system,summary,memory,history", "<summary>"),
        ("system,memory,summary,history", "<memories>"),
    ):
        [system, *_], _ = render(state, Context(budget_order=order), COUNTER)
        body = system.content
        assert body.startswith(Context().system_prompt.split("{time}")[0])
        assert min(body.find("<summary>"), body.find("<memories>")) == body.find(first)


@pytest.mark.parametrize(
    "order",
    ["summary,system,memory,history", "system,memory,history", "system,summary,memory,history,history"],
)
def test_a_bad_fill_order_is_refused_clearly(order: str) -> None:
    with pytest.raises(InputError, match="mneme: budget_order"):
        Context(budget_order=order)


def test_parts_may_add_up_to_more_than_the_window_but_the_system_prompt_and_reply_must_fit() -> None:
    Context(context_window=4096)  # the defaults add up to 7424: the order decides what is cut
    assert Context(context_window=4096).history_budget() == 4096 - 1024 - 1024 - 512 - 768
    with pytest.raises(InputError, match="system prompt and the reply must always fit"):
        Context(context_window=1500, budget_system=1024, budget_output=1024)


def test_the_system_prompt_is_never_cut() -> None:
    prompt = "You are a careful agent. " * 200
    ctx = Context(system_prompt=prompt, budget_system=2000, context_window=5000, budget_history=1000)
    [system, *_], _ = render(State(messages=_chat(40)), ctx, COUNTER)
    assert system.content.startswith(prompt)
    with pytest.raises(InputError, match=r"the system prompt has .* tokens, more than budget_system=500"):
        render(State(messages=_chat(1)), Context(system_prompt=prompt, budget_system=500), COUNTER)


def test_a_single_huge_message_is_shortened_with_a_marker_not_dropped() -> None:
    big = "line of a pasted log file\n" * 5000
    state = State(messages=[*_chat(3), HumanMessage(content=big, id="big")])
    request, usage = render(state, Context(budget_history=800), COUNTER)
    assert request[-1].id == "big" and "omitted by mneme" in request[-1].content
    assert request[-1].content.startswith("line of a pasted log file")
    assert usage["history"] <= 800
    assert state.messages[-1].content == big  # the checkpointed message is untouched


def test_parallel_tool_calls_stay_with_all_their_results_or_go_together() -> None:
    msgs = [*_chat(5), HumanMessage(content="where are my orders?", id="q"), *_round(3, 40, "x")]
    for budget in range(200, 2000, 50):
        window = fit_messages(msgs, budget, COUNTER)
        calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in window if isinstance(m, ToolMessage)}
        assert calls == results == {"xc0", "xc1", "xc2"}  # the newest turn keeps its round whole
        assert sum(COUNTER.count_message(m) for m in window) <= budget


def test_a_newest_turn_of_many_tool_rounds_under_a_tiny_budget() -> None:
    """Decided: shorten results, then leave out the oldest rounds whole, with a note.

    The user message and the latest round always stay; if even they cannot fit, a clear error.
    """
    turn: list[AnyMessage] = [HumanMessage(content="check all my orders", id="q")]
    for r in range(8):
        turn += _round(2, 200, f"r{r}")
    window = fit_messages(turn, 300, COUNTER)
    assert sum(COUNTER.count_message(m) for m in window) <= 300
    assert window[0].id == "q" and "earlier tool call round(s) of this turn omitted" in window[0].content
    ids = [m.id for m in window[1:]]
    kept = sorted({i[:2] for i in ids})
    assert kept[-1] == "r7" and len(kept) < 8  # the latest rounds, the oldest left out
    assert ids == [f"{r}{s}" for r in kept for s in ("ai", "r0", "r1")]  # each round whole
    assert "omitted by mneme" in window[-1].content  # its results shortened with a marker
    with pytest.raises(InputError, match=r"mneme: the newest turn needs at least .* raise budget_history"):
        fit_messages([HumanMessage(content="q", id="q"), *_round(12, 50, "big")], 150, COUNTER)


def test_interrupted_tool_calls_and_stray_results_never_reach_the_model() -> None:
    interrupted = AIMessage(
        content="let me check",
        id="i",
        tool_calls=[{"name": "lookup_order", "args": {}, "id": "lost", "type": "tool_call"}],
    )
    msgs = [
        HumanMessage(content="a", id="h1"),
        interrupted,
        ToolMessage(content="stray", tool_call_id="nobody", id="s"),
        HumanMessage(content="b", id="h2"),
        *_round(2, 3, "ok"),
    ]
    out = pair_tools(msgs)
    assert [m.id for m in out] == ["h1", "i", "h2", "okai", "okr0", "okr1"]
    assert out[1].tool_calls == [] and out[1].content == "let me check"
    assert interrupted.tool_calls  # the stored message is untouched


def test_memories_can_sit_next_to_the_user_input_within_their_budget() -> None:
    state = State(messages=_chat(3), memories=_memories(30))
    request, usage = render(state, Context(memory_position="user", budget_memory=300), COUNTER)
    assert "<memories>" not in request[0].content
    assert request[-2].content.startswith("<memories>") and request[-2].id == "h2"
    assert 0 < usage["memory"] <= 300
