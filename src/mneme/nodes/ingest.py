"""`ingest`: check and normalize the new input, update task state and the session record."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Sequence
from typing import Any, NoReturn, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from mneme import recap
from mneme.context import Context, context_of, thread_id
from mneme.errors import InputError
from mneme.memory.extract import MENTION
from mneme.memory.record import check_user, now_iso
from mneme.memory.redact import redact_text
from mneme.memory.repo import REFUSED_INPUTS, Repo, refused_inputs
from mneme.state import GroupInput, GroupMessage, State, TaskState
from mneme.tokens import message_text

log = logging.getLogger("mneme.ingest")

TITLE_CHARS = 60
GROUP_MEMBERS = 8
"""The members of a group chat remembered by its thread, and the most people a burst is for
(its speakers, then the members who spoke most recently)."""

_SLOT_PATTERNS: dict[str, re.Pattern[str]] = {
    "order_id": re.compile(
        r"(?:订单号?|order\s*(?:number|no\.?|id|#)?)\s*(?:是|为|[:：#])?\s*([A-Za-z0-9-]*\d[A-Za-z0-9-]{5,})",
        re.I,
    ),
    "date": re.compile(r"\d{4}[-/年]\d{1,2}[-/月]\d{1,2}日?|\d{1,2}月\d{1,2}[日号]"),
    "amount": re.compile(r"(?:¥|￥|\$|RMB\s?)\s?\d+(?:\.\d+)?|\d+(?:\.\d+)?\s?(?:元|块|dollars?|USD)", re.I),
    "phone": re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)"),
    "address": re.compile(
        r"(?:地址(?:是|为|改成|改为|[:：])\s*)([^\s，,。；;！!？?]{4,60})"
        r"|(?:寄到|送到|发到|改到|改成|改为|住在|到|在)?([\u4e00-\u9fff]{2,3}(?:省|市)[\u4e00-\u9fff\d]{1,30}?"
        r"(?:区|县|路|街|道)(?:[\u4e00-\u9fff\d-]*?\d+[号室楼弄](?:\d+[号室楼])*)?)"
        r"|(?:address\s*(?:is|:)\s*)([^.;!?\n]{6,80})"
        r"|(\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Boulevard|Blvd|Lane|Ln|Drive|Dr)\b\.?)",
        re.I,
    ),
}
_INTENTS: list[tuple[str, re.Pattern[str]]] = [
    ("return", re.compile(r"退货|退款|退换|return|refund", re.I)),
    ("order_status", re.compile(r"发货|物流|到哪|shipped|track|where is my", re.I)),
    ("change_address", re.compile(r"改地址|地址改|修改地址|change (?:my |the )?address", re.I)),
    ("forget", re.compile(r"忘掉|忘记|删除我|forget|delete my", re.I)),
    ("preference", re.compile(r"以后|喜欢|偏好|不要|prefer|always|don't like", re.I)),
]
_PENDING: dict[str, str] = {
    "order_status": "look up order {order_id} and tell its status",
    "return": "explain how to return order {order_id}",
    "change_address": "change the delivery address of order {order_id}",
    "forget": "forget what the user asked to forget",
}
"""What the agent still has to do for an intent (slots filled in)."""
ASK_ORDER_ID = "ask for the order id"
_NEEDS_ORDER = {"order_status", "return", "change_address"}
_QUESTION = re.compile(r"[?？]\s*$")


def _found(match: str | tuple[str, ...]) -> str:
    """The text of a regex hit (the first non-empty group when the pattern has groups)."""
    if isinstance(match, str):
        return match.strip()
    return next((g.strip() for g in match if g and g.strip()), "")


def tool_slots(messages: Sequence[AnyMessage]) -> dict[str, str]:
    """Slots learned from tool results (an order's status), oldest first so the newest wins."""
    slots: dict[str, str] = {}
    for msg in messages:
        if not isinstance(msg, ToolMessage):
            continue
        try:
            data = json.loads(message_text(msg))
        except (ValueError, TypeError):
            continue
        if isinstance(data, dict) and data.get("order_id") and data.get("status"):
            slots["order_id"] = str(data["order_id"])
            slots["order_status"] = str(data["status"])
    return slots


def last_question(messages: Sequence[AnyMessage]) -> str:
    """The assistant's last reply if it asked the user something (what the user now answers)."""
    for msg in reversed(messages):
        if isinstance(msg, AIMessage) and not msg.tool_calls:
            text = " ".join(message_text(msg).split())
            return text[-120:] if _QUESTION.search(text) else ""
        if isinstance(msg, HumanMessage) and msg is not messages[-1]:
            return ""
    return ""


def update_task(task: TaskState, text: str, previous: Sequence[AnyMessage] = ()) -> TaskState:
    """The task state after a new user message.

    Slots: values found in the message (order ids, dates, amounts, phones, addresses) and in
    the previous turn's tool results (an order's status); the newest value of a slot wins.
    Intent: from the message, else the previous intent. Pending action: what the intent still
    needs (asking for a missing order id first), else the question the user is answering.

    Args:
        task: The task state so far.
        text: The new user message.
        previous: The thread's messages before it.

    Returns:
        The new task state.
    """
    slots = dict(task.get("slots") or {})
    starts = [i for i, m in enumerate(previous) if isinstance(m, HumanMessage)]
    slots.update(tool_slots(previous[starts[-1] if starts else 0 :]))  # the previous turn's results
    for name, pattern in _SLOT_PATTERNS.items():
        found = [_found(m) for m in pattern.findall(text)]
        found = [f for f in found if f]
        if found:
            if name == "order_id" and found[-1] != slots.get("order_id"):
                slots.pop("order_status", None)  # a new order: the old status no longer applies
            slots[name] = found[-1]
    said = next((name for name, rx in _INTENTS if rx.search(text)), None)
    intent = said or task.get("intent") or "chat"
    out = TaskState(slots=slots, intent=intent)
    gave_id = task.get("pending_action") == ASK_ORDER_ID and "order_id" in slots
    if intent in _NEEDS_ORDER and "order_id" not in slots:
        out["pending_action"] = ASK_ORDER_ID
    elif intent in _PENDING and (said == intent or gave_id):
        out["pending_action"] = _PENDING[intent].format(order_id=slots.get("order_id", ""))
    elif question := last_question(previous):
        out["pending_action"] = f"use the user's answer to: {question}"
    return out


LINE_BREAK = " ⏎ "
"""What stands for a line break inside one group message in the merged input."""


def _one_line(text: str, joiner: str = " ") -> str:
    return joiner.join(part.strip() for part in text.splitlines() if part.strip())


def _sender(msg: GroupMessage) -> str:
    """Who said a line of a group burst, on one line ("" when the line names no one)."""
    sender = msg.get("sender")
    return "" if sender is None else _one_line(str(sender))


def check_group(group: Any) -> GroupInput:
    """Check a whole group-chat burst before any of it is used.

    Every line is written to its sender's memory, so a line must name its sender: a line
    without one is refused rather than guessed (a made-up name could be a real user's id).

    Args:
        group: The `group` of an input: `{"history": [...], "trigger": {...}, "bot_name": ...}`.

    Returns:
        The burst, unchanged.

    Raises:
        InputError: not a burst, no trigger with content, or a line without a sender (named
            by its place: "history line 2", "the trigger").
    """
    if not isinstance(group, dict):
        raise InputError(f"mneme: a group input must be a dict, not {type(group).__name__}")
    trigger = group.get("trigger")
    if not isinstance(trigger, dict) or not str(trigger.get("content", "")).strip():
        raise InputError("mneme: a group input needs a trigger message with content")
    history = group.get("history") or []
    if not isinstance(history, list):
        raise InputError(f"mneme: a group input's history must be a list, not {type(history).__name__}")
    lines = [(f"history line {i}", msg) for i, msg in enumerate(history, 1)] + [("the trigger", trigger)]
    for where, msg in lines:
        if not isinstance(msg, dict):
            raise InputError(f"mneme: group {where} must be a dict, not {type(msg).__name__}")
        if not _sender(cast(GroupMessage, msg)):
            said = _one_line(str(msg.get("content", "")))[:40]
            raise InputError(
                f"mneme: group {where} ({said!r}) has no sender; every line of a group input needs "
                "the user id of who said it"
            )
    return cast(GroupInput, group)


def merge_group(group: GroupInput) -> tuple[HumanMessage, list[str]]:
    """Turn a group-chat burst into one structured user message and its participants.

    Raises:
        InputError: a burst that `check_group` refuses; nothing of it is used.
    """
    group = check_group(group)
    bot = (group.get("bot_name") or "").strip()
    trigger = group["trigger"]
    lines = []
    said: list[dict[str, str]] = []
    speakers: list[str] = []
    for msg in [*(group.get("history") or []), trigger]:
        sender = _sender(msg)
        if bot and sender == bot:
            continue  # the bot's own lines are already in the thread
        content = str(msg.get("content", "")).strip()
        if not content:
            continue
        if sender not in speakers:
            speakers.append(sender)
        stamp = f"[{_one_line(str(msg['timestamp']))}] " if msg.get("timestamp") else ""
        # each line of the burst is one line here: a message with line breaks cannot forge
        # another speaker's line ("ok\n[09:05] nina: I love tequila")
        lines.append(f"{stamp}{sender}: {_one_line(content, LINE_BREAK)}")
        plain = MENTION.sub(" ", content).strip() or content  # "@bot 你好": the mention says nothing
        said.append({"sender": sender, "content": plain, "timestamp": str(msg.get("timestamp", ""))})
    header = f"[group chat; participants: {', '.join(speakers)}; the last line addressed you]"
    sender = _sender(trigger)
    body = header + "\n" + "\n".join(lines)
    message = HumanMessage(
        content=body,
        name=sender,
        id=str(uuid.uuid4()),
        additional_kwargs={"group_messages": said, "speakers": speakers},
    )
    return message, speakers


def _stale_inputs(messages: list[AnyMessage], keep: str | None, refused: set[str]) -> list[RemoveMessage]:
    """Earlier user inputs that a previous turn refused (empty, or another user's): they leave the thread."""
    return [
        RemoveMessage(id=m.id)
        for m in messages
        if isinstance(m, HumanMessage)
        and m.id
        and m.id != keep
        and (m.id in refused or not message_text(m).strip())
    ]


def _refuse_foreign(state: State, store: BaseStore | None, user: str) -> NoReturn:
    """Refuse another user's run of a thread, noting its input for the owner's next turn to remove.

    Raises:
        InputError: always.
    """
    thread = thread_id()
    last = state.messages[-1] if state.messages else None
    if store is not None and thread and not state.group and isinstance(last, HumanMessage) and last.id:
        repo = Repo(store)
        session = repo.session(state.owner, thread)
        if session is not None:
            noted = [*(session.get(REFUSED_INPUTS) or []), last.id]
            repo.put_session(state.owner, thread, {**session, REFUSED_INPUTS: noted})
    raise InputError(
        f"mneme: thread {thread or ''!r} is another user's session; start a new thread for user {user!r}"
    )


def ingest(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check the new input, merge a group burst, update task state and the session record.

    Raises:
        InputError: no user id, no new user message, an empty one, one over the size limit, or
            a thread another user started (its history and memories are theirs), unless it is a
            group chat's thread and the input a group burst (any member may address the bot).
    """
    ctx = context_of(runtime)
    user = check_user(ctx.user_id)
    if state.owner and state.owner != user and not (state.shared and state.group):
        _refuse_foreign(state, runtime.store, user)
    # `summary` and `recaps` are re-written every turn, though they seldom change: they are
    # delta channels (`state.Latest`), and a read walks back to their last full copy, which
    # comes every few writes; unwritten, that walk would reach the thread's first turn.
    updates: dict[str, Any] = {"group": None, "writes": [], "summary": state.summary, "recaps": state.recaps}
    participants = [user]
    new_messages: list[AnyMessage] = []
    if state.group:
        message, speakers = merge_group(state.group)
        new_messages.append(message)
        last: AnyMessage = message
        # the group's members who are not in this burst are at the table too ("帮我们订个餐厅")
        participants = [*speakers, *(m for m in state.members if m not in speakers)][
            : max(GROUP_MEMBERS, len(speakers))
        ]
        updates["members"] = list(dict.fromkeys([*reversed(speakers), *state.members]))[:GROUP_MEMBERS]
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
    thread = thread_id()
    session = Repo(runtime.store).session(user, thread) if runtime.store is not None and thread else None
    removals = _stale_inputs(list(state.messages), last.id, refused_inputs(session))
    if new_messages or removals:
        updates["messages"] = [*removals, *new_messages]
    updates["turn_start"] = last.id or ""
    earlier = [m for m in state.messages if m.id != last.id]
    updates["task"] = update_task(state.task, text, earlier)
    updates["participants"] = participants
    if not state.owner:
        updates["owner"] = user
        updates["shared"] = bool(state.group)
    if runtime.store is not None and thread:
        title = str((state.group or {}).get("trigger", {}).get("content", "")) if state.group else text
        new = record_session(runtime.store, user, thread, title, group=bool(state.group), session=session)
        if new and not state.group:
            updates["recaps"] = start_session(runtime.store, user, thread, ctx)
    return updates


def record_session(
    store: BaseStore,
    user: str,
    thread: str,
    title: str,
    *,
    group: bool,
    session: dict[str, Any] | None = None,
) -> bool:
    """Create or update the session record of a thread; True when the session is new.

    Args:
        store: The memory store.
        user: The session's user.
        thread: The thread id.
        title: What the session is about (its first message; kept only when the session is new).
        group: Whether it is a group chat.
        session: The record as already read this turn (read here when None).
    """
    repo = Repo(store)
    now = now_iso()
    session = dict(session) if session is not None else repo.session(user, thread)
    new = session is None
    if session is None:
        first = redact_text((title.strip().splitlines() or [""])[0])  # before it is cut
        session = {
            "thread_id": thread,
            "user_id": user,
            "created_at": now,
            "title": first[:TITLE_CHARS],
            "turns": 0,
        }
    session.update(updated_at=now, turns=int(session.get("turns", 0)) + 1)
    session.pop(REFUSED_INPUTS, None)  # removed from the thread by this turn (`_stale_inputs`)
    if group:
        session["group"] = True
    repo.put_session(user, thread, session)
    return new


def start_session(store: BaseStore, user: str, thread: str, ctx: Context) -> list[dict[str, Any]]:
    """Begin a session: end the user's other sessions, load the most recent recaps.

    The other sessions' recaps are stored as episodic memories (a session whose user started
    another one counts as ended; it is recapped again if it goes on later).
    """
    if ctx.recap_sessions <= 0:
        return []
    try:
        recap.end_idle_sessions(store, user, exclude=thread, agent_id=ctx.agent_id or None)
    except Exception as exc:  # the new session must start even if an old recap cannot be stored
        log.warning("mneme: could not store the recaps of %s's earlier sessions: %s", user, exc)
    return recap.recent_recaps(store, user, exclude=thread, limit=ctx.recap_sessions)
