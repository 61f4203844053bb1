"""The `offline` chat model: a rule-based stand-in that runs the whole pipeline with no API key."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from mneme.memory.extract import extract, is_chinese
from mneme.memory.usermodel.statements import forget_requests
from mneme.tokens import message_text

PREFIX = {"zh": "【离线演示模型】", "en": "[offline demo model] "}
"""Every reply says what it is: rules, not a language model."""

_ORDER_ID = re.compile(r"(?<![0-9A-Za-z])(\d{8,20})(?![0-9A-Za-z])")
_RETURN = re.compile(r"退货|退款|退换|换货|return|refund", re.I)
_STATUS = re.compile(
    r"发货|物流|快递到|到哪|到了吗|状态|shipped|shipping status|where is|track|status|arrive", re.I
)
_RECALL = re.compile(
    r"你记得|还记得|你知道我|关于我|我喜欢什么|我的.{0,6}是什么|我叫什么|what do you (?:remember|know) about me|do you remember|what(?:'s| is) my|what do i like",
    re.I,
)
_GREETING = re.compile(r"^(你好|您好|嗨|hi|hello|hey)[!！。.,， ]*$", re.I)
_BULLET = re.compile(
    r"^- (?:#(?P<ref>\d+) )?(?:\[(?P<who>[^\]]+)\] )?(?:\((?P<kind>[a-z]+)\) )?(?P<text>.+)$"
)


def _lang(text: str) -> str:
    return "zh" if is_chinese(text) else "en"


def parse_memories(system: str) -> list[dict[str, str]]:
    """Read the memory lines of the `<memories>` block of a system prompt."""
    block = re.search(r"<memories>(.*?)</memories>", system, re.S)
    out = []
    for line in (block.group(1) if block else "").splitlines():
        if m := _BULLET.match(line.strip()):
            out.append(
                {
                    "who": m.group("who") or "",
                    "kind": m.group("kind") or "",
                    "text": m.group("text"),
                }
            )
    return out


_RECAP = re.compile(r"^- \[(?P<date>[^\]]*)\] (?P<text>.+)$")
_RECAP_HEAD = re.compile(r"^(?:会话「.*?」。|Session \".*?\"\. )")


def parse_recaps(system: str) -> list[tuple[str, str]]:
    """Read `(date, summary)` of each earlier session in the `<previous_sessions>` block."""
    block = re.search(r"<previous_sessions>(.*?)</previous_sessions>", system, re.S)
    out = []
    for line in (block.group(1) if block else "").splitlines():
        if m := _RECAP.match(line.strip()):
            out.append((m.group("date"), m.group("text")))
    return out


def parse_task(system: str) -> dict[str, Any]:
    """Read the `<task_state>` block of a system prompt."""
    block = re.search(r"<task_state>\s*(\{.*?\})\s*</task_state>", system, re.S)
    if not block:
        return {}
    try:
        data = json.loads(block.group(1))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _system_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(message_text(m) for m in messages if isinstance(m, SystemMessage))


def _memory_context(messages: Sequence[BaseMessage]) -> str:
    """Memories may sit in the system prompt or next to the user input."""
    text = _system_text(messages)
    for m in messages:
        if isinstance(m, HumanMessage) and "<memories>" in message_text(m):
            text += "\n" + message_text(m)
    return text


class OfflineChatModel(BaseChatModel):
    """Answers from retrieved memories and tool results with fixed rules, in Chinese or English.

    It is not a language model and says so in every reply. What it can do is enough to
    exercise every stage of mneme: call a tool when a request clearly needs one (order status,
    returns, memory search), answer from tool results, answer "what do you remember about me"
    from the injected memories, and acknowledge preferences and forget requests.
    """

    model_name: str = "offline"

    @property
    def _llm_type(self) -> str:
        return "mneme-offline"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remember which tools exist, so that only those are ever called."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = {t["function"]["name"] for t in kwargs.get("tools", []) if "function" in t}
        message = self.respond(messages, tools)
        return ChatResult(generations=[ChatGeneration(message=message)])

    # -- the rules ----------------------------------------------------------------------------

    def respond(self, messages: Sequence[BaseMessage], tools: set[str]) -> AIMessage:
        """Decide the reply to a conversation."""
        last_human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        user_text = message_text(last_human) if last_human else ""
        user_text = re.sub(r"<memories>.*?</memories>", "", user_text, flags=re.S).strip()
        lang = _lang(user_text or _system_text(messages))
        memories = parse_memories(_memory_context(messages))
        slots = parse_task(_system_text(messages)).get("slots") or {}
        if messages and isinstance(messages[-1], ToolMessage):
            results = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                results.append(m)
            return self._say(lang, self._from_tools(list(reversed(results)), memories, lang))
        call = self._tool_call(user_text, memories, tools, str(slots.get("order_id", "")))
        if call is not None:
            return AIMessage(content="", tool_calls=[call])
        reply = self._chat(user_text, memories, lang)
        recaps = parse_recaps(_system_text(messages))
        first_turn = sum(isinstance(m, HumanMessage) for m in messages) == 1
        if recaps and first_turn and _GREETING.match(user_text):  # follow up on last time
            date, text = recaps[0]
            text = _RECAP_HEAD.sub("", text)
            text = text if len(text) <= 80 else text[:79] + "…"
            reply += (
                f"上次（{date}）我们聊到：{text} 这次还需要跟进吗？"
                if lang == "zh"
                else f" Last time ({date}) we talked about: {text} Anything to follow up on?"
            )
        return self._say(lang, reply)

    def _say(self, lang: str, text: str) -> AIMessage:
        return AIMessage(content=PREFIX[lang] + text)

    def _order_id(self, text: str, memories: list[dict[str, str]], slot: str = "") -> str | None:
        if m := _ORDER_ID.search(text):
            return m.group(1)
        if slot:  # the order this conversation is about (task state)
            return slot
        # "that headset I bought": find the remembered order whose item the user mentions.
        words = set(re.findall(r"[\u4e00-\u9fff]{2}|[a-z]{3,}", text.lower()))
        best: tuple[int, str] | None = None
        for mem in memories:
            if not (m := _ORDER_ID.search(mem["text"])):
                continue
            overlap = sum(1 for w in words if w in mem["text"].lower())
            if best is None or overlap > best[0]:
                best = (overlap, m.group(1))
        return best[1] if best else None

    def _tool_call(
        self, text: str, memories: list[dict[str, str]], tools: set[str], slot: str
    ) -> dict[str, Any] | None:
        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return {
                "name": name,
                "args": args,
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "tool_call",
            }

        if _RETURN.search(text) and "get_return_policy" in tools:
            order_id = self._order_id(text, memories, slot)
            if order_id:
                return call("get_return_policy", {"order_id": order_id})
        if _STATUS.search(text) and "lookup_order" in tools:
            order_id = self._order_id(text, memories, slot)
            if order_id:
                return call("lookup_order", {"order_id": order_id})
        if _RECALL.search(text) and not memories and "search_memory" in tools:
            return call("search_memory", {"query": ""})  # "what do you know about me": the top memories
        return None

    def _from_tools(self, results: list[ToolMessage], memories: list[dict[str, str]], lang: str) -> str:
        parts = []
        for res in results:
            try:
                data = json.loads(message_text(res))
            except (ValueError, TypeError):
                parts.append(message_text(res))
                continue
            parts.append(self._render_tool(res.name or "", data, memories, lang))
        return "\n".join(p for p in parts if p)

    def _render_tool(self, name: str, data: Any, memories: list[dict[str, str]], lang: str) -> str:
        zh = lang == "zh"
        if isinstance(data, dict) and data.get("error"):
            return str(data.get("message_zh" if zh else "message") or data["error"])
        if name == "lookup_order" and isinstance(data, dict):
            item = data.get("item" if zh else "item_en", data.get("item", ""))
            if zh:
                status = {"shipped": "已发货", "delivered": "已签收", "processing": "正在备货"}.get(
                    data.get("status", ""), data.get("status", "")
                )
                out = f"您的订单 {data['order_id']}（{item}）{status}"
                if data.get("courier"):
                    out += f"，承运快递：{data['courier']}，运单号 {data.get('tracking', '—')}"
                return out + "。"
            out = f"Your order {data['order_id']} ({item}) is {data.get('status', 'unknown')}"
            if data.get("courier"):
                out += f", carried by {data['courier']} (tracking {data.get('tracking', '-')})"
            return out + "."
        if name == "get_return_policy" and isinstance(data, dict):
            courier = next(
                (
                    m["text"]
                    for m in memories
                    if "顺丰" in m["text"] or "shipping" in m["text"].lower() or "快递" in m["text"]
                ),
                None,
            )
            item = data.get("item" if zh else "item_en", data.get("item", ""))
            if zh:
                out = f"订单 {data['order_id']}（{item}）{data.get('policy_zh', data.get('policy', ''))}"
                if courier:
                    out += f" 我记得您的偏好（{courier}），退货取件会按这个安排。"
                return out
            out = f"Order {data['order_id']} ({item}): {data.get('policy', '')}"
            if courier:
                out += f" I remember your preference ({courier}); the pickup will follow it."
            return out
        if name == "search_memory":
            hits = data.get("memories", []) if isinstance(data, dict) else data
            if not hits:
                return "我还没有关于您的记忆。" if zh else "I don't have any memories about you yet."
            lines = (
                "；".join(h.get("text", "") for h in hits)
                if zh
                else "; ".join(h.get("text", "") for h in hits)
            )
            return ("我记得：" if zh else "I remember: ") + lines
        return json.dumps(data, ensure_ascii=False)

    def _chat(self, text: str, memories: list[dict[str, str]], lang: str) -> str:
        zh = lang == "zh"
        if not text:
            return "请告诉我您需要什么帮助。" if zh else "Tell me what you need."
        if any(not c.tentative for c in forget_requests(text)):  # as the write path reads it
            return (
                "好的，这部分信息我已经忘掉了，之后不会再用。"
                if zh
                else "Done: I have forgotten that and won't use it again."
            )
        if _RECALL.search(text):
            if not memories:
                return "我还没有关于您的记忆。" if zh else "I don't have any memories about you yet."
            own = [m["text"] for m in memories]
            return ("我记得：" + "；".join(own) + "。") if zh else ("I remember: " + "; ".join(own) + ".")
        facts = extract(text)
        if facts:
            noted = "；".join(f.text for f in facts) if zh else "; ".join(f.text for f in facts)
            return f"好的，我记下了：{noted}。" if zh else f"Noted: {noted}."
        if _RETURN.search(text) or _STATUS.search(text):
            return "可以帮您查询，请告诉我订单号。" if zh else "I can look that up: what is the order number?"
        if _GREETING.match(text):
            return (
                "您好！我是使用 mneme 记忆的离线演示助手，可以帮您查订单、记住您的偏好。"
                if zh
                else "Hello! I'm mneme's offline demo assistant: I can look up orders and remember your preferences."
            )
        if memories:
            related = memories[0]["text"]
            who = f"{memories[0]['who']}：" if memories[0]["who"] else ""
            return (
                f"我是离线规则模型，无法真正理解这句话。与之相关我记得：{who}{related}。"
                if zh
                else f"I'm a rule-based offline model and can't really answer that. Related, I remember: {who}{related}."
            )
        return (
            "我是离线规则模型，无法真正回答这个问题；设置 OPENAI_API_KEY 后会使用真正的模型。"
            if zh
            else "I'm a rule-based offline model and can't really answer that; set OPENAI_API_KEY to use a real model."
        )
