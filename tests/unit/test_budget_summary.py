"""The running summary: extractive offline, LLM otherwise (prompt as data), never losing a turn."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme import prompts
from mneme.context import Context
from mneme.memory.repo import Repo
from mneme.nodes import make_summarize
from mneme.nodes.summarize import extractive_summary
from mneme.state import State
from mneme.tokens import counter_for
from tests.fakes import ScriptedChatModel

COUNTER = counter_for("offline")


def rt(store: InMemoryStore, **ctx: Any) -> Runtime[Context]:
    return Runtime(context=Context(user_id="u1", **ctx), store=store)


def _thread(turns: int) -> list:
    msgs: list = [
        HumanMessage(
            content="I'm Marie Dubois, my order number is 20240508001, bought on 2024-05-08", id="h0"
        ),
        AIMessage(content="Thanks Marie, we agreed to ship it with SF Express.", id="a0"),
    ]
    for i in range(1, turns):
        msgs += [
            HumanMessage(
                content=f"just chatting about the weather, turn {i}, nice and sunny " * 3, id=f"h{i}"
            ),
            AIMessage(content="Sounds lovely, enjoy the sunshine " * 4, id=f"a{i}"),
        ]
    return msgs


def test_extractive_summary_keeps_names_numbers_ids_dates_and_decisions() -> None:
    lines = [
        "User: hello there, how are you",
        "User: I'm Marie Dubois and my order number is 20240508001",
        "User: it was bought on 2024-05-08 for 299元",
        "Assistant: we decided to refund it to your card",
        "User: lovely weather today",
    ]
    summary = extractive_summary("", lines, 200, COUNTER)
    for kept in ("Marie Dubois", "20240508001", "2024-05-08", "299元", "decided to refund"):
        assert kept in summary
    assert "lovely weather" not in summary and "how are you" not in summary


def test_when_the_summary_is_full_the_task_values_outlive_everything_else() -> None:
    old = "- User: my order number is 20240508001"
    noise = [f"User: Paris trip {i} on 2024-06-{i:02d} costs {100 + i} dollars" for i in range(1, 29)]
    summary = extractive_summary(old, noise, 120, COUNTER, pinned=["20240508001"])
    assert COUNTER.count(summary) <= 120
    assert "20240508001" in summary


def test_llm_summarizer_uses_the_prompt_and_the_task_values(mem_store: InMemoryStore) -> None:
    model = ScriptedChatModel.script("Marie Dubois, order 20240508001 (2024-05-08), ships with SF Express.")
    state = State(messages=_thread(30), task={"slots": {"order_id": "20240508001"}, "intent": "order_status"})
    out = make_summarize(model)(state, runtime=rt(mem_store, budget_history=600))
    assert out["summary"] == "Marie Dubois, order 20240508001 (2024-05-08), ships with SF Express."
    [[prompt]] = model.seen
    head = prompts.SUMMARIZE_PROMPT.split("{keep}")[0]
    assert prompt.content.startswith(head) and "20240508001" in prompt.content
    assert "I'm Marie Dubois" in prompt.content  # the excerpt of the folded turns


def test_a_failing_llm_summarizer_falls_back_and_loses_nothing(mem_store: InMemoryStore) -> None:
    class Broken(ScriptedChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("provider down")

    state = State(messages=_thread(30))
    out = make_summarize(Broken.script())(state, runtime=rt(mem_store, budget_history=600))
    assert "20240508001" in out["summary"]  # the extractive summary took over
    removed = {m.id for m in out["messages"] if isinstance(m, RemoveMessage)}
    episodes = Repo(mem_store).records("u1", ["episodic"])
    assert "h0" in removed and any("20240508001" in e.text for e in episodes)


def test_summarizing_keeps_the_history_under_its_budget(mem_store: InMemoryStore) -> None:
    state = State(messages=_thread(60))
    out = make_summarize("offline")(state, runtime=rt(mem_store, budget_history=800))
    removed = {m.id for m in out["messages"]}
    left = [m for m in state.messages if m.id not in removed]
    assert isinstance(left[0], HumanMessage)
    assert sum(COUNTER.count_message(m) for m in left) <= 800 * 0.5 + 200  # folded to about half
    assert COUNTER.count(out["summary"]) <= Context().budget_summary
