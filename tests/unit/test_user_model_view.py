"""The profile view: what mneme believes about a person, by aspect, with the values each memory replaced."""

from __future__ import annotations

from typing import Any

import pytest

from mneme.errors import InputError
from mneme.memory.aio import AsyncMemory
from mneme.memory.api import Memory
from mneme.memory.importer import EXPORT_FORMAT
from mneme.memory.record import HistoryEntry, MemoryRecord
from mneme.memory.usermodel.view import user_model_view

T0 = "2026-01-01T09:00:00+00:00"
T1 = "2026-02-01T09:00:00+00:00"
T2 = "2026-03-01T09:00:00+00:00"


def rec(rid: str, text: str, aspect: str | None, **extra: Any) -> MemoryRecord:
    fields: dict[str, Any] = {
        "created_at": T0,
        "updated_at": T0,
        "valid_from": T0,
        "aspects": [aspect] if aspect else [],
        **extra,
    }
    return MemoryRecord(id=rid, user_id="ann", text=text, aspect=aspect, **fields)


def old(record: MemoryRecord, until: str, by: str, **extra: Any) -> MemoryRecord:
    """An archived version of a record, replaced at `until` by memory `by`."""
    return record.model_copy(update={"invalid_at": until, "superseded_by": by, **extra})


def no_history(memory_id: str) -> list[HistoryEntry]:
    return []


def test_memories_are_grouped_by_aspect_with_hard_limits_first_and_others_left_out() -> None:
    current = [
        rec("seat", "喜欢靠窗的座位", "seat", kind="profile", valid_from=T1),
        rec("job", "我跳槽去腾讯了", "employer", kind="profile"),
        rec("order", "订单号20240508001已发货", None, kind="episodic"),
        rec("nuts", "对花生过敏", "allergy", constraint=True),
        rec("spicy", "不吃辣", "food", constraint=True, aspects=["food", "diet"]),
        rec("sweet", "喜欢吃甜的", "food", valid_from=T2),
        rec("odd", "something from a newer taxonomy", "no_such_aspect"),
    ]
    view = user_model_view("ann", current, [], no_history)

    assert [a.aspect for a in view.aspects] == ["allergy", "food", "employer", "seat", "no_such_aspect"]
    assert view.total == 6  # the order is about no aspect of her: not in it
    allergy, food, employer, seat, odd = view.aspects
    assert (allergy.label, allergy.label_zh, allergy.area, allergy.constraint) == (
        "allergies",
        "过敏",
        "food",
        True,
    )
    # an aspect that is no hard limit itself holds one here: it counts as one, and it comes first
    assert food.constraint and [m.id for m in food.memories] == ["spicy", "sweet"]
    assert food.memories[0].also == ["diet"]
    assert employer.single and not employer.constraint and employer.label == "employer"
    assert seat.memories[0].since == T1
    assert (odd.label, odd.area, odd.single, odd.constraint) == ("no_such_aspect", "other", False, False)


def test_a_single_valued_aspect_shows_the_values_it_replaced_most_recent_first() -> None:
    alibaba = rec("ali", "在阿里巴巴工作", "employer", kind="profile")
    tencent = rec("ten", "我跳槽去腾讯了", "employer", kind="profile", valid_from=T1, version=2)
    corrected = tencent.model_copy(update={"text": "在腾讯云工作", "valid_from": T2, "version": 3})
    archived = [old(alibaba, T1, by="ten"), old(tencent, T2, by="ten")]
    rows = [
        HistoryEntry(memory_id="ten", operation="ADD", new_text="我跳槽去腾讯了"),
        HistoryEntry(memory_id="ten", operation="UPDATE", old_text="我跳槽去腾讯了", new_text="在腾讯云工作"),
    ]
    asked: list[str] = []

    def history_of(memory_id: str) -> list[HistoryEntry]:
        asked.append(memory_id)
        return [r for r in rows if r.memory_id == memory_id]

    view = user_model_view("ann", [corrected], archived, history_of)

    (employer,) = view.aspects
    (now,) = employer.memories
    assert (now.text, now.version, now.since) == ("在腾讯云工作", 3, T2)
    assert [(e.text, e.change, e.since, e.until) for e in now.earlier] == [
        ("我跳槽去腾讯了", "edited", T1, T2),
        ("在阿里巴巴工作", "superseded", T0, T1),
    ]
    assert asked == ["ten"]  # history is read only for a memory that kept its id


def test_a_value_replaced_in_place_is_superseded_not_edited() -> None:
    hangzhou = rec("home", "住在杭州西湖区", "residence", kind="profile")
    shanghai = hangzhou.model_copy(update={"text": "我搬到上海了", "valid_from": T1, "version": 2})
    rows = [HistoryEntry(memory_id="home", operation="SUPERSEDE", old_text="住在杭州西湖区")]
    view = user_model_view("ann", [shanghai], [old(hangzhou, T1, by="home")], lambda _: rows)
    assert [(e.text, e.change) for e in view.aspects[0].memories[0].earlier] == [
        ("住在杭州西湖区", "superseded")
    ]


def test_expired_versions_and_values_said_again_are_not_shown_as_earlier() -> None:
    alibaba = rec("ali", "在阿里巴巴工作", "employer", kind="profile")
    tencent = rec("ten", "我跳槽去腾讯了", "employer", kind="profile", valid_from=T1)
    expired = rec("coffee", "每天早上喝咖啡", "drink").model_copy(update={"invalid_at": T1})
    tea = rec("tea", "喜欢喝茶", "drink")
    # she said Alibaba again later: it is current on its own, not a former value of Tencent
    view = user_model_view("ann", [alibaba, tencent, tea], [old(alibaba, T1, by="ten"), expired], no_history)
    employer = next(a for a in view.aspects if a.aspect == "employer")
    assert all(m.earlier == [] for m in employer.memories)
    assert employer.conflicting  # two current values of a single-valued aspect: one is stale
    drink = next(a for a in view.aspects if a.aspect == "drink")
    assert drink.memories[0].earlier == [] and not drink.conflicting


def test_a_chain_that_comes_back_to_its_start_ends() -> None:
    first = rec("ali", "在阿里巴巴工作", "employer", kind="profile")
    second = rec("ten", "在腾讯工作", "employer", kind="profile", valid_from=T1, version=2)
    again = first.model_copy(update={"valid_from": T2, "version": 3})  # back to Alibaba, same id
    archived = [old(first, T1, by="ten"), old(second, T2, by="ali")]
    (now,) = user_model_view("ann", [again], archived, no_history).aspects[0].memories
    assert [(e.text, e.until) for e in now.earlier] == [("在腾讯工作", T2), ("在阿里巴巴工作", T1)]


def export_of(
    current: list[MemoryRecord], archived: list[MemoryRecord], history: list[HistoryEntry]
) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT,
        "user_id": "ann",
        "memories": [r.to_store() for r in current],
        "archive": [r.to_store() for r in archived],
        "history": [h.model_dump(mode="json") for h in history],
    }


def test_memory_user_model_reads_the_store_and_follows_an_edit(memory: Memory) -> None:
    alibaba = rec("ali", "在阿里巴巴工作", "employer", kind="profile", confirmed=True)
    tencent = rec("ten", "我跳槽去腾讯了", "employer", kind="profile", valid_from=T1, version=2)
    nuts = rec("nuts", "对花生过敏", "allergy", constraint=True)
    history = [
        HistoryEntry(memory_id="ali", operation="ADD", new_text=alibaba.text, at=T0),
        HistoryEntry(memory_id="ali", operation="SUPERSEDE", old_text=alibaba.text, at=T1),
        HistoryEntry(memory_id="ten", operation="ADD", new_text=tencent.text, at=T1),
        HistoryEntry(memory_id="nuts", operation="ADD", new_text=nuts.text, at=T0),
    ]
    memory.import_data(export_of([tencent, nuts], [old(alibaba, T1, by="ten")], history), user_id="ann")
    memory.save("昨天去了西湖", user_id="ann", kind="episodic")

    view = memory.user_model(user_id="ann")
    assert [(a.aspect, [m.text for m in a.memories]) for a in view.aspects] == [
        ("allergy", ["对花生过敏"]),
        ("employer", ["我跳槽去腾讯了"]),
    ]
    assert [(e.text, e.change) for e in view.aspects[1].memories[0].earlier] == [
        ("在阿里巴巴工作", "superseded")
    ]

    memory.update("ten", "在腾讯云工作", user_id="ann", actor="admin")  # an operator's correction
    (now,) = memory.user_model(user_id="ann").aspects[1].memories
    assert (now.text, now.version, now.source.actor) == ("在腾讯云工作", 3, "admin")
    assert [(e.text, e.change) for e in now.earlier] == [
        ("我跳槽去腾讯了", "edited"),
        ("在阿里巴巴工作", "superseded"),
    ]
    memory.delete("nuts", user_id="ann")
    assert [a.aspect for a in memory.user_model(user_id="ann").aspects] == ["employer"]
    assert memory.profile(user_id="ann") == {}  # the keyed-field profile is unchanged: no subject here


def test_an_unknown_user_has_an_empty_view_and_a_bad_user_id_is_refused(memory: Memory) -> None:
    view = memory.user_model(user_id="nobody")
    assert (view.user_id, view.aspects, view.total) == ("nobody", [], 0)
    for bad in ["", "  ", "a\x00b", "x" * 300, 5, None]:
        with pytest.raises(InputError, match="user_id"):
            memory.user_model(user_id=bad)  # type: ignore[arg-type]


async def test_async_memory_has_the_same_view(memory: Memory) -> None:
    amem = AsyncMemory(memory, workers=2)
    try:
        assert (await amem.user_model(user_id="nobody")).total == 0
        with pytest.raises(InputError, match="user_id"):
            await amem.user_model(user_id="a\x00b")
    finally:
        amem.close()
