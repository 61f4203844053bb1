"""Personal data is masked in every form people write it, and ordinary numbers are left alone."""

from __future__ import annotations

import pytest

from mneme.memory.record import redaction_markers
from mneme.memory.redact import RedactionPolicy, detect, redact, redact_value

MASKED = [
    # (text, kind, what must not survive)
    ("身份证号 11010519491231002X", "cn_id", "11010519491231002"),
    ("身份证 110105 19491231 002X", "cn_id", "19491231"),
    ("身份证：110105-1949-1231-002X", "cn_id", "1231-002"),
    ("身份证１１０１０５１９４９１２３１００２Ｘ", "cn_id", "１９４９１２３１"),
    ("老身份证 110105491231002", "cn_id", "491231"),
    ("my ID is 110105194912310\u200b02X", "cn_id", "1949123"),
    ("卡号 6222.0202.0011.2233.446", "bank_card", "0202.0011"),
    ("银行卡6222020200112233446", "bank_card", "62220202001122"),
    ("visa 4111 1111 1111 1111", "bank_card", "4111 1111 1111"),
    ("手机 137 1234 5678", "phone", "1234 5678"),
    ("手机号：137-1234-5678", "phone", "1234-5678"),
    ("call +1 (415) 555-2671", "phone", "555-2671"),
    ("电话010-62345678", "phone", "62345678"),
    ("座机（021）6234 5678", "phone", "6234 5678"),
    ("my number is 0086 137 1234 5678", "phone", "1234 5678"),
    ("电话 １３７１２３４５６７８", "phone", "１２３４５６７８"),
    ("手机号一三七一二三四五六七八", "phone", "一二三四五六七八"),
    ("email me at bob(at)example(dot)com", "email", "bob(at)"),
    ("邮箱 bob＠example．com", "email", "bob＠"),
    ("mail bob [at] example [dot] com", "email", "bob [at]"),
    ("wang.xm@163.com 是我的邮箱", "email", "wang.xm"),
    ("护照号 E12345678", "passport", "12345678"),
    ("passport number 123456789", "passport", "123456789"),
    ("SSN 078-05-1120", "cn_id", "078-05"),
    ("IBAN DE89 3704 0044 0532 0130 00", "bank_card", "3704 0044"),
    ("我住在杭州市西湖区文三路478号华星时代广场A座1202室", "address", "文三路478号"),
    ("家住阳光花园小区3栋2单元501", "address", "3栋2单元"),
    ("I live at 221B Baker Street, Apt 4, London", "address", "Baker Street"),
    ("new number for me: 4155550187", "phone", "4155550187"),  # named only by "my/new number"
    ("您好，我的号码 02087654321", "phone", "87654321"),
    ("passport G 3312 0457 for the visa", "passport", "3312 0457"),  # grouped
    ("his DL number 987 654 321 expired", "passport", "654 321"),
    ("My driving licence number is HARRI751123JP4AB", "passport", "751123"),  # a UK licence
    ("寄到西溪花园三期7幢2单元1101室", "address", "7幢2单元1101"),  # an estate's section
    ("送到文一路99号紫金花园二期5栋302", "address", "5栋302"),  # a road, then an estate
    ("her social security number is 219 45 7730", "cn_id", "45 7730"),  # a long label, spaced
    ("我的社会安全号 219457730 要填在表上", "cn_id", "219457730"),
    ("passport (number 620 118 453) renews in May", "passport", "118 453"),  # groups of three
    ("李明，1988年2月14日出生于成都", "birth_date", "1988"),  # the word after the date
    ("they need your social: 219.45.7730", "cn_id", "45.7730"),  # "social" for the SSN
    ("the whole thing reads 545454 5454545454 on the back", "bank_card", "5454545454"),  # 6-10
    ("慕尼黑办公室固话 089/12345678，工作日打", "phone", "12345678"),  # a German slash form
    ("寄到1600 Amphitheatre Parkway, Apt 5就行", "address", "Amphitheatre"),  # after Chinese
    ("pay with card5500005555555559please", "bank_card", "5500005555555559"),  # glued to words
    ("帮我记一下身份证：4403 0519 8807 2316 1X，有效期到2036年", "cn_id", "0519 8807"),  # named, a typo in it
    ("save my ID number pls: 4201 0619 9303 0852 7X", "cn_id", "9303 0852"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), MASKED)
def test_personal_data_is_masked_in_every_written_form(text: str, kind: str, secret: str) -> None:
    red = redact(text)
    assert kind in red.hidden, red
    assert secret not in red.text, red.text


@pytest.mark.parametrize(
    "text",
    [
        "订单号20240508001，价格299元",
        "upgrade to version 123.45.6789 first",
        "order4539148803436467 shipped today",
        "my social media account is 219457730",
        "order 4111111111111111 has not arrived",  # Luhn-valid, but named an order
        "tracking ZT7730012468",
        "2024-05-08 的订单",
        "The shop opened on 1990-01-01",
        "打12345投诉有用吗",
        "I called support at 1-800-275-2273",  # a public toll-free line
        "客服热线 400-800-8888",
        "我的生日是五月三号",  # a birthday without its year is worth remembering
        "价格 1,299.00 元",
        "航班CA1234 晚点了",
        "我住在上海浦东新区",  # a district is a useful fact, not an address
        "我住的小区有游泳池",
        "3 blocks down Main Street",
        "I work at amazon.com",
        "转账 ¥12345678",
        "会议 10:30 开始，3 个人",
        "my order number is 20240315008812",  # "my … number", but an order
        "我住在三区，离地铁近",  # a section without a building
        "software licence number 2024 renewal",
    ],
)
def test_ordinary_numbers_and_places_are_left_as_they_are(text: str) -> None:
    assert redact(text).text == text


def test_the_city_and_district_stay_and_the_door_goes() -> None:
    red = redact("我住在杭州市西湖区文三路478号华星时代广场A座1202室，平时在滨江上班")
    assert red.text == "我住在杭州市西湖区[address ***]，平时在滨江上班"
    assert (
        redact("Ship to 1600 Pennsylvania Avenue NW, Washington").text == "Ship to [address ***], Washington"
    )


def test_the_rest_of_the_text_keeps_its_own_punctuation() -> None:
    red = redact("手机：１３７１２３４５６７８，谢谢！")
    assert red.text == "手机：[phone *******5678]，谢谢！"


def test_a_date_of_birth_loses_its_year_and_keeps_the_birthday() -> None:
    assert redact("I was born on 1990-01-01").text == "I was born on [birthday ****-01-01]"
    assert redact("生日1985年11月23日").text == "生日[birthday ****年11月23日]"
    assert redact("车牌京A·F2351").text == "车牌[plate **2351]"


def test_redacting_twice_changes_nothing() -> None:
    once = redact("身份证11010519491231002X，手机13812345678，邮箱 a.b@example.com").text
    assert redact(once).text == once
    assert redaction_markers(once) == ["cn_id", "email", "phone"]


def test_policies_per_kind_and_never_in_clear() -> None:
    text = "护照 E12345678，住在文三路478号"
    dropped = redact(text, RedactionPolicy(passport="drop", address="drop"))
    assert dropped.text == "护照 [passport removed]，住在[address removed]" and dropped.drop
    assert redact(text, RedactionPolicy(address="keep")).text == "护照 [passport *****5678]，住在文三路478号"
    with pytest.raises(ValueError, match="cannot be kept in clear"):
        RedactionPolicy(passport="keep")


def test_metadata_values_are_masked_keys_are_kept() -> None:
    meta = {"contact": "13712345678", "nested": {"ids": ["110105194912310\u200b02X"]}, "n": 3}
    assert redact_value(meta) == {
        "contact": "[phone *******5678]",
        "nested": {"ids": ["[ID **************002X]"]},
        "n": 3,
    }


def test_detect_reads_each_value_once() -> None:
    found = detect("电话13712345678，卡号6222020200112233446")
    assert [(f.kind, f.value) for f in found] == [
        ("phone", "13712345678"),
        ("bank_card", "6222020200112233446"),
    ]


def test_session_titles_recaps_and_running_summaries_never_hold_the_numbers() -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.runtime import Runtime
    from langgraph.store.memory import InMemoryStore

    from mneme import recap
    from mneme.context import Context
    from mneme.memory.repo import Repo
    from mneme.nodes import make_summarize
    from mneme.nodes.ingest import record_session
    from mneme.state import State

    store = InMemoryStore()
    said = "我的身份证号 110105 19491231 002X，卡号 6222.0202.0011.2233.446，帮我开户"
    record_session(store, "u", "t", said, group=False)  # the title is cut after masking
    values = {"messages": [HumanMessage(said), AIMessage(f"好的，已确认：{said}")], "summary": "", "task": {}}
    recap.note_turn(store, "u", "t", values)
    recap.end_session(store, "u", "t")
    session = Repo(store).session("u", "t") or {}
    kept = " ".join([session["title"], session["recap"], *(r.text for r in Repo(store).records("u"))])
    assert "[ID" in session["title"] and "[card" in session["recap"]
    assert not any(s in kept for s in ("19491231", "0011.2233", "62220202"))

    turns = [
        HumanMessage(f"turn {i}: call me at 137 1234 {5670 + i} please, decided", id=f"h{i}")
        for i in range(40)
    ]
    thread = [m for i, h in enumerate(turns) for m in (h, AIMessage(f"ok {i}", id=f"a{i}"))]
    out = make_summarize("offline")(
        State(messages=thread), runtime=Runtime(context=Context(user_id="u", budget_history=300), store=store)
    )
    assert out["summary"] and "1234 567" not in out["summary"] and "[phone" in out["summary"]
