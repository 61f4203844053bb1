"""Session summaries: stored as episodic memory when a session ends, shown when the next one starts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.graph import build_graph
from mneme.memory.api import Memory
from mneme.sessions import Sessions
from tests.fakes import ScriptedChatModel

ORDER = "我的订单号是20240508001，发货了吗？"


def _ask(graph: Any, user: str, thread: str, text: str, **ctx: Any) -> dict[str, Any]:
    return graph.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user, **ctx},
    )


def _recap_memories(store: InMemoryStore, user: str) -> list[Any]:
    episodes = Memory(store).get_all(user_id=user, kinds=["episodic"])
    return [r for r in episodes if r.metadata.get("source") == "session_summary"]


def test_a_new_session_starts_with_last_sessions_summary(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    offline = build_graph(model="offline", checkpointer=saver, store=mem_store)
    _ask(offline, "user_123", "s1", ORDER)  # looked up: shipped, in transit
    assert _recap_memories(mem_store, "user_123") == []  # the session is still going on

    model = ScriptedChatModel.script("您好！")
    scripted = build_graph(model=model, checkpointer=saver, store=mem_store)
    out = _ask(scripted, "user_123", "s2", "你好")
    [stored] = _recap_memories(mem_store, "user_123")  # s1 ended when s2 began
    assert "20240508001" in stored.text and "已发货" in stored.text and stored.source.thread_id == "s1"
    assert [r["thread_id"] for r in out["recaps"]] == ["s1"]
    system = model.seen[0][0]
    assert isinstance(system, SystemMessage)
    assert "<previous_sessions>" in system.content and "20240508001" in system.content
    assert out["token_usage"]["memory"] <= 768
    # The summary is the session's own: topic, facts and what was settled.
    assert (
        "主题：订单状态" in stored.text and "要点：订单号 20240508001" in stored.text
    )  # in the user's language
    assert "待办：查询订单 20240508001 的状态" in stored.text


def test_other_users_never_see_the_summary(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    offline = build_graph(model="offline", checkpointer=saver, store=mem_store)
    _ask(offline, "alice", "a1", ORDER)
    model = ScriptedChatModel.script("hi")
    out = _ask(build_graph(model=model, checkpointer=saver, store=mem_store), "bob", "b1", "hello")
    assert out["recaps"] == []
    assert "20240508001" not in model.seen[0][0].content
    assert _recap_memories(mem_store, "bob") == []


def test_a_forgotten_summary_is_not_loaded_again(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    _ask(graph, "alice", "a1", ORDER)
    sessions = Sessions(saver, mem_store)
    info = sessions.end("a1", user_id="alice")
    assert info.ended_at and "20240508001" in info.recap
    [stored] = _recap_memories(mem_store, "alice")
    Memory(mem_store).delete(stored.id, user_id="alice")
    out = _ask(graph, "alice", "a2", "你好")
    assert out["recaps"] == []


def test_ending_again_updates_the_same_memory(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    sessions = Sessions(saver, mem_store)
    _ask(graph, "alice", "a1", ORDER)
    sessions.end("a1", user_id="alice")
    _ask(graph, "alice", "a1", "地址改为上海市浦东新区世纪大道100号")
    sessions.end("a1", user_id="alice")
    [stored] = _recap_memories(mem_store, "alice")
    assert "上海市浦东新区[address" in stored.text and "20240508001" in stored.text  # the street is masked
    assert "世纪大道100号" not in stored.text
    assert sessions.close_idle(user_id="alice", idle_for=timedelta(0)) == []  # nothing new to store


def test_idle_sessions_are_closed_by_the_api(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    _ask(graph, "alice", "a1", ORDER)
    sessions = Sessions(saver, mem_store)
    assert sessions.close_idle(user_id="alice", idle_for=timedelta(hours=1)) == []  # not idle yet
    assert sessions.close_idle(user_id="alice", idle_for=timedelta(0)) == ["a1"]
    assert len(_recap_memories(mem_store, "alice")) == 1


def test_recaps_can_be_switched_off(mem_store: InMemoryStore) -> None:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    _ask(graph, "alice", "a1", ORDER)
    out = _ask(graph, "alice", "a2", "你好", recap_sessions=0)
    assert out["recaps"] == [] and _recap_memories(mem_store, "alice") == []


def test_a_recap_is_written_in_the_language_of_the_session() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from mneme.recap import recap_text

    task = {
        "intent": "return",
        "slots": {"order_id": "20240508001"},
        "pending_action": "explain how to return order 20240508001",
    }
    zh = recap_text(
        title="你好，我昨天买了一个蓝牙耳机，发货了吗？",
        summary="",
        task=task,
        messages=[HumanMessage("发货了吗？"), AIMessage("您的订单 20240508001 已发货。")],
    )
    assert (
        zh.startswith("会话「你好，我昨天买了一个蓝牙耳机") and "主题：退货。要点：订单号 20240508001" in zh
    )
    assert "待办：说明订单 20240508001 如何退货" in zh and "Topic" not in zh and "explain" not in zh
    en = recap_text(title="Where is my order?", summary="", task=task, messages=[])
    assert en.startswith('Session "Where is my order?". Topic: return. Facts: order_id 20240508001.')
    assert en.endswith("Open: explain how to return order 20240508001.")
    asking = {"intent": "order_status", "slots": {}, "pending_action": "ask for the order id"}
    waiting = recap_text(title="我的快递到哪了？", summary="", task=asking, messages=[])
    assert "待办：问清订单号" in waiting and "ask for" not in waiting  # before the id is given


@pytest.mark.parametrize(
    ("fact", "asked", "later", "gone"),
    [
        (
            "I don't drink, been sober 3 yrs now",
            "can you forget the stuff about me not drinking? kinda private",
            "any good bars around for friday?",
            "sober",
        ),
        ("我对花生过敏，一点都不能碰", "花生过敏那个事你就别记了", "帮我挑点下午茶零食", "花生"),
        (  # the request reads more like the recap than like the fact: the fact it quotes goes
            "I've been learning the cello for about two years now",
            "the cello stuff from before, don't keep that around",
            "any ideas for a new hobby I could pick up?",
            "cello",
        ),
    ],
)
def test_a_fact_forgotten_in_a_later_session_is_gone_from_memory_and_from_every_recap(
    tmp_path: Path, fact: str, asked: str, later: str, gone: str
) -> None:
    graph = build_graph(model="offline", home=tmp_path)
    _ask(graph, "u", "a", fact)
    # the first session's recap quotes the fact: the request is about the fact, not the recap
    deleted = [w for w in _ask(graph, "u", "b", asked)["writes"] if w["operation"] == "DELETE"]
    assert [w["text"] for w in deleted] == [fact]
    assert _ask(graph, "u", "c", later)["memories"] == []
    memory = Memory(graph.store)
    left = [r.text for r in memory.get_all(user_id="u")]
    assert not [t for t in left if gone in t]  # the aside ("kinda private") is no memory either
    assert not [t for t in left if "private" in t]
    shown = [f"{s.title} {s.recap}" for s in Sessions(graph.checkpointer, graph.store).list(user_id="u")]
    assert len(shown) == 3 and not [t for t in shown if gone in t]
