"""Memory tools: refs the model sees are validated, never guessed; the user comes from the run."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.memory.api import Memory
from mneme.memory.repo import kind_namespace
from mneme.memory.usage import flush_uses, use_of
from mneme.nodes import make_tools, retrieve_memories
from mneme.state import State
from mneme.toolkit import default_tools
from tests.fakes import tool_call


def run(
    store: InMemoryStore,
    user: str,
    name: str,
    args: dict[str, Any],
    refs: dict[str, str] | None = None,
    **ctx: Any,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Call one tool as the graph's tool node does; return its JSON reply and the refs after it."""
    node = make_tools(default_tools())
    state = {
        "messages": [HumanMessage(content="q", id="h"), tool_call(name, args)],
        "memory_refs": refs or {},
    }
    runtime = Runtime(context=Context(user_id=user, **ctx), store=store)
    out = node.invoke(state, config={"configurable": {"thread_id": "t", "__pregel_runtime": runtime}})
    updates = out if isinstance(out, list) else [out]
    messages = [m for u in updates for m in (u.update["messages"] if hasattr(u, "update") else u["messages"])]
    new_refs = dict(refs or {})
    for u in updates:
        new_refs.update((u.update if hasattr(u, "update") else u).get("memory_refs") or {})
    return json.loads(str(messages[-1].content)), new_refs


def test_search_shows_small_numbers_that_map_back(mem_store: InMemoryStore) -> None:
    memory = Memory(mem_store)
    memory.add("I play the cello every Sunday", user_id="ann")
    reply, refs = run(mem_store, "ann", "search_memory", {"query": "cello on Sundays"})
    [shown] = reply["memories"]
    assert shown["ref"] == 1 and "cello" in shown["text"] and "id" not in shown
    assert memory.get(refs["1"], user_id="ann").text == shown["text"]
    assert flush_uses()
    assert use_of(mem_store, "ann", refs["1"])[0] == 1


def test_update_and_forget_through_refs(mem_store: InMemoryStore) -> None:
    Memory(mem_store).add("I live in Lyon", user_id="ann")
    _, refs = run(mem_store, "ann", "search_memory", {"query": "where do I live"})
    reply, refs = run(mem_store, "ann", "update_memory", {"ref": 1, "text": "Lives in Grenoble"}, refs)
    assert reply["operation"] == "UPDATE" and reply["text"] == "Lives in Grenoble"
    reply, refs = run(mem_store, "ann", "forget_memory", {"ref": 1}, refs)
    assert reply == {"operation": "DELETE", "ref": 1}
    assert Memory(mem_store).get_all(user_id="ann") == []
    reply, _ = run(mem_store, "ann", "forget_memory", {"ref": 1}, refs)
    assert reply["error"] == "memory ref 1 no longer exists"


def test_unknown_refs_are_refused_never_guessed(mem_store: InMemoryStore) -> None:
    Memory(mem_store).add("I live in Lyon", user_id="ann")
    reply, _ = run(mem_store, "ann", "forget_memory", {"ref": 1})
    assert "unknown memory ref 1" in reply["error"]
    reply, _ = run(mem_store, "ann", "update_memory", {"ref": 7, "text": "x"}, {"1": "whatever"})
    assert "unknown memory ref 7" in reply["error"]
    assert [r.text for r in Memory(mem_store).get_all(user_id="ann")] == ["Lives in Lyon"]


def test_a_ref_to_another_users_memory_does_not_resolve(mem_store: InMemoryStore) -> None:
    [change] = Memory(mem_store).add("I live in Lyon", user_id="ann")
    reply, _ = run(mem_store, "bob", "forget_memory", {"ref": 1}, {"1": change.id or ""})
    assert reply["error"] == "memory ref 1 no longer exists"
    assert len(Memory(mem_store).get_all(user_id="ann")) == 1


def test_save_returns_a_ref_and_refuses_bad_input(mem_store: InMemoryStore) -> None:
    reply, refs = run(mem_store, "ann", "save_memory", {"text": "Plays the cello on Sundays"})
    assert reply["operation"] == "ADD" and reply["ref"] == 1 and refs["1"]
    reply, _ = run(mem_store, "ann", "save_memory", {"text": "   "})
    assert "empty" in reply["error"]


def test_sensitive_memories_stay_below_their_level(e5_store: InMemoryStore) -> None:
    mem_store = e5_store
    memory = Memory(mem_store)
    change = memory.save("Has type 2 diabetes and takes insulin twice a day", user_id="ann")
    record = memory.get(change.id or "", user_id="ann")
    mem_store.put(
        kind_namespace("ann", "semantic"), record.id, {**record.to_store(), "sensitivity": 2}, index=["text"]
    )
    reply, _ = run(mem_store, "ann", "search_memory", {"query": "insulin"}, max_sensitivity=1)
    assert reply["memories"] == []
    reply, _ = run(mem_store, "ann", "forget_memory", {"ref": 1}, {"1": record.id}, max_sensitivity=1)
    assert "sensitivity" in reply["error"]
    reply, _ = run(mem_store, "ann", "search_memory", {"query": "insulin"})  # her own chat: shown
    assert [m["text"] for m in reply["memories"]] == ["Has type 2 diabetes and takes insulin twice a day"]
    state = State(messages=[HumanMessage(content="how often do I take insulin", id="h")])
    ctx = Context(user_id="ann", min_relevance=0.0)
    out = retrieve_memories(state, Runtime(context=ctx, store=mem_store))
    assert [m["id"] for m in out["memories"]] == [record.id]
    group = State(messages=state.messages, participants=["ann", "bob"])
    out = retrieve_memories(group, Runtime(context=ctx, store=mem_store))
    assert all(m["id"] != record.id for m in out["memories"])  # everyone in the group reads the reply


def test_injection_limits_and_use_counts(e5_store: InMemoryStore) -> None:
    mem_store = e5_store
    memory = Memory(mem_store)
    for i in range(12):
        memory.add(f"Went hiking on trail number {i} near the lake", user_id="ann", infer=False)
    memory.add("I'm allergic to peanuts", user_id="ann")
    memory.add("I'm vegetarian", user_id="ann")
    state = State(
        messages=[HumanMessage(content="Pack me a lunch for hiking the trails near the lake", id="h")]
    )
    ctx = Context(user_id="ann", retrieval_limit=3, profile_limit=1)
    out = retrieve_memories(state, Runtime(context=ctx, store=mem_store))
    kinds = [m["kind"] for m in out["memories"]]
    assert kinds.count("semantic") == 1 and kinds.count("episodic") == 3  # one of the two diets
    assert out["memory_refs"] == {str(m["ref"]): m["id"] for m in out["memories"]}
    assert flush_uses()
    assert all(use_of(mem_store, "ann", m["id"])[0] == 1 for m in out["memories"])
