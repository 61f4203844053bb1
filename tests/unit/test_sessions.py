"""The Sessions API: list, show, resume and delete a user's threads, never another user's."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.errors import NotFoundError
from mneme.graph import build_graph
from mneme.memory.api import Memory
from mneme.sessions import SessionDetail, Sessions


def _chat(graph: Any, user: str, thread: str, text: str) -> dict[str, Any]:
    return graph.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


@pytest.fixture
def setup(mem_store: InMemoryStore) -> tuple[Any, Sessions]:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    return graph, Sessions(saver, mem_store)


def test_list_shows_each_session_newest_first(setup: tuple[Any, Sessions]) -> None:
    graph, sessions = setup
    _chat(graph, "alice", "a1", "我的订单号是20240508001，发货了吗？")
    _chat(graph, "alice", "a1", "谢谢")
    _chat(graph, "alice", "a2", "hello")
    _chat(graph, "bob", "b1", "hi")
    infos = sessions.list(user_id="alice")
    assert [s.thread_id for s in infos] == ["a2", "a1"]
    a1 = infos[1]
    assert a1.turns == 2 and a1.title.startswith("我的订单号是20240508001")
    assert a1.created_at <= a1.updated_at
    assert [s.thread_id for s in sessions.list(user_id="bob")] == ["b1"]
    assert sessions.list(user_id="carol") == []
    dumped = a1.model_dump(mode="json")
    assert dumped["thread_id"] == "a1" and dumped["user_id"] == "alice"


def test_get_returns_messages_summary_and_task(setup: tuple[Any, Sessions]) -> None:
    graph, sessions = setup
    _chat(graph, "alice", "a1", "我的订单号是20240508001，发货了吗？")
    detail = sessions.get("a1", user_id="alice")
    assert isinstance(detail, SessionDetail)
    roles = [m.role for m in detail.messages]
    assert roles[0] == "user" and roles[-1] == "assistant"
    assert "tool" in roles  # the order lookup and its result
    call = next(m for m in detail.messages if m.tool_calls)
    result = next(m for m in detail.messages if m.role == "tool")
    assert result.tool_call_id == call.tool_calls[0]["id"]
    assert detail.task["slots"]["order_id"] == "20240508001"
    assert detail.model_dump(mode="json")["messages"][0]["content"].startswith("我的订单号")


def test_another_users_or_unknown_thread_is_not_found(setup: tuple[Any, Sessions]) -> None:
    graph, sessions = setup
    _chat(graph, "alice", "a1", "hello")
    for call in (
        lambda: sessions.get("a1", user_id="bob"),
        lambda: sessions.delete("a1", user_id="bob"),
        lambda: sessions.resume("a1", user_id="bob"),
        lambda: sessions.get("nope", user_id="alice"),
    ):
        with pytest.raises(NotFoundError, match="mneme: no session"):
            call()
    assert sessions.get("a1", user_id="alice").turns == 1  # bob's attempt deleted nothing


def test_resume_continues_the_same_thread(setup: tuple[Any, Sessions]) -> None:
    graph, sessions = setup
    _chat(graph, "alice", "a1", "我的订单号是20240508001")
    config = sessions.resume("a1", user_id="alice")
    out = graph.invoke({"messages": [{"role": "user", "content": "发货了吗？"}]}, config)
    assert "20240508001" in out["messages"][-1].content
    assert sessions.get("a1", user_id="alice").turns == 2


def test_delete_leaves_other_sessions_and_long_term_memory(
    setup: tuple[Any, Sessions], mem_store: InMemoryStore
) -> None:
    graph, sessions = setup
    _chat(graph, "alice", "a1", "我不吃辣")
    _chat(graph, "alice", "a2", "麻烦以后都发顺丰")
    before = {r.text for r in Memory(mem_store).get_all(user_id="alice")}
    assert "不吃辣" in before
    sessions.delete("a1", user_id="alice")
    assert [s.thread_id for s in sessions.list(user_id="alice")] == ["a2"]
    with pytest.raises(NotFoundError):
        sessions.get("a1", user_id="alice")
    assert sessions.state("a1") == {}
    assert sessions.get("a2", user_id="alice").messages
    assert {r.text for r in Memory(mem_store).get_all(user_id="alice")} == before


def test_delete_can_forget_the_sessions_episodes(
    setup: tuple[Any, Sessions], mem_store: InMemoryStore
) -> None:
    graph, sessions = setup
    memory = Memory(mem_store)
    memory.add("我们聊了退货的流程", user_id="alice", session_id="a1", infer=False)
    memory.add("我们聊了天气", user_id="alice", session_id="a2", infer=False)
    _chat(graph, "alice", "a1", "hello")
    _chat(graph, "alice", "a2", "hello")
    sessions.delete("a1", user_id="alice", forget_episodes=True)
    episodes = [r.text for r in memory.get_all(user_id="alice", kinds=["episodic"])]
    assert episodes == ["我们聊了天气"]
