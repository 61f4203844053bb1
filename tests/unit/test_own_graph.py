"""A user's own `StateGraph` built from scratch with mneme's nodes: memory across sessions."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme.nodes import build_context, ingest, make_extract_memories, model_input, retrieve_memories
from mneme.state import MemoryState
from tests.fakes import ScriptedChatModel


class MyState(MemoryState):
    mood: str


def my_graph(model: ScriptedChatModel, store: InMemoryStore, *, with_ingest: bool) -> Any:
    def my_agent(state: MyState, runtime: Runtime[Any]) -> dict[str, Any]:
        reply = model.invoke(model_input(state, runtime, system_prompt="You are Mia, a travel agent."))
        return {"messages": [reply], "mood": "helpful"}

    builder = StateGraph(MyState)
    first = "ingest" if with_ingest else "retrieve_memories"
    if with_ingest:
        builder.add_node(ingest)
        builder.add_edge(START, "ingest")
        builder.add_edge("ingest", "retrieve_memories")
    builder.add_node(retrieve_memories)
    builder.add_node(build_context)
    builder.add_node(my_agent)
    builder.add_node(make_extract_memories(None))
    if first == "retrieve_memories":
        builder.add_edge(START, "retrieve_memories")
    builder.add_edge("retrieve_memories", "build_context")
    builder.add_edge("build_context", "my_agent")
    builder.add_edge("my_agent", "extract_memories")
    builder.add_edge("extract_memories", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


@pytest.mark.parametrize("with_ingest", [False, True])
@pytest.mark.parametrize(
    ("said", "asked", "remembered"),
    [
        ("我对花生过敏，以后订餐注意", "订餐的时候要注意花生吗？", "花生过敏"),
        ("I am allergic to peanuts", "Should the meal avoid peanuts?", "allergic to peanuts"),
    ],
)
def test_a_hand_built_graph_remembers_across_sessions(
    mem_store: InMemoryStore, said: str, asked: str, remembered: str, with_ingest: bool
) -> None:
    model = ScriptedChatModel.script("noted", "sure", "sure")
    graph = my_graph(model, mem_store, with_ingest=with_ingest)
    out = graph.invoke(
        {"messages": [{"role": "user", "content": said}], "mood": "new"},
        {"configurable": {"thread_id": "s1"}},
        context={"user_id": "ana"},
    )
    assert out["mood"] == "helpful"  # the user's own keys live beside mneme's
    assert [w["operation"] for w in out["writes"]] == ["ADD"]
    assert remembered in out["writes"][0]["text"].lower() or remembered in out["writes"][0]["text"]

    out = graph.invoke(
        {"messages": [{"role": "user", "content": asked}]},
        {"configurable": {"thread_id": "s2"}},
        context={"user_id": "ana"},
    )
    system = model.seen[1][0]
    assert isinstance(system, SystemMessage) and system.content.startswith("You are Mia")
    assert remembered in out["prompt"]["memory_block"].lower() or remembered in out["prompt"]["memory_block"]
    assert out["prompt"]["memory_block"] in system.content
    assert bool(out.get("recaps")) is with_ingest  # earlier sessions' recaps come with `ingest`

    graph.invoke(
        {"messages": [{"role": "user", "content": asked}]},
        {"configurable": {"thread_id": "s3"}},
        context={"user_id": "ben"},
    )
    assert "<memories>" not in str(model.seen[2][0].content)  # nothing of ana's reaches ben


def test_the_nodes_refuse_a_run_without_a_user(mem_store: InMemoryStore) -> None:
    graph = my_graph(ScriptedChatModel.script("hi"), mem_store, with_ingest=False)
    with pytest.raises(Exception, match="user"):
        graph.invoke({"messages": [{"role": "user", "content": "hi"}]}, {"configurable": {"thread_id": "x"}})
