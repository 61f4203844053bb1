"""Whom a pronoun at the head of a sentence stands for: the family member the speaker just named."""

from __future__ import annotations

import pytest

from mneme.memory.usermodel.refer import resolved
from mneme.memory.usermodel.statements import outsider, read_message


@pytest.mark.parametrize(
    ("text", "before", "expected"),
    [
        ("他上个月跳槽去腾讯了", ["我老公在阿里工作"], "我老公上个月跳槽去腾讯了"),
        ("她的生日是3月3号", ["我有个女儿，今年三岁"], "我女儿的生日是3月3号"),
        ("他们明年退休", ["我爸妈住在成都"], "我爸妈明年退休"),
        (
            "She just quit and started med school",
            ["My sister is a nurse."],
            "My sister just quit and started med school",
        ),
        ("Her school starts at 8", ["My daughter is in first grade"], "My daughter's school starts at 8"),
        ("They're retiring next year", ["My parents live in Ohio"], "My parents are retiring next year"),
        ("老公在阿里干了五年。他上个月跳槽了", [], "老公在阿里干了五年。我老公上个月跳槽了"),  # one message
    ],
)
def test_a_pronoun_after_a_family_member_stands_for_them(text: str, before: list[str], expected: str) -> None:
    assert resolved(text, before, outsider) == expected


@pytest.mark.parametrize(
    ("text", "before"),
    [
        ("他上个月跳槽了", ["我老公在阿里工作", "我同事小王人很好"]),  # the colleague came last
        ("他喜欢打篮球", ["我妈腿脚不好"]),  # 他 is not the mother
        ("She loves sushi", ["My dad is a chef"]),
        ("他人很好", []),  # no one named
        ("He is allergic to cats", ["My friend Tom came over"]),
        ("他的歌都很好听", ["我老公在阿里工作", "我喜欢周杰伦"]),  # a singer, not the husband
        ("他以前在字节", ["我老公在阿里工作", "我们公司新来了个CTO"]),
        ("She is amazing live", ["My sister is a nurse.", "I love Taylor Swift."]),
    ],
)
def test_a_pronoun_whose_person_is_not_clear_is_left_as_it_is(text: str, before: list[str]) -> None:
    assert resolved(text, before, outsider) == text


def test_what_a_pronoun_goes_on_to_say_about_a_family_member_is_kept_as_theirs() -> None:
    assert read_message("他上个月跳槽去腾讯了") == []  # alone: whose it is, is unknown
    kept = read_message("他上个月跳槽去腾讯了", before=["我老公在阿里工作"])
    assert any("我老公" in c.text and "腾讯" in c.text and c.aspect == "family" for c in kept), kept
    kept = read_message("She's allergic to peanuts.", before=["My daughter just turned four."])
    assert any(c.text.startswith("My daughter") and "peanuts" in c.text for c in kept), kept


@pytest.mark.parametrize(
    "text",
    [
        "我妹在杭州找了份工作，是家做跨境电商的公司",
        "My sister just quit and started med school in Glasgow.",
        "我小女儿每天中午都得睡午觉",
    ],
)
def test_a_statement_whose_subject_is_a_family_member_is_theirs_never_the_speakers(text: str) -> None:
    kept = read_message(text)
    assert kept and all(c.aspect == "family" for c in kept if c.aspect), kept


def test_two_facts_about_the_same_family_member_may_replace_each_other_and_two_members_never() -> None:
    from mneme.memory.write import same_person

    assert same_person(
        "My mom used to go to Zumba class", "My mom's knees got bad, she does water aerobics", 0.2
    )
    assert same_person("我老公以前每天要喝三杯咖啡", "老公现在彻底戒了，只喝绿茶", 0.1)
    assert not same_person("My wife works at Microsoft", "My brother moved to Sydney last month", 0.9)
    assert same_person("Lives in Perth", "moved to Sydney last month", 0.6)  # no one named: by relevance
    assert not same_person("Lives in Perth", "moved to Sydney last month", 0.3)
