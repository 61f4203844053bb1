"""`summarize`: fold the oldest turns into the running summary and keep them as episodes."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.runtime import Runtime

from mneme import prompts
from mneme.context import Context, context_of, thread_id
from mneme.memory.record import Source
from mneme.memory.redact import RedactionPolicy, redact_text
from mneme.memory.write import WriteContext, Writer
from mneme.models import is_offline, resolve_model
from mneme.nodes.build_context import counter_of
from mneme.state import Node, State, TaskState
from mneme.tokens import TokenCounter, message_text
from mneme.window import shorten_text, split_turns, turn_tokens

log = logging.getLogger("mneme.summarize")

KEEP_RATIO = 0.5
"""After summarizing, the history holds at most this share of its budget (so that summarizing
happens every few turns, not at every turn)."""
EPISODE_CHARS = 800
"""A removed turn is kept as episodes of at most this many characters each (the embedding model
reads about 512 tokens, so a longer text would not be searchable past its start)."""

_INFORMATIVE = re.compile(
    r"\d|[A-Z][a-z]+|订单|地址|电话|日期|决定|确认|同意|以后|偏好|喜欢|不要|需要|"
    r"decid|agree|confirm|prefer|always|never|need|want|address|order|date",
)
_ID = re.compile(r"\d{4,}|[A-Z]{2,}\d+")
_CLAUSE = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.!?])\s+")


def speaker(message: AnyMessage) -> str:
    """How a message's author is named in excerpts."""
    if isinstance(message, HumanMessage):
        return message.name or "User"
    if isinstance(message, ToolMessage):
        return f"Tool {message.name or ''}".strip()
    return "Assistant"


def excerpt(turns: Sequence[Sequence[AnyMessage]]) -> list[str]:
    """The turns as lines `Speaker: text` (tool calls shown by name)."""
    lines = []
    for turn in turns:
        for m in turn:
            text = " ".join(message_text(m).split())
            if isinstance(m, AIMessage) and m.tool_calls and not text:
                text = "calls " + ", ".join(f"{c['name']}({c['args']})" for c in m.tool_calls)
            if text:
                lines.append(f"{speaker(m)}: {text}")
    return lines


def chunks(text: str, size: int = EPISODE_CHARS) -> list[str]:
    """A text cut into pieces of at most `size` characters."""
    return [text[k : k + size] for k in range(0, len(text), size)]


def episodes(
    removed: Sequence[Sequence[AnyMessage]], user_id: str
) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The episodic memories that keep folded turns searchable, per user they belong to.

    A one-to-one turn is kept for the run's user (the whole exchange). A group-chat turn is
    kept for each speaker, with only the lines that speaker said: never for the group, never
    for another participant.
    """
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for turn in removed:
        first = turn[0]
        said = first.additional_kwargs.get("group_messages") if isinstance(first, HumanMessage) else None
        if said:
            by_speaker: dict[str, list[str]] = {}
            for line in said:
                stamp = f"[{line['timestamp']}] " if line.get("timestamp") else ""
                by_speaker.setdefault(line["sender"], []).append(
                    f"{stamp}{line['sender']}: {line['content']}"
                )
            for sender, lines in by_speaker.items():
                for k, piece in enumerate(chunks("\n".join(lines))):
                    mid = f"{first.id or ''}:{sender}" + (f"#{k}" if k else "")
                    meta = {"source": "summarized", "message_id": mid, "group": True}
                    out.setdefault(sender, []).append((piece, meta))
            continue
        for k, piece in enumerate(chunks("\n".join(excerpt([turn])))):
            meta = {"source": "summarized", "message_id": f"{first.id or ''}" + (f"#{k}" if k else "")}
            out.setdefault(user_id, []).append((piece, meta))
    return out


def pinned_terms(task: TaskState | dict[str, Any] | None) -> list[str]:
    """The values the task state holds (order ids, dates, amounts): summaries keep them first."""
    slots = (task or {}).get("slots") or {}
    return [str(v) for v in slots.values() if str(v).strip()]


def line_score(line: str, pinned: Sequence[str]) -> int:
    """How much a summary line is worth keeping: task values, then ids and numbers, then cues."""
    score = len(_ID.findall(line)) * 3 + len(_INFORMATIVE.findall(line))
    return score + 100 * sum(1 for term in pinned if term in line)


def extractive_summary(
    previous: str, lines: list[str], budget: int, counter: TokenCounter, pinned: Sequence[str] = ()
) -> str:
    """The offline summarizer: keep the clauses that carry names, numbers, ids, dates, decisions.

    When the summary outgrows its budget, the least informative lines go first, oldest first
    among equals, so an order id said long ago outlives small talk said recently; lines with
    a value of the task state (`pinned`) are kept longest.
    """
    kept = [line for line in previous.splitlines() if line.strip()]
    for line in lines:
        who, _, text = line.partition(": ")
        for clause in _CLAUSE.split(text):
            clause = clause.strip()
            if clause and _INFORMATIVE.search(clause) and not who.startswith("Tool"):
                kept.append(f"- {who}: {clause[:200]}")
    # Drop duplicates, keep order.
    seen: set[str] = set()
    kept = [k for k in kept if not (k in seen or seen.add(k))]  # type: ignore[func-returns-value]
    sizes = [counter.count(k) + 1 for k in kept]
    total = sum(sizes)
    while kept and total > budget:
        scores = [line_score(k, pinned) for k in kept]
        worst = min(range(len(kept)), key=lambda i: (scores[i], i))
        kept.pop(worst)
        total -= sizes.pop(worst)
    text = "\n".join(kept)
    return text if counter.count(text) <= budget else shorten_text(text, budget, counter)


def llm_summary(
    model: BaseChatModel,
    previous: str,
    lines: list[str],
    budget: int,
    counter: TokenCounter,
    pinned: Sequence[str] = (),
) -> str:
    """Ask the model to fold the excerpt into the summary (prompt in `prompts.SUMMARIZE_PROMPT`).

    A failed call, or a reply over the budget, falls back to the extractive summary: the
    turns are removed from the thread only once their summary exists.
    """
    prompt = prompts.SUMMARIZE_PROMPT.format(
        max_words=max(30, budget // 2),
        summary=previous or "(none)",
        keep=", ".join(pinned) or "(none)",
        excerpt="\n".join(lines),
    )
    try:
        reply = model.invoke(prompt)
    except Exception as exc:
        log.warning("mneme: the LLM summarizer failed (%s); using the extractive summary", exc)
        return extractive_summary(previous, lines, budget, counter, pinned)
    text = message_text(reply).strip() if isinstance(reply, AIMessage) else str(reply)
    if not text or counter.count(text) > budget:
        return extractive_summary(previous, lines, budget, counter, pinned)
    return text


def make_summarize(
    model: str | BaseChatModel | None,
) -> Node:
    """Build the `summarize` node for a model (None: the run's `Context.model`)."""

    def summarize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Fold the oldest turns into the summary, remove them, keep them as episodic memory."""
        ctx = context_of(runtime)
        spec = model if model is not None else (ctx.model or None)
        counter = counter_of(ctx, spec)
        turns = split_turns(state.messages)
        total = sum(turn_tokens(t, counter) for t in turns)
        budget = ctx.history_budget()
        if total <= budget or len(turns) < 2:
            return {}
        removed: list[list[AnyMessage]] = []
        while len(turns) > 1 and total > budget * KEEP_RATIO:
            turn = turns.pop(0)
            total -= turn_tokens(turn, counter)
            removed.append(turn)
        policy = RedactionPolicy.from_context(ctx)
        lines = [redact_text(line, policy) for line in excerpt(removed)]  # masked before any cut
        pinned = pinned_terms(state.task)
        if is_offline(spec):
            summary = extractive_summary(state.summary, lines, ctx.budget_summary, counter, pinned)
        else:
            chat = resolve_model(spec)
            summary = llm_summary(chat, state.summary, lines, ctx.budget_summary, counter, pinned)
        if runtime.store is not None and ctx.user_id:
            thread = thread_id()
            writer = Writer(runtime.store)
            for user, texts in episodes(removed, ctx.user_id).items():
                source = Source(thread_id=thread, actor="system")
                writer.add_verbatim(texts, WriteContext(user_id=user, source=source))
        return {
            "summary": redact_text(summary, policy),
            "messages": [RemoveMessage(id=m.id) for turn in removed for m in turn if m.id],
        }

    return summarize
