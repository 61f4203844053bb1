"""The read path through `Memory.search`: hybrid ranking, context, filters inside the query, cold start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.errors import InputError
from mneme.memory.api import Memory
from mneme.memory.repo import kind_namespace
from mneme.memory.usage import record_use, use_of
from mneme.store.chroma import ChromaStore


def turn(memory: Memory, user: str, text: str, session: str = "s1", **meta: Any) -> str:
    """Store one conversation turn verbatim (as a chat log replay would), return its id."""
    [change] = memory.add(text, user_id=user, infer=False, session_id=session, metadata=meta)
    assert change.id is not None
    return change.id


def texts(hits: list[Any]) -> list[str]:
    return [h.text for h in hits]


def test_english_words_match_across_forms(memory: Memory) -> None:
    turn(memory, "u", "I painted a sunrise over the lake last year")
    turn(memory, "u", "We went camping in the mountains")
    turn(memory, "u", "My kids love dinosaurs")
    hits = memory.search("Which paintings has she made?", user_id="u", limit=3)
    assert hits[0].text == "I painted a sunrise over the lake last year"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_chinese_words_are_segmented(memory: Memory) -> None:
    turn(memory, "u", "周末和朋友去吃了重庆火锅，特别辣")
    turn(memory, "u", "我最近在学游泳，每周去两次")
    turn(memory, "u", "下个月要去杭州出差")
    hits = memory.search("她喜欢吃火锅吗", user_id="u", limit=3)
    assert hits[0].text.startswith("周末和朋友去吃了重庆火锅")
    hits = memory.search("游泳课一周几次", user_id="u", limit=3)
    assert hits[0].text.startswith("我最近在学游泳")


def test_the_answer_after_a_matching_question_is_found(memory: Memory) -> None:
    """The turn that matches the query is often a question; the answer is the next turn."""
    turn(memory, "u", "Anna: What did you end up buying at the farmers market?")
    answer = turn(memory, "u", "Ben: Fresh mangoes and a woven basket for the kitchen.")
    for i in range(12):
        turn(memory, "u", f"Anna: Unrelated chat number {i} about the weather and traffic.")
    hits = memory.search("What did Ben buy at the farmers market?", user_id="u", limit=2)
    assert answer in [h.id for h in hits]
    plain = Memory(memory.store, context=Context(w_prev_turn=0, w_next_turn=0, w_session=0))
    assert answer not in [h.id for h in plain.search("farmers market purchase", user_id="u", limit=2)]


def test_the_speaker_named_in_the_query_comes_first(memory: Memory) -> None:
    turn(memory, "u", "I started pottery classes this week", speaker="Melanie")
    caroline = turn(memory, "u", "I started pottery classes this week too!", speaker="Caroline")
    hits = memory.search("When did Caroline start pottery classes?", user_id="u", limit=2)
    assert hits[0].id == caroline


def test_dates_in_the_query_match_when_a_memory_was_said(memory: Memory) -> None:
    may = turn(memory, "u", "I ran a charity race for the shelter", said_at="2023-05-21T10:00:00")
    turn(memory, "u", "I ran a charity race for the hospital", said_at="2023-08-02T10:00:00")
    hits = memory.search("Which charity race did she run in May 2023?", user_id="u", limit=2)
    assert hits[0].id == may
    hits = memory.search("她2023年5月参加了什么比赛", user_id="u", limit=2)
    assert hits[0].id == may


def test_a_later_statement_outranks_the_one_it_replaced(memory: Memory) -> None:
    """Two equally relevant statements: the one said later wins (the answer changed)."""
    old = turn(memory, "u", "我的工作室在西湖边", said_at="2024-03-02T10:00:00")
    new = turn(memory, "u", "我的工作室在滨江边", said_at="2024-09-20T10:00:00")
    hits = memory.search("工作室在哪里", user_id="u", limit=2)
    assert [h.id for h in hits] == [new, old]
    flat = Memory(memory.store, context=Context(w_recency=0.0)).search("工作室在哪里", user_id="u", limit=2)
    assert abs(flat[0].score - flat[1].score) < hits[0].score - hits[1].score  # time made the difference


def test_a_question_about_now_weighs_the_later_statement_more(memory: Memory) -> None:
    """'目前/still/currently' asks for the current state: the gap between old and new widens."""
    old = turn(memory, "u", "我每天傍晚去公园跳广场舞", said_at="2023-11-05T09:00:00")
    new = turn(memory, "u", "不跳广场舞了，改学太极拳", said_at="2024-06-15T19:00:00")
    plain = memory.search("她靠什么活动健身", user_id="u", limit=2)
    now = memory.search("她目前靠什么活动健身", user_id="u", limit=2)
    assert {h.id for h in plain} == {h.id for h in now} == {old, new}
    assert now[0].id == new
    gap = {h.id: h.score for h in now}[new] - {h.id: h.score for h in now}[old]
    assert gap > {h.id: h.score for h in plain}[new] - {h.id: h.score for h in plain}[old]
    same = Memory(memory.store, context=Context(w_recency_present=0.1))
    assert [h.score for h in same.search("她目前靠什么活动健身", user_id="u", limit=2)] != [
        h.score for h in now
    ]


def test_the_present_cue_is_read_in_both_languages() -> None:
    from mneme.memory.dates import asks_present

    assert asks_present("小林目前在什么地方办公？") and asks_present("老赵的店现在还营业吗")
    assert asks_present("Does she still play the violin?") and asks_present("Where does he currently live?")
    assert not asks_present("阿杰去年在学什么？") and not asks_present("What did Ben buy at the market?")
    assert not asks_present("你喜欢咖啡还是茶")  # "还是" is "or" here


def test_memories_that_keep_being_used_gain_weight(memory: Memory) -> None:
    a = turn(memory, "u", "Likes jasmine tea in the morning", session="a")
    b = turn(memory, "u", "Likes jasmine tea in the evening", session="b")
    first = memory.search("jasmine tea", user_id="u", limit=2)
    loser = first[1].id
    for _ in range(8):
        record_use(memory.store, "u", [loser])
    assert use_of(memory.store, "u", loser)[0] == 8
    assert memory.search("jasmine tea", user_id="u", limit=2)[0].id == loser
    assert {a, b} == {h.id for h in first}


def test_filters_run_inside_the_query_so_results_are_never_starved(memory: Memory) -> None:
    """300 better matches are filtered out: the 3 that pass are still returned, best first."""
    alps = [f"hiking trip number {i} in the alps" for i in range(300)]
    memory.add(alps, user_id="u", infer=False, metadata={"topic": "a"})
    memory.add("a short hiking walk", user_id="u", infer=False, metadata={"topic": "b", "n": 1})
    memory.add("hiking with my dog", user_id="u", infer=False, metadata={"topic": "b", "n": 2})
    memory.add("cooking pasta", user_id="u", infer=False, metadata={"topic": "b", "n": 3})
    hits = memory.search("hiking trip in the alps", user_id="u", limit=5, filters={"topic": "b"})
    assert len(hits) == 3 and all(h.metadata["topic"] == "b" for h in hits)
    assert texts(hits)[2] == "cooking pasta"
    two = memory.search("hiking", user_id="u", limit=5, filters={"n": {"$gte": 2}, "metadata.topic": "b"})
    assert sorted(h.metadata["n"] for h in two) == [2, 3]


def test_few_filtered_memories_are_over_fetched_without_a_store_filter(chroma_store: ChromaStore) -> None:
    memory = Memory(chroma_store)
    for i in range(20):
        memory.add(f"note {i} about gardening tomatoes", user_id="u", infer=False, metadata={"keep": i == 7})
    hits = memory.search("gardening tomatoes", user_id="u", limit=3, filters={"keep": True})
    assert [h.metadata["keep"] for h in hits] == [True]


def test_session_sensitivity_and_expiry_are_filters(memory: Memory) -> None:
    turn(memory, "u", "We planned the trip to Kyoto", session="trip")
    turn(memory, "u", "We planned the budget for Kyoto", session="money")
    hits = memory.search("Kyoto plans", user_id="u", session_id="money")
    assert texts(hits) == ["We planned the budget for Kyoto"]
    secret = memory.save("Takes medication for blood pressure", user_id="u")
    record = memory.get(secret.id or "", user_id="u")
    memory.store.put(
        kind_namespace("u", "semantic"), record.id, {**record.to_store(), "sensitivity": 2}, index=["text"]
    )
    assert record.id not in [
        h.id for h in memory.search("blood pressure medication", user_id="u", max_sensitivity=1)
    ]
    assert record.id in [h.id for h in memory.search("blood pressure medication", user_id="u")]
    gone = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    memory.store.put(
        kind_namespace("u", "semantic"), record.id, {**record.to_store(), "expires_at": gone}, index=["text"]
    )
    assert record.id not in [h.id for h in memory.search("blood pressure medication", user_id="u")]


def test_history_is_only_searched_when_asked(memory: Memory) -> None:
    change = memory.save("Prefers the window seat", user_id="u")
    memory.update(change.id or "", "Prefers the aisle seat", user_id="u")
    assert [(h.text, h.current) for h in memory.search("seat", user_id="u")] == [
        ("Prefers the aisle seat", True)
    ]
    old = memory.search("window seat", user_id="u", include_history=True)
    assert ("Prefers the window seat", False) in [(h.text, h.current) for h in old]


def test_cold_start_returns_nothing_above_the_threshold(memory: Memory) -> None:
    assert memory.search("what do you know about me", user_id="nobody") == []
    turn(memory, "u", "My order 20240508001 was shipped by SF Express")
    assert memory.search("recommend a good science fiction novel", user_id="u", min_relevance=0.5) == []
    assert memory.search("where is order 20240508001", user_id="u", min_relevance=0.5) != []


def test_modes_are_the_two_baselines(mem_store: InMemoryStore) -> None:
    for mode in ("hybrid", "dense", "lexical"):
        memory = Memory(mem_store, context=Context(retrieval_mode=mode))  # type: ignore[arg-type]
        turn(memory, "u", "The red bicycle is in the garage")
        assert memory.search("red bicycle", user_id="u")[0].text == "The red bicycle is in the garage"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": " "}, "query is empty"),
        ({"limit": 0}, "limit"),
        ({"kinds": ["feelings"]}, "unknown kinds"),
        ({"filters": {"topic": {"$regex": "a"}}}, "unsupported filter operator"),
        ({"filters": {"topic": {"$in": "a"}}}, "needs a non-empty list"),
        ({"filters": {"$or": []}}, "unsupported filter key"),
        ({"filters": {"topic": ["a"]}}, "needs a scalar"),
    ],
)
def test_bad_search_input_gets_a_clear_error(memory: Memory, kwargs: dict[str, Any], message: str) -> None:
    args = {"query": "x", "user_id": "u", **kwargs}
    with pytest.raises(InputError, match=message):
        memory.search(args.pop("query"), **args)


@pytest.mark.parametrize(
    "weights",
    [{"w_recency": 0.5, "w_importance": 0.3, "w_use": 0.2}, {"w_recency_present": 0.95, "w_importance": 0.1}],
)
def test_ranking_weights_that_leave_no_room_for_relevance_are_refused(weights: dict[str, float]) -> None:
    with pytest.raises(InputError, match="below 1"):
        Context(**weights)  # type: ignore[arg-type]
