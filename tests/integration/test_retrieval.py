"""The read path on the real embedded defaults: E5 embeddings, Chroma on disk, the graph's node."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from mneme import Memory
from mneme.context import Context
from mneme.nodes import retrieve_memories
from mneme.state import State

pytestmark = pytest.mark.integration

CHINESE = [
    "我对花椒过敏，吃了嘴会肿",
    "我在杭州滨江开了一家插画工作室",
    "周末一般去西湖边跑步",
    "女儿今年九月上小学一年级",
    "最近在学吉他，每周六上课",
    "家里养了一只橘猫，叫橘子",
]
ENGLISH = [
    "I adopted a puppy named Rex last spring",
    "I work night shifts at the city hospital",
    "My sister lives in Montreal",
    "I am learning to play the cello",
    "We are saving up to buy a house near the coast",
]


@pytest.fixture
def memory(home: Path) -> Memory:
    """Facts as the agent keeps them (`save`: semantic memories, stored as given)."""
    mem = Memory.open(home)
    for text in CHINESE:
        mem.save(text, user_id="zh")
    for text in ENGLISH:
        mem.save(text, user_id="en")
    return mem


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("哪种调料让她不舒服", "我对花椒过敏，吃了嘴会肿"),
        ("她的宠物是什么动物", "家里养了一只橘猫，叫橘子"),
        ("她弹什么乐器", "最近在学吉他，每周六上课"),
    ],
)
def test_a_chinese_query_finds_a_memory_sharing_no_character(
    memory: Memory, query: str, expected: str
) -> None:
    assert not set(query) & set(expected) - set("，。？")  # not even one character in common
    hits = memory.search(query, user_id="zh", limit=3)
    assert hits[0].text == expected


def test_an_english_paraphrase_finds_its_memory(memory: Memory) -> None:
    hits = memory.search("what is the name of my dog", user_id="en", limit=3)
    assert hits[0].text == "I adopted a puppy named Rex last spring"
    hits = memory.search("Which instrument am I practicing?", user_id="en", limit=3)
    assert hits[0].text == "I am learning to play the cello"


def test_languages_do_not_cross_users(memory: Memory) -> None:
    assert all(h.user_id == "en" for h in memory.search("我对什么过敏", user_id="en", limit=10))


def test_conversation_turns_are_judged_against_chit_chat(home: Path) -> None:
    """Verbatim turns pass the injection threshold when asked about, not for unrelated requests."""
    mem = Memory.open(home)
    turns = [
        "Anna: We finally booked the cabin by the lake for the second week of August!",
        "Ben: Nice, is it the one with the wooden sauna you showed me in the spring?",
        "Anna: Yes, and it has a small rowing boat we can use every morning.",
        "Ben: I have been learning to bake sourdough bread, my third loaf was actually good.",
    ]
    for text in turns:
        mem.add(text, user_id="log", infer=False, session_id="s1")
    ctx = Context(user_id="log")
    for text, relevant in [
        ("When is the trip to the lake cabin?", True),
        ("What is the capital of Australia?", False),
        ("How do I reverse a list in Python?", False),
    ]:
        state = State(messages=[HumanMessage(content=text, id="h")])
        out = retrieve_memories(state, Runtime(context=ctx, store=mem.store))
        assert bool(out["memories"]) is relevant, (text, [m["text"] for m in out["memories"]])


@pytest.mark.parametrize(
    ("user", "text", "relevant"),
    [
        ("zh", "今天的天气怎么样", False),
        ("zh", "给我推荐一本科幻小说", False),
        ("en", "what is the capital of Australia", False),
        ("zh", "她吃火锅要注意什么调料", True),
        ("en", "how is my dog doing", True),
    ],
)
def test_cold_start_injects_nothing_irrelevant(memory: Memory, user: str, text: str, relevant: bool) -> None:
    state = State(messages=[HumanMessage(content=text, id="h")])
    out = retrieve_memories(state, Runtime(context=Context(user_id=user), store=memory.store))
    assert bool(out["memories"]) is relevant, [m["text"] for m in out["memories"]]
    nobody = retrieve_memories(state, Runtime(context=Context(user_id="nobody"), store=memory.store))
    assert nobody["memories"] == []
