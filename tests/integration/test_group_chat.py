"""Group chats on the real defaults: facts belong to the speaker who said them, and come back labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import messages_from_dict

from mneme import Memory, build_graph
from mneme.debuglog import read

pytestmark = pytest.mark.integration

ROOM = "team-lunch-chat"


def burst(history: list[tuple[str, str]], trigger: tuple[str, str], day: str) -> dict[str, Any]:
    """A group input: (sender, content) lines, then the line that addressed the bot."""
    lines = [
        {"sender": s, "content": c, "timestamp": f"{day} 12:{i:02d}"} for i, (s, c) in enumerate(history)
    ]
    last = {"sender": trigger[0], "content": trigger[1], "timestamp": f"{day} 12:30"}
    return {"group": {"history": lines, "trigger": last, "bot_name": "lunchbot"}}


def test_alices_fact_comes_back_labelled_as_hers_and_never_reaches_bob(home: Path, tmp_path: Path) -> None:
    graph = build_graph(home=home)
    log = tmp_path / "prompts.jsonl"
    ctx = {"user_id": ROOM, "debug": True, "debug_path": str(log)}

    first = burst(
        [("alice", "我不吃辣，川菜就算了"), ("lunchbot", "好的，记下了"), ("bob", "我都可以")],
        ("bob", "@lunchbot 明天午饭订哪家？"),
        "2024-05-08",
    )
    out = graph.invoke(first, {"configurable": {"thread_id": "lunch-0508"}}, context=ctx)
    assert out["participants"] == ["alice", "bob"]
    merged = out["messages"][0].content
    assert (
        "[2024-05-08 12:00] alice: 我不吃辣" in merged and "好的，记下了" not in merged
    )  # bot lines left out

    memory = Memory(graph.store)
    assert any("不吃辣" in r.text for r in memory.get_all(user_id="alice"))
    assert not any("辣" in r.text for r in memory.get_all(user_id="bob"))
    assert memory.get_all(user_id=ROOM) == []  # never to the group itself

    later = burst(
        [("carol", "今晚聚餐我来订")],
        ("alice", "@lunchbot 推荐一家适合我们的餐厅，有什么口味要注意？"),
        "2024-05-09",
    )
    out = graph.invoke(later, {"configurable": {"thread_id": "dinner-0509"}}, context=ctx)
    injected = {(m["who"], m["text"]) for m in out["memories"]}
    assert any(who == "alice" and "不吃辣" in text for who, text in injected)
    assert not any(who != "alice" and "辣" in text for who, text in injected)
    request = messages_from_dict([r for r in read(log) if r["stage"] == "agent"][-1]["messages"])
    system = request[0].content
    assert any(
        line.startswith("- #") and "[alice]" in line and "不吃辣" in line for line in system.splitlines()
    )

    # Bob, in a group with Alice or alone, never receives her fact.
    third = burst([("alice", "我也在")], ("bob", "@lunchbot 我能吃辣吗？"), "2024-05-10")
    graph.invoke(third, {"configurable": {"thread_id": "lunch-0510"}}, context=ctx)
    assert not any("辣" in r.text for r in memory.get_all(user_id="bob"))
    assert not any("不吃辣" in h.text for h in memory.search("吃辣", user_id="bob", limit=10))


def test_folded_group_turns_are_kept_for_each_speaker_only(home: Path) -> None:
    graph = build_graph(home=home)
    ctx = {"user_id": ROOM, "budget_history": 300, "extraction": "off", "retrieval_limit": 0}
    cfg = {"configurable": {"thread_id": "busy-room"}}
    for day in range(1, 9):
        lines = [
            ("alice", f"第{day}天：我负责订会议室，房间号{100 + day}"),
            ("bob", f"第{day}天：我来带投影仪"),
        ]
        graph.invoke(burst(lines, ("carol", "@lunchbot 记一下分工"), f"2024-05-0{day}"), cfg, context=ctx)
    assert "summary" in graph.get_state(cfg).values and graph.get_state(cfg).values["summary"]
    memory = Memory(graph.store)
    alice = [r.text for r in memory.get_all(user_id="alice", kinds=["episodic"])]
    bob = [r.text for r in memory.get_all(user_id="bob", kinds=["episodic"])]
    assert alice and all("alice:" in t and "bob:" not in t and "投影仪" not in t for t in alice)
    assert bob and all("bob:" in t and "alice:" not in t and "会议室" not in t for t in bob)
    assert memory.get_all(user_id=ROOM) == []


def test_an_allergy_reaches_a_groups_dinner_but_a_confided_pregnancy_stays_out(home: Path) -> None:
    graph = build_graph(home=home)
    said = {
        "lao-li": "我对海鲜过敏，虾蟹都不能碰",
        "nina": "Also I'm pregnant, nobody at work knows yet.",
        "a-fang": "我最近一直在吃降压药，医生让我少喝酒",  # read as drink, holds a medication
    }
    for user, text in said.items():  # each in a one-to-one session of their own
        graph.invoke(
            {"messages": [{"role": "user", "content": text}]},
            {"configurable": {"thread_id": f"{user}-dm"}},
            context={"user_id": user},
        )
    # Any member may address the bot in the group's thread, under their own user id.
    for user, trigger in (
        ("oscar", "@bot 周六晚上聚餐，帮我们订个吃饭的地方"),
        ("lao-li", "@bot 大家几点到？"),
    ):
        out = graph.invoke(
            burst([("lao-li", "周六我有空"), ("nina", "me too")], (user, trigger), "2026-12-05"),
            {"configurable": {"thread_id": "team-room"}},
            context={"user_id": user},
        )
        if user == "oscar":
            shown = {(m["who"], m["text"]) for m in out["memories"]}
            assert any(who == "lao-li" and "海鲜过敏" in text for who, text in shown)
            assert not any("pregnant" in text for _, text in shown)
    health = graph.invoke(
        burst([("nina", "long week")], ("oscar", "@bot any health tips for the team?"), "2026-12-06"),
        {"configurable": {"thread_id": "team-room"}},
        context={"user_id": "oscar"},
    )
    assert not any("pregnant" in m["text"] for m in health["memories"])
    drinks = graph.invoke(
        burst([("a-fang", "好呀")], ("da-liu", "@bot 周五下班找个地方喝两杯"), "2026-12-06"),
        {"configurable": {"thread_id": "team-room"}},
        context={"user_id": "da-liu"},
    )
    assert not any("降压药" in m["text"] for m in drinks["memories"])
    alone = graph.invoke(  # one member alone in the group's thread: still a group
        burst([], ("nina", "@bot any tips for my next doctor visit?"), "2026-12-06"),
        {"configurable": {"thread_id": "team-room"}},
        context={"user_id": "nina"},
    )
    assert not any("pregnant" in m["text"] for m in alone["memories"])


def test_a_local_question_in_a_group_brings_the_askers_home_only(home: Path) -> None:
    graph = build_graph(home=home)
    graph.invoke(
        {"messages": [{"role": "user", "content": "我住在北京朝阳区"}]},
        {"configurable": {"thread_id": "liu-dm"}},
        context={"user_id": "liu"},
    )
    graph.invoke(
        {"messages": [{"role": "user", "content": "我住在广州天河"}]},
        {"configurable": {"thread_id": "zhao-dm"}},
        context={"user_id": "zhao"},
    )
    out = graph.invoke(
        burst([("liu", "周末去爬山吗")], ("zhao", "@bot 明天我那边会下雨吗？"), "2026-12-05"),
        {"configurable": {"thread_id": "hikers"}},
        context={"user_id": "zhao"},
    )
    shown = {(m["who"], m["text"]) for m in out["memories"]}
    assert any(who == "zhao" and "广州" in text for who, text in shown)
    assert not any("北京" in text for _, text in shown)


def test_a_groups_request_from_one_member_is_for_the_members_who_spoke_before(home: Path) -> None:
    graph = build_graph(home=home)
    room = {"configurable": {"thread_id": "offsite-room"}}
    graph.invoke(
        burst(
            [("alice", "我对花生过敏"), ("carol", "我不喝酒的"), ("dave", "I'm vegan, fyi")],
            ("alice", "@bot 大家好"),
            "2026-12-01",
        ),
        room,
        context={"user_id": "alice"},
    )
    # a week later alice alone asks for the team: carol and dave are at the table too
    for request, who, limit in (
        ("@bot 下周团建聚餐，帮我们订个餐厅", "dave", "vegan"),
        ("@bot 周五下班团建，找个地方喝两杯", "carol", "喝酒"),
    ):
        out = graph.invoke(burst([], ("alice", request), "2026-12-08"), room, context={"user_id": "alice"})
        assert out["participants"][0] == "alice" and set(out["participants"]) == {"alice", "carol", "dave"}
        assert any(m["who"] == who and limit in m["text"] for m in out["memories"]), request
    # a one-to-one thread is no group: its participants are its user alone
    dm = graph.invoke(
        {"messages": [{"role": "user", "content": "帮我订个餐厅"}]},
        {"configurable": {"thread_id": "alice-dm"}},
        context={"user_id": "alice"},
    )
    assert dm["participants"] == ["alice"]
