"""The user model's choice among a person's memories: constraints the request reaches come, and first."""

from __future__ import annotations

from mneme.memory.record import MemoryHit
from mneme.memory.usermodel.recall import Touch, about_them, binding, score_of
from mneme.memory.usermodel.refer import kin_in

DINNER = Touch(domains={"cooking": 0.9}, aspects={"allergy": 1.0, "diet": 0.88, "food": 0.64, "seat": 0.0})


def hit(
    text: str, aspect: str, score: float, *, constraint: bool, domains: dict[str, float] | None = None
) -> MemoryHit:
    return MemoryHit(
        id=text,
        text=text,
        kind="semantic",
        score=score,
        created_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:00:00+00:00",
        user_id="u",
        aspect=aspect,
        aspects=[aspect],
        constraint=constraint,
        domains=domains or {},
    )


def test_an_allergy_the_request_reaches_binds_however_little_it_resembles_the_request() -> None:
    allergy = hit("对花生过敏", "allergy", 0.05, constraint=True)
    assert binding(allergy, score_of(allergy, DINNER), DINNER)


def test_a_like_or_a_constraint_the_request_does_not_reach_does_not_bind() -> None:
    like = hit("喜欢吃辣", "food", 0.4, constraint=False)
    seat = hit("不坐靠窗", "seat", 0.4, constraint=True)
    assert not binding(like, score_of(like, DINNER), DINNER)
    assert not binding(seat, score_of(seat, DINNER), DINNER)


def test_a_constraint_is_reached_through_any_of_its_aspects() -> None:
    spicy = hit("不吃辣", "food", 0.2, constraint=True).model_copy(update={"aspects": ["food", "diet"]})
    assert binding(spicy, score_of(spicy, DINNER), DINNER)  # a taste, and a diet a dinner reaches first
    alone = spicy.model_copy(update={"aspects": ["food"]})
    assert not binding(alone, score_of(alone, DINNER), DINNER)


def test_a_fact_about_a_family_member_the_request_names_comes_however_little_it_resembles_it() -> None:
    moved = hit("我哥上周调到上海分公司了", "family", 0.12, constraint=False)
    assert about_them(moved, own=0.4, kin=kin_in("想去看看我哥，帮我订个他那边的酒店"))
    assert about_them(moved, own=0.4, kin=kin_in("my brother is visiting, plan a day out"))  # one relation
    assert not about_them(moved, own=0.4, kin=kin_in("想去看看我妈，帮我订个酒店"))
    assert not about_them(moved, own=0.4)
    assert kin_in("妈的，又下雨") == set()  # a curse, not a mother
