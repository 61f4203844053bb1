"""The offline model: honest, bilingual, and able to drive tools and memory."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mneme.models.offline import PREFIX, OfflineChatModel
from mneme.toolkit import default_tools

MODEL = OfflineChatModel().bind_tools(default_tools())


def ask(*messages) -> AIMessage:
    return MODEL.invoke(list(messages))


def test_calls_the_order_tool_when_the_request_needs_it() -> None:
    reply = ask(SystemMessage(content="sys"), HumanMessage(content="订单号20240508001发货了吗？"))
    assert reply.tool_calls[0]["name"] == "lookup_order"
    assert reply.tool_calls[0]["args"] == {"order_id": "20240508001"}


def test_finds_the_order_in_memory_or_task_state() -> None:
    system = "sys\n<memories>\n- #1 (semantic) 订单20240508001（蓝牙耳机）\n</memories>"
    reply = ask(SystemMessage(content=system), HumanMessage(content="我之前那个耳机如果退货怎么处理？"))
    assert reply.tool_calls[0]["name"] == "get_return_policy"
    assert reply.tool_calls[0]["args"]["order_id"] == "20240508001"
    task = 'sys\n<task_state>\n{"slots": {"order_id": "88442211"}}\n</task_state>'
    reply = ask(SystemMessage(content=task), HumanMessage(content="where is my order? has it shipped"))
    assert reply.tool_calls[0]["args"]["order_id"] == "88442211"


def test_answers_from_tool_results_and_says_what_it_is() -> None:
    call = AIMessage(
        content="",
        tool_calls=[{"name": "lookup_order", "args": {"order_id": "1"}, "id": "c", "type": "tool_call"}],
    )
    result = ToolMessage(
        content=json.dumps({"order_id": "1", "item": "耳机", "status": "shipped"}),
        tool_call_id="c",
        name="lookup_order",
    )
    reply = ask(SystemMessage(content="s"), HumanMessage(content="发货了吗"), call, result)
    assert reply.content.startswith(PREFIX["zh"]) and "已发货" in reply.content


def test_recalls_memories_in_english() -> None:
    system = "s\n<memories>\n- #1 (semantic) Allergic to peanuts\n</memories>"
    reply = ask(SystemMessage(content=system), HumanMessage(content="What do you remember about me?"))
    assert reply.content.startswith(PREFIX["en"]) and "peanuts" in reply.content


def test_is_honest_when_it_cannot_answer() -> None:
    reply = ask(SystemMessage(content="s"), HumanMessage(content="Explain quantum chromodynamics"))
    assert "offline" in reply.content and "OPENAI_API_KEY" in reply.content


def test_a_new_session_follows_up_on_the_last_one() -> None:
    from mneme import prompts

    line = prompts.RECAP_LINE.format(
        date="2026-11-29",
        text="会话「你好，我买了耳机」。主题：order_status。要点：order_id 20240508001，order_status shipped。",
    )
    system = SystemMessage(content="sys\n" + prompts.RECAP_BLOCK.format(recaps=line))
    reply = ask(system, HumanMessage(content="你好"))
    assert "上次（2026-11-29）我们聊到：主题：order_status。要点：order_id 20240508001" in reply.content
    assert "会话「" not in reply.content
    later = ask(system, HumanMessage(content="你好"), AIMessage(content="您好"), HumanMessage(content="你好"))
    assert "上次" not in later.content  # only when the session starts
    assert "上次" not in ask(SystemMessage(content="sys"), HumanMessage(content="你好")).content
