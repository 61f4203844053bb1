"""The speaker's name is read where people put it (greetings, sign-offs, corrections), and only theirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import SystemMessage

from mneme.graph import build_graph
from mneme.memory.api import Memory
from mneme.memory.extract import earlier_value, reminds
from mneme.memory.usermodel.heads import given_name
from mneme.memory.usermodel.names import spoken_names
from tests.fakes import ScriptedChatModel


def test_the_given_name_head_reads_names_no_list_holds_and_not_words() -> None:
    names = given_name(["Oluwaseun", "Siobhan", "Kathryn", "Priya"])
    words = given_name(["Canadian", "Monday", "Python", "Tired"])
    assert min(names) > 0.5 > max(words)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Marcus here. Quick question about my sourdough starter", "Marcus"),
        ("D'Angelo here, quick q about my check engine light", "D'Angelo"),
        ("hey im tom. need a recipe that uses up like 6 eggs", "tom"),
        ("so I'm Gabriel, trying to learn Python for work", "Gabriel"),
        ("I'm Oluwaseun but Seun is fine, I know it's a mouthful", "Oluwaseun"),
        ("hey its Marcus here", "Marcus"),
        ("Sorry, it's Thomas Reilly if you need my full name.", "Thomas Reilly"),
        ("It's Sean, not Shawn. You've spelled it wrong twice now.", "Sean"),
        ("This is Dr. Helen Park from pediatrics. I need a handout on RSV.", "Helen Park"),
        ("This was super helpful, thank you!\n\n— Priya", "Priya"),
        ("ok that fixed it!! you're a lifesaver\n\ncheers, wes", "wes"),
        ("鄙人孙浩然，初来乍到，请多关照", "孙浩然"),
        ("我结婚后冠了夫姓，现在证件上是陈林美玲，以后就这么称呼我吧", "陈林美玲"),
        ("啊打错了，是张玮杰，王字旁那个玮", "张玮杰"),
        ("好的，按你说的改完了，谢谢！\n——佳琪", "佳琪"),
        ("帮我想几个周末带娃去玩的地方，别太贵哈\n【林晓】", "林晓"),
        ("我前阵子改名了，以前叫李春花，现在叫李沐阳", "李沐阳"),
        ("我是老周，今年刚退休，想学着用手机剪视频", "老周"),
        ("Good morning! Margaret here, 74 years young", "Margaret"),
        ("I'm Dr. Anita Rao, a pediatrician. I need a handout on fevers.", "Anita Rao"),
        ("how long do cooked pancakes keep in the fridge tho / ty!! -bea", "bea"),
        # not the speaker's name
        ("I'm Canadian, so the metric system please", None),
        ("it's kinda condescending. how do I get him to stop", None),
        ("I want to show you one of my snakes! This is Susie.", None),
        ("It's Shia Labeouf!", None),
        ("this is Luna, my cat. she keeps knocking stuff off the counter", None),
        ("Let's play a game: you're Sherlock Holmes and I'm Watson.", None),
        ("我是老师，想请你帮我出几道题", None),
        ("I'm Liam's mom and he has a fever", None),
        ("不好意思，我打错了，是周三", None),
        ("It's Monday here, so the office is packed", None),
    ],
)
def test_a_name_is_read_in_the_places_people_put_it(text: str, name: str | None) -> None:
    assert [c.value for c in spoken_names(text)] == ([name] if name else [])


@pytest.mark.parametrize(
    ("first", "then", "name"),
    [
        ("Hi, I'm Katherine", "sorry, autocorrect strikes again. It's Kathryn, with a y", "Kathryn"),
        (
            "Heads up: I legally changed my name last month. It's Jordan Reyes now, not Jessica.",
            "Please don't use my old name anymore, thanks",
            "Jordan Reyes",
        ),
        ("我去年改名了，以前叫王建国，现在户口本上是王嘉树", "以后别再用旧名字叫我了哈", "王嘉树"),
    ],
)
def test_a_corrected_or_changed_name_is_the_one_kept(
    memory: Memory, first: str, then: str, name: str
) -> None:
    memory.add(first, user_id="u")
    memory.add(then, user_id="u")
    assert memory.profile(user_id="u")["name"].value == name


@pytest.mark.parametrize(
    ("text", "remember"),
    [
        ("记住了哦，下次要喊我名字", True),
        ("帮我记一下：我老婆生日是6月8号", True),
        ("keep in mind I'm vegetarian", True),
        ("Please remember my name next time", True),
        ("我不希望你记住我的职业", False),  # negated: a request to forget
        ("rather you didn't remember my asthma", False),
        ("remove my email from what you remember about me", False),
    ],
)
def test_a_request_to_remember_is_never_one_to_forget(text: str, remember: bool) -> None:
    assert reminds(text) is remember


@pytest.mark.parametrize(
    ("intro", "name", "also"),
    [
        ("hi～我叫林薇，在杭州做UI设计，目前在网易", "林薇", ["杭州", "网易"]),
        ("hey! I'm Jess Romero, ER nurse at Denver Health, mostly night shifts", "Jess Romero", ["nurse"]),
        ("我是新来的实习生赵一鸣，请多关照", "赵一鸣", []),  # a polite formula is nothing to keep
        (
            "大家好，我是张雨婷，在上海的字节跳动做产品经理",
            "张雨婷",
            ["字节跳动"],
        ),  # 大家好 greets, it is no subject
    ],
)
def test_what_a_self_introduction_says_beside_the_name_is_kept(
    memory: Memory, intro: str, name: str, also: list[str]
) -> None:
    memory.add(intro, user_id="u")
    assert memory.profile(user_id="u")["name"].value == name
    others = [r.text for r in memory.get_all(user_id="u") if r.subject != "name"]
    assert all(any(word in t for t in others) for word in also)
    assert not [t for t in others if "关照" in t]


def test_a_name_given_with_a_request_to_remember_it_is_kept(memory: Memory) -> None:
    memory.add("本宝宝叫糖糖！记住了哦，下次要喊我名字😤", user_id="u")
    assert memory.profile(user_id="u")["name"].value == "糖糖"


@pytest.mark.parametrize(
    ("told", "asked"),
    [
        ("好的，按你说的改完了，谢谢！\n——佳琪", "帮我写一条生日祝福发给我妈，落款用我的名字"),
        (
            "It's Sean, not Shawn. You've spelled it wrong twice now.",
            "Draft a note to my landlord, signed with my name.",
        ),
    ],
)
def test_a_request_that_names_the_users_name_is_shown_it(tmp_path: Path, told: str, asked: str) -> None:
    model = ScriptedChatModel.script("ok", "ok")
    g = build_graph(model=model, home=tmp_path)
    g.invoke(
        {"messages": [{"role": "user", "content": told}]},
        {"configurable": {"thread_id": "a"}},
        context={"user_id": "u"},
    )
    g.invoke(
        {"messages": [{"role": "user", "content": asked}]},
        {"configurable": {"thread_id": "b"}},
        context={"user_id": "u"},
    )
    shown = " ".join(str(m.content) for m in model.seen[-1] if isinstance(m, SystemMessage))
    name = spoken_names(told)[0].value
    assert f"{name}" in shown.split("<memories>")[-1]


@pytest.mark.parametrize(
    ("topic", "earlier"),
    [
        ("Please don't use my old name anymore", True),
        ("以后别再用旧名字叫我了", True),
        ("把我以前的地址删了", True),
        ("把我之前说的住址删了", False),  # a value said before is the one the user has
        ("please delete the email I gave you earlier", False),
    ],
)
def test_a_forget_request_about_an_old_value_is_told_from_one_about_a_value_said_before(
    topic: str, earlier: bool
) -> None:
    assert earlier_value(topic) is earlier
