"""Reconciliation: add, noop by meaning, supersede with history, delete, keyed fields, retries."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore, Op, PutOp, Result

from mneme.memory.api import Memory
from mneme.memory.extract import extract
from mneme.memory.record import HISTORY, MEMORIES
from mneme.memory.repo import Repo
from mneme.models.offline import OfflineChatModel
from mneme.store.chroma import ChromaStore


def ops_of(changes: list[Any]) -> list[str]:
    return [c.operation for c in changes]


def test_the_same_fact_said_differently_is_a_noop(memory: Memory) -> None:
    first = memory.add("我喜欢靠窗的座位", user_id="u")
    assert ops_of(first) == ["ADD"]
    again = memory.add("我很喜欢靠窗座位", user_id="u")
    assert ops_of(again) == ["NOOP"] and again[0].id == first[0].id
    assert ops_of(memory.add("I like window seats", user_id="v")) == ["ADD"]
    assert ops_of(memory.add("I really love window seats!", user_id="v")) == ["NOOP"]
    saved = memory.save("The user likes window seats", user_id="v")
    assert saved.operation == "NOOP"
    assert [r.text for r in memory.get_all(user_id="v")] == ["Likes window seats"]


def test_facts_that_differ_in_a_number_are_not_merged(memory: Memory) -> None:
    assert memory.save("Has a meeting in room 1204", user_id="u").operation == "ADD"
    assert memory.save("Has a meeting in room 1205", user_id="u").operation == "ADD"
    assert len(memory.get_all(user_id="u")) == 2


def test_opposite_preference_replaces_the_old_one(memory: Memory) -> None:
    old = memory.add("I like spicy food", user_id="u")[0]
    change = memory.add("I don't eat spicy food", user_id="u")[0]
    assert change.operation == "SUPERSEDE" and change.old_text == "Likes spicy food"
    assert [r.text for r in memory.get_all(user_id="u")] == ["Does not eat spicy food"]
    [archived] = Repo(memory.store).archived("u", old.id)
    assert archived.invalid_at is not None and archived.superseded_by == change.id


def test_a_correction_replaces_the_memory_it_is_about_and_nothing_else(memory: Memory) -> None:
    for text in ["I like window seats", "I like green tea", "I live in Berlin"]:
        memory.add(text, user_id="u")
    change = memory.add("Actually, I now prefer aisle seats", user_id="u")[0]
    assert (change.operation, change.old_text) == ("SUPERSEDE", "Likes window seats")
    assert sorted(r.text for r in memory.get_all(user_id="u")) == [
        "Likes green tea",
        "Lives in Berlin",
        "Prefers aisle seats",
    ]
    rows = memory.history(change.id, user_id="u")  # a seat has one value: it keeps its id
    assert [(r.operation, r.old_text, r.new_text) for r in rows] == [
        ("ADD", None, "Likes window seats"),
        ("SUPERSEDE", "Likes window seats", "Prefers aisle seats"),
    ]
    old = [h for h in memory.search("window", user_id="u", include_history=True) if not h.current]
    assert [h.text for h in old] == ["Likes window seats"]  # the old value, kept in history only


def test_a_profile_field_keeps_one_id_and_every_value_in_history(memory: Memory) -> None:
    first = memory.add("麻烦以后都发顺丰。", user_id="u", session_id="s1")[0]
    second = memory.add("快递改成京东吧", user_id="u", session_id="s2")[0]
    assert second.operation == "SUPERSEDE" and second.id == first.id
    fields = memory.profile(user_id="u")
    ship = fields["shipping_preference"]
    assert (ship.value, ship.version, ship.confirmed, ship.source.thread_id) == (
        "JD_LOGISTICS",
        2,
        True,
        "s2",
    )
    assert len(memory.get_all(user_id="u", kinds=["profile"])) == 1
    rows = memory.history(first.id, user_id="u")
    assert [(r.operation, r.old_text, r.new_text) for r in rows] == [
        ("ADD", None, "快递偏好：以后都发顺丰"),
        ("SUPERSEDE", "快递偏好：以后都发顺丰", "快递偏好：以后都发京东物流"),
    ]
    [old] = Repo(memory.store).archived("u", first.id)
    assert (old.value, old.version, old.superseded_by) == ("SF_EXPRESS", 1, first.id)
    assert old.invalid_at is not None
    assert memory.add("以后都发京东", user_id="u")[0].operation == "NOOP"


def test_concurrent_updates_of_different_fields_both_survive(chroma_store: ChromaStore) -> None:
    a, b = Memory(chroma_store), Memory(chroma_store)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(memory: Memory, subject: str, prefix: str) -> None:
        try:
            for i in range(15):
                barrier.wait()
                memory.set_field(subject, f"{prefix}{i}", user_id="u")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(a, "shipping_preference", "SHIP_")),
        threading.Thread(target=run, args=(b, "seat_preference", "SEAT_")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fields = {k: (f.value, f.version) for k, f in a.profile(user_id="u").items()}
    assert fields == {"shipping_preference": ("SHIP_14", 15), "seat_preference": ("SEAT_14", 15)}


def test_set_field_rejects_an_empty_value_and_keeps_the_old_one(memory: Memory) -> None:
    memory.set_field("seat_preference", "AISLE", user_id="u")
    with pytest.raises(ValueError, match="mneme: "):
        memory.set_field("seat_preference", " ", user_id="u")
    assert memory.profile(user_id="u")["seat_preference"].value == "AISLE"


@pytest.mark.parametrize(
    ("setup", "request_text", "gone"),
    [
        ("我的手机号是13812345678", "忘掉我的电话号码", "5678"),
        ("I like sushi", "Forget that I like sushi", "sushi"),
        ("我喜欢香菜", "把我喜欢香菜这件事忘了吧", "香菜"),
    ],
)
def test_forget_requests_delete_and_scrub_history(
    memory: Memory, setup: str, request_text: str, gone: str
) -> None:
    kept = memory.add("I live in Berlin", user_id="u")[0]
    mid = memory.add(setup, user_id="u")[0].id
    change = memory.add(request_text, user_id="u")
    assert [(c.operation, c.id) for c in change] == [("DELETE", mid)]
    assert [r.id for r in memory.get_all(user_id="u")] == [kept.id]
    rows = memory.history(mid, user_id="u")
    assert rows[-1].operation == "DELETE"
    assert all(gone not in (r.old_text or "") + (r.new_text or "") for r in rows)


def test_forgetting_what_was_never_said_changes_nothing(memory: Memory) -> None:
    memory.add("I live in Berlin", user_id="u")
    assert ops_of(memory.add("Please forget my phone number", user_id="u")) == ["NOOP"]
    assert len(memory.get_all(user_id="u")) == 1


def test_forgetting_a_kind_of_data_deletes_that_kind_and_never_another(memory: Memory) -> None:
    courier = memory.add("以后都发中通快递。", user_id="u")[0]
    email = memory.add("My email is wes@example.org", user_id="u")[0]
    for request in ("忘掉我的手机号", "Forget my phone number."):  # none stored: nothing else goes either
        assert ops_of(memory.add(request, user_id="u")) == ["NOOP"]
    memory.add("我住在深圳南山区。", user_id="u")
    memory.add("我家地址是深圳市南山区科技园路88号3栋502室。", user_id="u")
    deleted = memory.add("忘掉我的地址", user_id="u")
    assert ops_of(deleted) == ["DELETE", "DELETE"]
    assert {r.id for r in memory.get_all(user_id="u")} == {courier.id, email.id}


@pytest.mark.parametrize(
    ("facts", "asked"),
    [
        (["我住在杭州西湖区文三路100号", "我的邮箱是 bob@example.com"], "把我之前说的住址删了"),
        (
            ["I live at 12 Elm Street, Springfield", "My email is bob@example.com"],
            "please delete the email I gave you earlier",
        ),
    ],
)
def test_a_value_the_user_says_they_gave_is_the_one_forgotten(
    memory: Memory, facts: list[str], asked: str
) -> None:
    address, email = (memory.add(f, user_id="u")[0] for f in facts)
    gone = address if "住址" in asked else email
    assert [c.id for c in memory.add(asked, user_id="u") if c.operation == "DELETE"] == [gone.id]
    assert [r.id for r in memory.get_all(user_id="u")] == [({address.id, email.id} - {gone.id}).pop()]


@pytest.mark.parametrize(
    ("facts", "asked"),
    [
        (
            ["My boyfriend Sam works at a bank and loves fishing", "I live in Denver"],
            "forget everything about my boyfriend",
        ),
        (["我老公在银行上班，他特别爱钓鱼", "我住在杭州"], "我老公那些事你就别记着了，他不喜欢被打听"),
    ],
)
def test_a_request_to_forget_all_about_someone_deletes_them_and_stores_its_reason_nowhere(
    tmp_path: Path, facts: list[str], asked: str
) -> None:
    with Memory.open(tmp_path) as memory:  # the embedded home, as users run it
        partner, home = (memory.add(f, user_id="u")[0] for f in facts)
        assert [(c.operation, c.id) for c in memory.add(asked, user_id="u")] == [("DELETE", partner.id)]
        assert [r.id for r in memory.get_all(user_id="u")] == [home.id]


@pytest.mark.parametrize(
    ("instruction", "news"),
    [
        ("以后回复我简短点就行，别啰嗦", "网易那边我已经辞了，现在在字节做产品经理"),
        (
            "Please keep your answers short, no long essays",
            "Quit my job at the bank, I'm teaching high school math now",
        ),
    ],
)
def test_news_of_ones_life_never_revises_an_instruction_to_the_assistant(
    tmp_path: Path, instruction: str, news: str
) -> None:
    with Memory.open(tmp_path) as memory:
        kept = memory.add(instruction, user_id="u")[0]
        done = [c.operation for c in memory.add(news, user_id="u")]
        assert "ADD" in done and not {"SUPERSEDE", "DELETE"} & set(done), done  # (a piece may NOOP)
        assert kept.id in {r.id for r in memory.get_all(user_id="u")}


@pytest.mark.parametrize(
    ("facts", "asked", "gone"),
    [
        (
            [
                "my son is allergic to peanuts",
                "my son is in third grade",
                "I work as an accountant",
                "my daughter loves ballet",
            ],
            "forget everything about my son",
            [0, 1],
        ),
        (
            ["我老公在阿里工作", "我老公不吃辣", "我对海鲜过敏", "我女儿今年上初一"],
            "把我老公的事都忘了",
            [0, 1],
        ),
        (
            ["我妈妈在医院当护士", "我妈有糖尿病", "我住在杭州"],
            "我妈的工作你不用知道，去掉吧",
            [0],
        ),  # one fact of hers
    ],
)
def test_forgetting_all_about_a_family_member_deletes_every_fact_about_them_and_nothing_else(
    tmp_path: Path, facts: list[str], asked: str, gone: list[int]
) -> None:
    with Memory.open(tmp_path) as memory:
        ids = [memory.add(f, user_id="u")[0].id for f in facts]
        deleted = {c.id for c in memory.add(asked, user_id="u") if c.operation == "DELETE"}
        assert deleted == {ids[i] for i in gone}
        assert {r.id for r in memory.get_all(user_id="u")} == set(ids) - deleted


def test_before_i_forget_is_no_request_to_forget(memory: Memory) -> None:
    kept = memory.add("My email is wes@example.org", user_id="u")[0]
    others = [
        memory.add(t, user_id="k")[0].id
        for t in ("我对鸡蛋过敏", "手机号13298765432", "我住在杭州市西湖区文三路20号")
    ]
    assert "DELETE" not in ops_of(memory.add("我老是忘记带钥匙出门", user_id="k"))  # about nothing stored
    assert set(others) <= {r.id for r in memory.get_all(user_id="k")}
    for said in ("Quick thing before I forget: I'm vegetarian.", "趁我还没忘，跟你说一声：我不吃香菜。"):
        assert not [c for c in extract(said) if c.action == "forget"]  # the agent is told of no forgetting
        assert "DELETE" not in ops_of(memory.add(said, user_id="u"))
    assert kept.id in {r.id for r in memory.get_all(user_id="u")}
    assert len(memory.get_all(user_id="u")) == 3
    model = OfflineChatModel()
    reply = model.invoke([HumanMessage("Quick thing before I forget: I'm vegetarian.")]).content
    assert "forgotten" not in str(reply)
    assert "forgotten" in str(model.invoke([HumanMessage("Please forget my address.")]).content)


def test_a_changed_email_that_masks_alike_is_a_change_and_the_same_one_is_not(memory: Memory) -> None:
    first = memory.add("My email is lina.design@example.com", user_id="u")
    assert ops_of(first) == ["ADD"]
    assert ops_of(memory.add("My email is lina.design@example.com", user_id="u")) == ["NOOP"]
    changed = memory.add("我的邮箱换成了lina2025@example.com", user_id="u")
    assert ops_of(changed) == ["SUPERSEDE"]  # both read "[email l***@example.com]"
    assert len(memory.get_all(user_id="u")) == 1
    dump = str(memory.export(user_id="u"))
    assert "lina2025" not in dump and "lina.design" not in dump  # the digest keeps no value


def test_a_retried_turn_writes_nothing_twice(memory: Memory) -> None:
    turn = [{"role": "user", "content": "我叫李娜，我住在杭州，我不吃辣", "id": "m1"}]
    first = memory.add(turn, user_id="u", session_id="s")
    assert ops_of(first) == ["ADD", "ADD", "ADD"]
    rows = len(memory.export(user_id="u")["history"])
    assert ops_of(memory.add(turn, user_id="u", session_id="s")) == ["NOOP", "NOOP", "NOOP"]
    assert len(memory.get_all(user_id="u")) == 3
    assert len(memory.export(user_id="u")["history"]) == rows


class CrashingStore(BaseStore):
    """Delegates to a store, but dies once in the middle of a write.

    It dies after the history rows of a batch are written and before the memories are.
    """

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.crashed = False
        self.embeddings = getattr(inner, "embeddings", None)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        writes_memory = any(isinstance(o, PutOp) and o.namespace[0] == MEMORIES for o in ops)
        if writes_memory and not self.crashed:
            self.crashed = True
            self.inner.batch([o for o in ops if isinstance(o, PutOp) and o.namespace[0] == HISTORY])
            raise RuntimeError("process killed")
        return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:  # pragma: no cover - unused
        return self.inner.batch(ops)


def test_a_crash_in_the_middle_of_a_write_then_a_retry_leaves_one_memory_and_full_history(
    chroma_store: ChromaStore,
) -> None:
    crashing = Memory(CrashingStore(chroma_store))
    with pytest.raises(RuntimeError, match="killed"):
        crashing.add("我喜欢靠窗的座位", user_id="u", session_id="s")
    memory = Memory(chroma_store)
    assert memory.get_all(user_id="u") == []
    change = crashing.add("我喜欢靠窗的座位", user_id="u", session_id="s")[0]
    assert change.operation == "ADD"
    assert ops_of(memory.add("我喜欢靠窗的座位", user_id="u", session_id="s")) == ["NOOP"]
    assert [r.text for r in memory.get_all(user_id="u")] == ["喜欢靠窗的座位"]
    assert [r.operation for r in memory.history(change.id, user_id="u")] == ["ADD"]


def test_an_asserted_revision_replaces_its_own_aspect_first_and_a_neighbour_only_when_alike() -> None:
    from mneme.memory.record import MemoryRecord
    from mneme.memory.write import REVISION_RELEVANCE, closest_of_area

    home = MemoryRecord(id="home", user_id="u", text="住在杭州", aspect="residence")
    flat = MemoryRecord(id="flat", user_id="u", text="房子朝南，两室一厅", aspect="living_env")
    aspects = ("residence", "living_env")
    # its own aspect wins even when a neighbour resembles the new statement more
    assert closest_of_area([(flat, 0.9), (home, 0.1)], aspects) is home
    # a neighbour is replaced only when it is alike enough, never by a statement it barely resembles
    assert closest_of_area([(flat, REVISION_RELEVANCE + 0.1)], aspects) is flat
    assert closest_of_area([(flat, REVISION_RELEVANCE - 0.1)], aspects) is None
    assert closest_of_area([], aspects) is None


def test_a_taste_revised_leaves_the_allergy_said_in_the_same_breath(memory: Memory) -> None:
    memory.add("我不吃辣，而且对花生过敏，订餐的时候注意一下。", user_id="u")
    memory.add("在深圳待久了，现在能吃一点辣了。", user_id="u")
    current = [r.text for r in memory.get_all(user_id="u")]
    assert any("花生过敏" in t for t in current)
    assert any("能吃一点辣" in t for t in current) and not any(t.endswith("不吃辣") for t in current)


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        (
            "My email is sam.okafor@fastmail.com if you ever need it.",
            "Ugh, I forgot my keys at the office again.",
        ),
        ("我在一家三甲医院当护士，经常要上夜班。", "糟糕，我又把钥匙忘在医院更衣室了。"),
    ],
)
def test_a_mishap_that_reads_as_no_aspect_replaces_no_fact_of_another_area(
    home: Path, fact: str, said: str
) -> None:
    with Memory.open(home) as memory:  # the real defaults (relevance is calibrated on the home's store)
        kept = memory.add(fact, user_id="u")[0]
        assert "SUPERSEDE" not in ops_of(memory.add(said, user_id="u"))
        assert kept.id in {r.id for r in memory.get_all(user_id="u")}


@pytest.mark.parametrize(
    ("facts", "correction", "wrong"),
    [
        (["我家狗叫旺财，是只金毛", "我住在成都"], "你记岔了，旺财是拉布拉多，不是金毛", 0),
        (
            ["I work at Deloitte in the audit team", "I have a cat named Miso"],
            "nope, you got that wrong, I'm at KPMG",
            0,
        ),
    ],
)
def test_a_correction_said_without_a_keyword_replaces_what_it_corrects(
    tmp_path: Path, facts: list[str], correction: str, wrong: int
) -> None:
    # (the `correction` head: "you got that wrong" says what was told before is not so)
    with Memory.open(tmp_path) as memory:
        texts = [memory.add(f, user_id="u")[0].text for f in facts]
        memory.add(correction, user_id="u")
        current = [r.text for r in memory.get_all(user_id="u")]  # (a field keeps its id: compare texts)
        assert texts[wrong] not in current, current
        assert all(t in current for n, t in enumerate(texts) if n != wrong), current
        assert correction in current, current


def test_someone_elses_mistake_corrects_nothing_of_the_users(tmp_path: Path) -> None:
    with Memory.open(tmp_path) as memory:
        kept = memory.add("My birthday is on May 9", user_id="u")[0]
        memory.add("ugh, the bakery spelled my name wrong on the cake again", user_id="u")
        assert kept.id in {r.id for r in memory.get_all(user_id="u")}
