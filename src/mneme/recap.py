"""Session recaps: what a session was about (topic, decisions, open items), kept for the next one."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore

from mneme import prompts
from mneme.memory.record import Source, now_iso
from mneme.memory.redact import MARKER, redact_text
from mneme.memory.repo import Repo
from mneme.memory.terms import is_chinese, terms
from mneme.memory.write import OUTDATED, RECAP_SOURCE, WriteContext, Writer, names
from mneme.tokens import message_text

log = logging.getLogger("mneme.recap")

RECAP_CHARS = 700
"""A recap is cut to about this many characters (it is shown in every new session's prompt)."""
LINE_CHARS = 160
"""Each decision line is cut to this many characters."""
DECISION_LINES = 3
"""At most this many lines of what was settled are kept."""
RECAP_MESSAGE_ID = "session-recap"
"""Message id recorded on the episodic memory that holds a session's recap."""
FORGOTTEN = "forgotten"
"""Session-record key: digests of the personal-data markers of memories the user had forgotten
(`[phone ******0142]`), which the session's title and recaps never show again."""
FORGOTTEN_MARK = "[forgotten]"
"""What stands in a title or recap where forgotten personal data was."""


def _digest(marker: str) -> str:
    return hashlib.sha256(marker.encode("utf-8")).hexdigest()[:32]


def without_forgotten(text: str, forgotten: Sequence[str]) -> str:
    """A title or recap with the markers of forgotten personal data replaced by `FORGOTTEN_MARK`."""
    if not forgotten or not text:
        return text
    gone = set(forgotten)
    return MARKER.sub(lambda m: FORGOTTEN_MARK if _digest(m.group(0)) in gone else m.group(0), text)


def forget_in_sessions(store: BaseStore, user_id: str, texts: Sequence[str]) -> list[str]:
    """Take what the user forgot out of their session titles and recaps.

    A recap is built from what the session's replies settled ("Noted: Phone: [phone ******0142]")
    and its title is the session's first message, so either can quote a value the user later
    asks to forget. Each marker of personal data in the forgotten texts is replaced in every
    session record, its digest is kept there so that later recaps of the session leave it out,
    and a stored recap memory that quotes it is deleted (its history scrubbed; the next end of
    the session writes it again, without it). A title that quotes a forgotten text ("I don't
    drink, been sober 3 yrs now", or the forget request itself) becomes `FORGOTTEN_MARK`, in the
    recap too.

    Args:
        store: The memory store.
        user_id: Whose memories were forgotten.
        texts: The texts of the memories forgotten (and of the request that forgot them).

    Returns:
        The ids of the recap memories deleted.
    """
    markers = {m.group(0) for text in texts for m in MARKER.finditer(text or "")}
    said = [t for t in texts if t and terms(t)]
    if not markers and not said:
        return []
    digests = sorted({_digest(m) for m in markers})
    repo = Repo(store)
    writer = Writer(store)
    deleted = []
    for record in repo.sessions(user_id):
        title = str(record.get("title") or "")
        quoted = [k for k in ("title", "recap") if any(m in str(record.get(k) or "") for m in markers)]
        retitled = title != FORGOTTEN_MARK and any(quotes(title, t) for t in said)
        memory = (
            repo.get(user_id, str(record.get("recap_memory_id") or ""))
            if record.get("recap_memory_id")
            else None
        )
        shown = _clip(redact_text(title), 60) if retitled else None
        stale = memory is not None and (
            any(m in memory.text for m in markers) or (shown is not None and shown in memory.text)
        )
        if not quoted and not stale and not retitled:
            continue
        if markers:
            forgotten = sorted({*(record.get(FORGOTTEN) or []), *digests})
            for key in quoted:
                record[key] = without_forgotten(str(record[key]), forgotten)
            record[FORGOTTEN] = forgotten
        if shown is not None:
            record["title"] = FORGOTTEN_MARK
            record["recap"] = str(record.get("recap") or "").replace(shown, FORGOTTEN_MARK)
        if memory is not None and stale:
            ctx = WriteContext(
                user_id=user_id, source=Source(thread_id=str(record.get("thread_id", "")), actor="system")
            )
            writer.delete(memory, ctx, reason="it quoted what the user asked to forget")
            record.pop("recap_memory_id", None)
            record.pop("ended_turns", None)
            deleted.append(memory.id)
        repo.put_session(user_id, str(record.get("thread_id", "")), record)
    return deleted


def quotes(title: str, text: str) -> bool:
    """Whether a session's title quotes a forgotten text.

    It does when it holds most of the text's words, or when the text holds most of a title of two
    words or more ("I'm vegan" and "I'm vegan, 4 years in").
    """
    if not title:
        return False
    return names(text, title) or (len(terms(title)) >= 2 and names(title, text))


_SETTLED = re.compile(
    r"\d{4,}|已发货|已签收|发货|签收|退货|退款|地址|确认|决定|同意|改为|shipped|delivered|refund|return|"
    r"confirm|decid|agreed|changed|address|tracking",
    re.I,
)
_PREFIX = re.compile(r"^(?:【[^】]*】|\[offline demo model\]\s*)")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reply_text(message: AnyMessage) -> str:
    return _PREFIX.sub("", message_text(message)).strip()


def recap_text(
    *,
    title: str,
    summary: str,
    task: dict[str, Any] | None,
    messages: Sequence[AnyMessage],
    forgotten: Sequence[str] = (),
) -> str:
    """The extractive recap of a session: topic, facts of the task, what was settled, open items.

    Args:
        title: The session's title (its first user message).
        summary: Its running summary (turns already folded out of `messages`).
        task: Its task state (intent, slots, pending action).
        messages: The messages still in the thread.
        forgotten: Digests of personal data the user asked to forget (`FORGOTTEN`), left out.

    Returns:
        One paragraph of at most about `RECAP_CHARS` characters, personal data masked (each
        piece is masked before it is cut, so that no cut leaves part of a number in clear).
    """
    task = task or {}
    title, summary = redact_text(title), redact_text(summary)
    slots = {k: redact_text(str(v)) for k, v in (task.get("slots") or {}).items()}
    intent = str(task.get("intent") or "chat")
    settled: list[str] = []
    for line in summary.splitlines():
        if _SETTLED.search(line):
            settled.append(line.lstrip("- ").strip())
    for msg in messages:
        if isinstance(msg, AIMessage) and not msg.tool_calls:
            text = redact_text(_reply_text(msg))
            if text and _SETTLED.search(text):
                settled.append(text)
    decisions = [_clip(s, LINE_CHARS).rstrip("。.!！") for s in dict.fromkeys(settled)][-DECISION_LINES:]
    lang = "zh" if is_chinese(title) else "en"
    parts = prompts.RECAP_PARTS[lang]
    words = prompts.RECAP_WORDS_ZH if lang == "zh" else {}
    facts = parts["sep"].join(f"{words.get(k, k)} {words.get(str(v), v)}" for k, v in slots.items())
    pending = redact_text(str(task.get("pending_action") or ""))
    if pending and lang == "zh" and intent in prompts.RECAP_PENDING_ZH and "order_id" in slots:
        pending = prompts.RECAP_PENDING_ZH[intent].format(order_id=slots["order_id"])
    pending = words.get(pending, pending)
    intent = words.get(intent, intent)
    text = (prompts.SESSION_RECAP_ZH if lang == "zh" else prompts.SESSION_RECAP).format(
        title=_clip(title, 60),
        topic=intent,
        facts=parts["facts"].format(facts) if facts else "",
        decisions=parts["decisions"].format(" | ".join(decisions)) if decisions else "",
        open_items=parts["open_items"].format(pending) if pending else "",
    )
    return _clip(without_forgotten(redact_text(text), forgotten), RECAP_CHARS)


def llm_recap(
    model: BaseChatModel,
    *,
    summary: str,
    task: dict[str, Any] | None,
    messages: Sequence[AnyMessage],
    fallback: str,
) -> str:
    """A recap written by the model (`prompts.SESSION_RECAP_PROMPT`); `fallback` if it fails."""
    lines = []
    for msg in messages[-12:]:
        if isinstance(msg, ToolMessage):
            continue
        who = "User" if isinstance(msg, HumanMessage) else "Assistant"
        text = redact_text(_reply_text(msg))
        if text:
            lines.append(f"{who}: {_clip(text, 400)}")
    prompt = prompts.SESSION_RECAP_PROMPT.format(
        max_words=80,
        summary=summary or "(none)",
        task=json.dumps(task or {}, ensure_ascii=False),
        excerpt="\n".join(lines),
    )
    try:
        reply = model.invoke(prompt)
    except Exception as exc:
        log.warning("mneme: the LLM session summary failed (%s); using the extractive one", exc)
        return fallback
    text = message_text(reply).strip() if isinstance(reply, AIMessage) else str(reply).strip()
    return _clip(redact_text(text), RECAP_CHARS) if text else fallback


def note_turn(store: BaseStore, user_id: str, thread_id: str, values: dict[str, Any]) -> None:
    """Record the session's recap after a turn (cheap: extractive, one store write).

    Args:
        store: Where the session record lives.
        user_id: The session's user.
        thread_id: The session.
        values: The thread's state after the turn (`messages`, `summary`, `task`).
    """
    repo = Repo(store)
    record = repo.session(user_id, thread_id)
    if record is None or record.get("group"):  # a group has no one user to recap for
        return
    text = recap_text(
        title=str(record.get("title", "")),
        summary=str(values.get("summary") or ""),
        task=values.get("task"),
        messages=list(values.get("messages") or []),
        forgotten=record.get(FORGOTTEN) or (),
    )
    if text != record.get("recap"):  # small talk changes nothing: no write
        record["recap"] = text
        repo.put_session(user_id, thread_id, record)


def end_session(
    store: BaseStore, user_id: str, thread_id: str, *, text: str | None = None, agent_id: str | None = None
) -> str | None:
    """Store a session's recap as an episodic memory of its user (replacing an older one).

    Args:
        store: The memory store.
        user_id: The session's user.
        thread_id: The session.
        text: The recap to store (default: the one recorded by the last turn).
        agent_id: Agent scope of the memory.

    Returns:
        The memory's id, or None when the session has nothing to recap.
    """
    repo = Repo(store)
    record = repo.session(user_id, thread_id)
    recap = without_forgotten(
        redact_text(text if text is not None else str((record or {}).get("recap", ""))),
        (record or {}).get(FORGOTTEN) or (),
    )
    if record is None or not recap.strip():
        return None
    writer = Writer(store)
    ctx = WriteContext(
        user_id=user_id,
        source=Source(thread_id=thread_id, actor="system"),
        metadata={
            "source": RECAP_SOURCE,
            "thread_id": thread_id,
            **({OUTDATED: True} if record.get("outdated") else {}),
        },
        agent_id=agent_id,
    )
    old = (
        repo.get(user_id, str(record.get("recap_memory_id") or "")) if record.get("recap_memory_id") else None
    )
    if old is not None:
        if old.text != recap:
            writer.update(old, recap, ctx)
        memory_id: str | None = old.id
    else:
        changes = writer.add_verbatim([(recap, {"message_id": RECAP_MESSAGE_ID})], ctx)
        memory_id = changes[0].id if changes else None
    if memory_id is None:  # the redaction policy refused it
        return None
    record.update(
        recap=recap, recap_memory_id=memory_id, ended_at=now_iso(), ended_turns=record.get("turns", 0)
    )
    repo.put_session(user_id, thread_id, record)
    return memory_id


def needs_ending(record: dict[str, Any]) -> bool:
    """Whether a session has turns that its stored recap does not cover yet."""
    if record.get("group"):
        return False
    return bool(record.get("recap")) and record.get("ended_turns") != record.get("turns")


def end_idle_sessions(
    store: BaseStore,
    user_id: str,
    *,
    exclude: str = "",
    idle_for: timedelta | None = None,
    agent_id: str | None = None,
) -> list[str]:
    """Store the recaps of a user's sessions that went idle.

    Args:
        store: The memory store.
        user_id: The user.
        exclude: A thread to leave alone (the one starting now).
        idle_for: Only sessions unused for at least this long (None: every other session).
        agent_id: Agent scope of the memories.

    Returns:
        The thread ids whose recaps were stored.
    """
    cutoff = (datetime.now(UTC) - idle_for).isoformat() if idle_for is not None else None
    ended = []
    for record in Repo(store).sessions(user_id):
        thread = str(record.get("thread_id", ""))
        if not thread or thread == exclude or not needs_ending(record):
            continue
        if cutoff is not None and str(record.get("updated_at", "")) > cutoff:
            continue
        if end_session(store, user_id, thread, agent_id=agent_id):
            ended.append(thread)
    return ended


def recent_recaps(
    store: BaseStore, user_id: str, *, exclude: str = "", limit: int = 3
) -> list[dict[str, Any]]:
    """The recaps of a user's most recent sessions that were stored as memories, newest first.

    A recap whose memory was deleted (the user asked to forget it) is not returned.
    """
    if limit <= 0:
        return []
    repo = Repo(store)
    records = [
        r for r in repo.sessions(user_id) if r.get("recap_memory_id") and r.get("thread_id") != exclude
    ]
    records.sort(key=lambda r: str(r.get("updated_at", "")), reverse=True)
    out = []
    for record in records:
        memory = repo.get(user_id, str(record["recap_memory_id"]))
        if memory is None or memory.metadata.get(OUTDATED):  # forgotten, or quoting a changed fact
            continue
        out.append(
            {
                "id": memory.id,
                "thread_id": record.get("thread_id"),
                "date": str(record.get("updated_at", ""))[:10],
                "text": memory.text,
            }
        )
        if len(out) >= limit:
            break
    return out


__all__ = ["end_idle_sessions", "end_session", "llm_recap", "note_turn", "recap_text", "recent_recaps"]
