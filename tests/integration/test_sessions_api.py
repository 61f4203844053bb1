"""Sessions on the real defaults: list, show, end, delete; the next session starts from the last one."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import messages_from_dict

from mneme import Memory, build_graph
from mneme.debuglog import read
from mneme.errors import NotFoundError
from mneme.sessions import Sessions

pytestmark = pytest.mark.integration


def say(graph, text: str, thread: str, user: str, **ctx: object) -> dict:
    return graph.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user, **ctx},
    )


def test_sessions_through_the_api_on_a_real_home(home: Path, tmp_path: Path) -> None:
    graph = build_graph(home=home)
    say(graph, "你好，我昨天买了一个蓝牙耳机，订单号20240508001，发货了吗？", "s1", "user_123")
    say(graph, "麻烦以后都发顺丰。", "s1", "user_123")
    log = tmp_path / "prompts.jsonl"
    say(graph, "你好", "s2", "user_123", debug=True, debug_path=str(log))
    say(graph, "hello", "x1", "user_456")

    with Sessions.open(home) as sessions:
        infos = sessions.list(user_id="user_123")
        assert [s.thread_id for s in infos] == ["s2", "s1"]
        assert infos[1].turns == 2 and infos[1].ended_at is not None  # ended when s2 began
        detail = sessions.get("s1", user_id="user_123")
        assert detail.task["slots"]["order_id"] == "20240508001"
        assert [m.role for m in detail.messages][:2] == ["user", "assistant"]
        with pytest.raises(NotFoundError):
            sessions.get("s1", user_id="user_456")

        # The new session started with the last one's summary in the model's input.
        system = messages_from_dict(read(log)[-1]["messages"])[0].content
        assert "<previous_sessions>" in system and "20240508001" in system and "已发货" in system

        memories_before = {r.id for r in Memory(graph.store).get_all(user_id="user_123")}
        sessions.delete("s2", user_id="user_123")
        assert [s.thread_id for s in sessions.list(user_id="user_123")] == ["s1"]
        assert {r.id for r in Memory(graph.store).get_all(user_id="user_123")} == memories_before
        assert [s.thread_id for s in sessions.list(user_id="user_456")] == ["x1"]

        sessions.delete("s1", user_id="user_123", forget_episodes=True)
        left = Memory(graph.store).get_all(user_id="user_123")
        assert not any(r.kind == "episodic" and r.source.thread_id == "s1" for r in left)
        assert any("顺丰" in r.text for r in left)  # long-term facts stay
        assert sessions.list(user_id="user_123") == []
