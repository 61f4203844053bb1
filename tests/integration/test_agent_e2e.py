"""The agent on the real embedded defaults: local embeddings, Chroma on disk, SQLite checkpoints."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mneme import Memory, build_graph
from mneme.errors import HomeLockedError, InputError
from mneme.home import open_home

pytestmark = pytest.mark.integration


def say(graph, text: str, thread: str, user: str) -> dict:
    return graph.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


def test_multi_turn_continuity_in_one_thread(home: Path) -> None:
    g = build_graph(home=home)
    say(g, "我的订单号是20240508001", "t1", "user_123")
    out = say(g, "它发货了吗？", "t1", "user_123")
    assert "20240508001" in out["messages"][-1].content and "已发货" in out["messages"][-1].content
    assert [m.type for m in out["messages"]][:2] == ["human", "ai"]
    assert len(g.get_state({"configurable": {"thread_id": "t1"}}).values["messages"]) == len(out["messages"])


def test_cross_session_recall_for_the_same_user_and_none_across_users(home: Path) -> None:
    g = build_graph(home=home)
    say(g, "你好，我昨天买了一个蓝牙耳机，订单号20240508001，发货了吗？", "s1", "user_123")
    say(g, "麻烦以后都发顺丰。", "s1", "user_123")
    out = say(g, "我之前那个耳机如果退货怎么处理？", "s2", "user_123")
    injected = [m["text"] for m in out["memories"]]
    assert any("20240508001" in t for t in injected) and any("顺丰" in t for t in injected)
    reply = out["messages"][-1].content
    assert "20240508001" in reply and "顺丰" in reply
    other = say(g, "我之前那个耳机如果退货怎么处理？", "s3", "user_456")
    assert other["memories"] == []
    assert "20240508001" not in other["messages"][-1].content and "顺丰" not in other["messages"][-1].content


def test_data_survives_closing_and_reopening_in_a_new_process(tmp_path: Path) -> None:
    home = tmp_path / "h"
    write = f"""
        from mneme import build_graph
        g = build_graph(home={str(home)!r})
        g.invoke({{"messages": [{{"role": "user", "content": "我不吃辣，麻烦以后都发顺丰"}}]}},
                 {{"configurable": {{"thread_id": "t"}}}}, context={{"user_id": "alice"}})
    """
    read = f"""
        from mneme import Memory, build_graph
        g = build_graph(home={str(home)!r})
        state = g.get_state({{"configurable": {{"thread_id": "t"}}}}).values
        print(len(state["messages"]))
        print(sorted(r.text for r in Memory.open({str(home)!r}).get_all(user_id="alice")))
    """
    for code in (write, read):
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180
        )
        assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "2"
    assert "不吃辣" in lines[1] and "快递偏好：以后都发顺丰" in lines[1]


def test_second_process_on_the_same_home_is_refused_clearly(home: Path) -> None:
    opened = open_home(home)
    try:
        code = f"from mneme import Memory\nMemory.open({str(home)!r})"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode != 0
        assert HomeLockedError.__name__ in out.stderr and "in use by process" in out.stderr
    finally:
        opened.close()


def test_bad_input_gets_clear_errors_and_loses_nothing(home: Path) -> None:
    g = build_graph(home=home)
    say(g, "我不吃辣", "t", "bob")
    before = g.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    with pytest.raises(InputError, match="empty"):
        say(g, "   ", "t", "bob")
    with pytest.raises(InputError, match="user_id is required"):
        g.invoke({"messages": [{"role": "user", "content": "hi"}]}, {"configurable": {"thread_id": "t"}})
    big = "这是一段很长的粘贴内容。" * 90_000  # about 1 MB of UTF-8
    out = say(g, big, "t", "bob")
    assert out["token_usage"]["total"] + 1024 <= 8192  # shortened into the budget, not sent whole
    assert out["messages"][-1].type == "ai"
    after = g.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    assert all(m.content.strip() for m in after if m.type == "human")  # the refused empty input is gone
    # The huge turn pushed the first one out of the window: it was folded, not lost.
    kept_in_thread = [m.id for m in before if m.id in {a.id for a in after}]
    memory = Memory.open(home)
    episodes = [r.text for r in memory.get_all(user_id="bob", kinds=["episodic"])]
    assert kept_in_thread == [m.id for m in before] or any("我不吃辣" in e for e in episodes)
    assert [r.text for r in memory.get_all(user_id="bob", kinds=["semantic"])] == ["不吃辣"]
    fresh = g.get_state({"configurable": {"thread_id": "never-used"}})
    assert fresh.values == {} and fresh.next == ()
