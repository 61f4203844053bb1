"""The debug switch: the exact model requests, with tokens per part, in a log a user can find."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import messages_from_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.debuglog import DEBUG_FILE, debug_path, read
from mneme.graph import build_graph
from tests.fakes import ScriptedChatModel, tool_call


def _run(store: InMemoryStore, model: ScriptedChatModel, **ctx: object) -> None:
    graph = build_graph(model=model, checkpointer=InMemorySaver(), store=store)
    graph.invoke(
        {"messages": [{"role": "user", "content": "我的订单号20240508001发货了吗"}]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": "user_123", **ctx},
    )


def test_debug_log_holds_every_request_exactly_as_sent(mem_store: InMemoryStore, tmp_path: Path) -> None:
    log = tmp_path / "prompts.jsonl"
    model = ScriptedChatModel.script(tool_call("lookup_order", {"order_id": "20240508001"}), "已发货")
    _run(mem_store, model, debug=True, debug_path=str(log))
    rows = read(log)
    assert [r["stage"] for r in rows] == ["build_context", "agent", "agent"]
    sent = [r for r in rows if r["stage"] == "agent"]
    for row, seen in zip(sent, model.seen, strict=True):
        assert [m.content for m in messages_from_dict(row["messages"])] == [m.content for m in seen]
        assert row["user_id"] == "user_123" and row["thread_id"] == "t1"
        usage = row["usage"]
        assert set(usage) >= {"system", "summary", "memory", "history", "output_reserve", "total"}
    assert sent[1]["messages"][-1]["type"] == "tool"  # the second call carried the tool result


def test_debug_is_off_by_default_and_on_with_the_env_var(
    mem_store: InMemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_HOME", str(tmp_path / "home"))
    _run(mem_store, ScriptedChatModel.script("ok"))
    default = tmp_path / "home" / DEBUG_FILE
    assert not default.exists()
    monkeypatch.setenv("MNEME_DEBUG", "1")
    assert debug_path(Context()) == default
    _run(mem_store, ScriptedChatModel.script("ok"))
    assert [r["stage"] for r in read(default)] == ["build_context", "agent"]
