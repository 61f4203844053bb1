"""Task state: slots, intent and pending action, updated every turn from what the user and tools said."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mneme.nodes.ingest import update_task
from mneme.state import TaskState


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("我的订单号是20240508001", "order_id", "20240508001"),
        ("order #A1234567 please", "order_id", "A1234567"),
        ("5月8日买的", "date", "5月8日"),
        ("bought on 2024-05-08", "date", "2024-05-08"),
        ("花了299元", "amount", "299元"),
        ("it cost $49.99", "amount", "$49.99"),
        ("地址改为上海市浦东新区世纪大道100号", "address", "上海市浦东新区世纪大道100号"),
        ("寄到北京市海淀区中关村大街27号吧", "address", "北京市海淀区中关村大街27号"),
        ("my address is 221B Baker Street, London", "address", "221B Baker Street, London"),
        ("send it to 12 Rue Street please", "address", "12 Rue Street"),
        ("电话13812345678", "phone", "13812345678"),
    ],
)
def test_slots_are_found_in_what_the_user_says(text: str, slot: str, value: str) -> None:
    assert update_task(TaskState(slots={}), text)["slots"][slot] == value


def test_slots_survive_later_turns_and_the_newest_value_wins() -> None:
    task = update_task(TaskState(slots={}), "订单号20240508001还没到")
    task = update_task(task, "今天天气不错")
    assert task["slots"]["order_id"] == "20240508001"
    task = update_task(task, "另一个订单号是20240601002")
    assert task["slots"]["order_id"] == "20240601002"


def test_tool_results_of_the_previous_turn_fill_the_order_status() -> None:
    result = json.dumps({"order_id": "20240508001", "status": "shipped", "courier": "SF"})
    previous = [
        HumanMessage(content="订单号20240508001发货了吗", id="h1"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup_order", "args": {"order_id": "20240508001"}, "id": "c1", "type": "tool_call"}
            ],
        ),
        ToolMessage(content=result, tool_call_id="c1", name="lookup_order"),
        AIMessage(content="已发货"),
    ]
    task = update_task(TaskState(slots={}, intent="order_status"), "好的谢谢", previous)
    assert task["slots"] == {"order_id": "20240508001", "order_status": "shipped"}
    assert "pending_action" not in task  # looked up: nothing left to do
    task = update_task(task, "订单号20240601002呢？到哪了")
    assert task["slots"]["order_id"] == "20240601002" and "order_status" not in task["slots"]


def test_pending_action_asks_for_a_missing_order_id_then_looks_it_up() -> None:
    task = update_task(TaskState(slots={}), "我要退货")
    assert task["intent"] == "return" and task["pending_action"] == "ask for the order id"
    task = update_task(task, "订单号20240508001")
    assert task["pending_action"] == "explain how to return order 20240508001"


def test_pending_action_remembers_the_question_being_answered() -> None:
    previous = [HumanMessage(content="帮我改个东西"), AIMessage(content="好的，您想改成哪一天送达？")]
    task = update_task(TaskState(slots={}), "下周三", previous)
    assert task["pending_action"].startswith("use the user's answer to:")
    assert "哪一天送达" in task["pending_action"]
