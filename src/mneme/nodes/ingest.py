"""`ingest`: check and normalize the new input, update task state and the session record."""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from mneme.context import Context, context_of, thread_id
from mneme.errors import InputError
from mneme.memory.record import check_user, now_iso
from mneme.memory.repo import Repo
from mneme.state import GroupInput, State, TaskState
from mneme.tokens import message_text

TITLE_CHARS = 60

_SLOT_PATTERNS: dict[str, re.Pattern[str]] = {
    "order_id": re.compile(
        r"(?:订单号?|order\s*(?:number|no\.?|id|#)?)\s*(?:是|为|[:：#])?\s*([A-Za-z0-9-]*\d[A-Za-z0-9-]{5,})",
        re.I,
    ),
    "date": re.compile(r"\d{4}[-/年]\d{1,2}[-/月]\d{1,2}日?|\d{1,2}月\d{1,2}[日号]"),
    "amount": re.compile(r"(?:¥|￥|\$|RMB\s?)\s?\d+(?:\.\d+)?|\d+(?:\.\d+)?\s?(?:元|块|dollars?|USD)", re.I),
    "phone": re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)"),
}
_INTENTS: list[tuple[str, re.Pattern[str]]] = [
    ("return", re.compile(r"退货|退款|退换|return|refund", re.I)),
    ("order_status", re.compile(r"发货|物流|到哪|shipped|track|where is my", re.I)),
    ("forget", re.compile(r"忘掉|忘记|删除我|forget|delete my", re.I)),
    ("preference", re.compile(r"以后|喜欢|偏好|不要|prefer|always|don't like", re.I)),
]


def update_task(task: TaskState, text: str) -> TaskState:
    """Fold the slots and intent found in a user message into the task state."""
    slots = dict(task.get("slots") or {})
    for name, pattern in _SLOT_PATTERNS.items():
        found = pattern.findall(text)
        if found:
            slots[name] = found[-1] if isinstance(found[-1], str) else found[-1][0]
    intent = next((name for name, rx in _INTENTS if rx.search(text)), task.get("intent") or "chat")
    out = TaskState(slots=slots, intent=intent)
    if task.get("pending_action"):
        out["pending_action"] = task["pending_action"]
    return out


def merge_group(group: GroupInput) -> tuple[HumanMessage, list[str]]:
    """Turn a group-chat burst into one structured user message and its participants."""
    bot = (group.get("bot_name") or "").strip()
    trigger = group.get("trigger")
    if not trigger or not str(trigger.get("content", "")).strip():
        raise InputError("mneme: a group input needs a trigger message with content")
    lines = []
    said: list[dict[str, str]] = []
    speakers: list[str] = []
    for msg in [*group.get("history", []), trigger]:
        sender = str(msg.get("sender", "")).strip() or "unknown"
        if bot and sender == bot:
            continue  # the bot's own lines are already in the thread
        content = str(msg.get("content", "")).strip()
        if not content:
            continue
        if sender not in speakers:
            speakers.append(sender)
        stamp = f"[{msg['timestamp']}] " if msg.get("timestamp") else ""
        lines.append(f"{stamp}{sender}: {content}")
        said.append({"sender": sender, "content": content, "timestamp": str(msg.get("timestamp", ""))})
    header = f"[group chat; participants: {', '.join(speakers)}; the last line addressed you]"
    sender = str(trigger.get("sender", "")).strip() or "unknown"
    body = header + "\n" + "\n".join(lines)
    message = HumanMessage(
        content=body,
        name=sender,
        id=str(uuid.uuid4()),
        additional_kwargs={"group_messages": said, "speakers": speakers},
    )
    return message, speakers


def _stale_inputs(messages: list[AnyMessage], keep: str | None) -> list[RemoveMessage]:
    """Earlier user inputs that a previous turn refused (empty): they leave the thread."""
    return [
        RemoveMessage(id=m.id)
        for m in messages
        if isinstance(m, HumanMessage) and m.id and m.id != keep and not message_text(m).strip()
    ]


def ingest(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check the new input, merge a group burst, update task state and the session record.

    Raises:
        InputError: no user id, no new user message, an empty one, or one over the size limit.
    """
    ctx = context_of(runtime)
    user = check_user(ctx.user_id)
    updates: dict[str, Any] = {"group": None, "writes": []}
    participants = [user]
    new_messages: list[AnyMessage] = []
    if state.group:
        message, participants = merge_group(state.group)
        new_messages.append(message)
        last: AnyMessage = message
    else:
        if not state.messages or not isinstance(state.messages[-1], HumanMessage):
            raise InputError("mneme: send a user message: {'messages': [{'role': 'user', 'content': '...'}]}")
        last = state.messages[-1]
    text = message_text(last)
    if not text.strip():
        raise InputError("mneme: the message is empty")
    if len(text) > ctx.max_message_chars:
        raise InputError(
            f"mneme: the message has {len(text):,} characters, more than max_message_chars="
            f"{ctx.max_message_chars:,}; split it or raise the limit"
        )
    removals = _stale_inputs(list(state.messages), last.id)
    if new_messages or removals:
        updates["messages"] = [*removals, *new_messages]
    updates["turn_start"] = last.id or ""
    updates["task"] = update_task(state.task, text)
    updates["participants"] = participants
    if runtime.store is not None:
        thread = thread_id()
        if thread:
            repo = Repo(runtime.store)
            now = now_iso()
            session = repo.session(user, thread) or {
                "thread_id": thread,
                "user_id": user,
                "created_at": now,
                "title": text.strip().splitlines()[0][:TITLE_CHARS],
                "turns": 0,
            }
            session.update(updated_at=now, turns=int(session.get("turns", 0)) + 1)
            if state.group:
                session["group"] = True
            repo.put_session(user, thread, session)
    return updates
