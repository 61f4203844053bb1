"""A 300-turn thread on the real defaults: bounded requests, a running summary, nothing forgotten."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import messages_from_dict

from mneme import Memory, build_graph
from mneme.debuglog import read
from mneme.tokens import counter_for

pytestmark = pytest.mark.integration

ORDER = "20240508001"
SMALL_TALK = [
    "今天天气不错，心情也挺好的",
    "这个耳机的音质怎么样？",
    "What colours does the speaker come in?",
    "我周末想去公园走走",
    "有没有适合跑步用的运动耳机推荐？",
    "Thanks, that helps a lot",
    "充电盒大概多久能充满？",
    "我最近在学做饭，挺有意思的",
]


def turn_text(i: int) -> str:
    """What the user says at turn i (1-based): the order id at turn 3, then mostly small talk."""
    if i == 3:
        return f"我的订单号是{ORDER}，是一个蓝牙耳机"
    if i % 50 == 0:
        return "那个订单发货了吗？"  # asks about "that order" without repeating its id
    return f"{SMALL_TALK[i % len(SMALL_TALK)]}（第{i}轮）"


@pytest.mark.timeout(900)  # ~300 turns with real embeddings of every folded turn: 1-3 minutes
def test_the_order_id_from_turn_3_is_known_at_turn_300(home: Path, tmp_path: Path) -> None:
    graph = build_graph(home=home)
    log = tmp_path / "prompts.jsonl"
    ctx: dict[str, Any] = {"user_id": "user_123", "debug": True, "debug_path": str(log)}
    cfg = {"configurable": {"thread_id": "long"}}
    # Long-term retrieval (the read path, ~0.5 s a turn here) is not what this test is about:
    # it is off for the filler turns and on for the last one. Everything else is the default.
    for i in range(1, 300):
        turn = {**ctx, "retrieval_limit": 0}
        graph.invoke({"messages": [{"role": "user", "content": turn_text(i)}]}, cfg, context=turn)
    out = graph.invoke({"messages": [{"role": "user", "content": "我的订单发货了吗？"}]}, cfg, context=ctx)

    # Known at turn 300 through every channel: the reply, the task state, the summary, memory.
    assert ORDER in out["messages"][-1].content and "已发货" in out["messages"][-1].content
    assert out["task"]["slots"]["order_id"] == ORDER
    assert ORDER in out["summary"]
    hits = Memory(graph.store).search(f"订单号{ORDER}", user_id="user_123", kinds=["episodic"], limit=5)
    assert any(ORDER in h.text for h in hits)

    # The checkpointed thread was folded: only recent turns are still messages.
    state = graph.get_state(cfg).values
    humans = [m for m in state["messages"] if m.type == "human"]
    assert 1 <= len(humans) < 100
    assert state["messages"][0].type == "human"

    # Every one of the 300+ model requests stayed within budget, system prompt first, tools paired.
    counter = counter_for("offline")
    requests = [r for r in read(log) if r["stage"] == "agent"]
    assert len(requests) >= 300
    for row in requests:
        messages = messages_from_dict(row["messages"])
        assert messages[0].type == "system" and messages[0].content.startswith("You are a helpful assistant")
        assert counter.count_messages(messages) + 1024 <= 8192
        called = {c["id"] for m in messages if m.type == "ai" for c in m.tool_calls}
        answered = {m.tool_call_id for m in messages if m.type == "tool"}
        assert called == answered
