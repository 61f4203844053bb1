"""`build_context`: assemble what the model sees inside the token budget, part by part."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from mneme import debuglog, prompts
from mneme.context import Context, context_of
from mneme.errors import InputError
from mneme.models import model_name
from mneme.state import State
from mneme.tokens import MESSAGE_OVERHEAD, REPLY_OVERHEAD, TokenCounter, counter_for, message_text
from mneme.window import fit_messages, shorten_text

SEPARATOR_TOKENS = 2
"""Tokens counted for the blank line that joins two blocks of the system message."""
MIN_SUMMARY_ROOM = 24
"""Below this many tokens a shortened summary says nothing useful: it is left out."""


def counter_of(ctx: Context, model: Any = None) -> TokenCounter:
    """The token counter of the model a run uses."""
    return counter_for(model_name(model if model is not None else (ctx.model or None)))


def same_aspect(memories: list[dict[str, Any]]) -> list[list[int]]:
    """Groups of two or more memories of one person about the same aspect (their positions).

    Two current notes of one aspect may disagree ("我不吃辣", later "我现在能吃一点辣了", when the
    write path did not read the second as replacing the first); the model needs to know which
    came later.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for i, mem in enumerate(memories):
        if mem.get("aspect") and mem.get("said"):
            groups.setdefault((str(mem.get("user_id") or ""), str(mem["aspect"])), []).append(i)
    return [group for group in groups.values() if len(group) > 1]


def memory_lines(
    memories: list[dict[str, Any]], ctx: Context, groups: list[list[int]] | None = None
) -> list[str]:
    """One line per memory: `- #ref [who] (kind) text`, each cut to `memory_max_chars`.

    Memories of one person about the same aspect are shown oldest first in the places they
    hold, each with the time it was last said (`- #ref (kind, said 2026-12-03 14:05) text`).

    Args:
        memories: The rows to show.
        ctx: The run's settings (line length).
        groups: `same_aspect(memories)`, when already computed.
    """
    ordered = list(memories)
    dated: set[int] = set()
    for group in same_aspect(memories) if groups is None else groups:
        for place, i in zip(group, sorted(group, key=lambda i: str(memories[i]["said"])), strict=True):
            ordered[place] = memories[i]
        dated.update(group)
    lines = []
    for place, mem in enumerate(ordered):
        text = " ".join(str(mem["text"]).split())
        if len(text) > ctx.memory_max_chars:
            text = text[: ctx.memory_max_chars - 1] + "…"
        who = f"[{mem['who']}] " if mem.get("who") else ""
        label = "constraint" if mem.get("constraint") else mem["kind"]
        if place in dated:
            label += f", said {str(mem['said'])[:16].replace('T', ' ')}"
        lines.append(f"- #{mem['ref']} {who}({label}) {text}")
    return lines


def render_block(memories: list[dict[str, Any]], ctx: Context) -> str:
    """The memory block of these memories, with the note on same-aspect memories when they occur."""
    groups = same_aspect(memories)
    body = "\n".join(memory_lines(memories, ctx, groups))
    if groups:
        body = f"{prompts.MEMORY_SAME_ASPECT}\n{body}"
    return prompts.MEMORY_BLOCK.format(memories=body)


def memory_block(
    memories: list[dict[str, Any]], ctx: Context, counter: TokenCounter, budget: int | None = None
) -> str:
    """The memory block, dropping the least relevant memories until it fits `budget` tokens.

    Args:
        memories: What `retrieve_memories` found this turn.
        ctx: The run's settings (line length).
        counter: The model's token counter.
        budget: Tokens the block may use (default `ctx.budget_memory`).

    Returns:
        The block, or "" when not even one memory fits.
    """
    limit = ctx.budget_memory if budget is None else budget
    kept = list(memories)
    while kept:
        block = render_block(kept, ctx)
        if counter.count(block) <= limit:
            return block
        # Profile fields (score None) are kept longest; then the best-scored memories.
        worst = min(
            range(len(kept)),
            key=lambda i: (kept[i].get("score") is None, kept[i].get("score") or 0),
        )
        kept.pop(worst)
    return ""


def recap_block(recaps: list[dict[str, Any]], budget: int, counter: TokenCounter) -> str:
    """The previous sessions' summaries, newest first, dropping the oldest until they fit."""
    kept = list(recaps)
    while kept:
        lines = [prompts.RECAP_LINE.format(date=r.get("date", ""), text=r["text"]) for r in kept]
        block = prompts.RECAP_BLOCK.format(recaps="\n".join(lines))
        if counter.count(block) <= budget:
            return block
        if len(kept) == 1:
            room = budget - counter.count(prompts.RECAP_BLOCK.format(recaps=""))
            if room < MIN_SUMMARY_ROOM:
                return ""
            line = shorten_text(lines[0], room, counter)
            block = prompts.RECAP_BLOCK.format(recaps=line)
            return block if counter.count(block) <= budget else ""
        kept.pop()
    return ""


def task_text(state: State) -> str:
    """The task state as the model sees it (empty when there is nothing to show)."""
    task = state.task or {}
    slots = task.get("slots") or {}
    if not slots and task.get("intent") in (None, "", "chat") and not task.get("pending_action"):
        return ""
    return prompts.TASK_BLOCK.format(task=json.dumps(task, ensure_ascii=False))


def system_prompt(ctx: Context) -> str:
    """The pinned system prompt with the current time filled in."""
    return ctx.system_prompt.replace("{time}", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))


def summary_part(state: State, budget: int, counter: TokenCounter) -> str:
    """The task state, then the running summary (shortened with a marker if need be).

    The whole part, with its separator, stays within `budget` tokens; what cannot fit even
    shortened is left out.
    """
    task = task_text(state)
    if task and _part_tokens(task, counter) > budget:
        task = shorten_text(task, budget - SEPARATOR_TOKENS, counter)
        if _part_tokens(task, counter) > budget:
            task = ""
    if not state.summary:
        return task
    room = budget - _part_tokens(task, counter) - counter.count(prompts.SUMMARY_BLOCK.format(summary=""))
    room -= SEPARATOR_TOKENS
    while room >= MIN_SUMMARY_ROOM:
        block = prompts.SUMMARY_BLOCK.format(summary=shorten_text(state.summary, room, counter))
        text = "\n\n".join(t for t in (task, block) if t)
        excess = _part_tokens(text, counter) - budget
        if excess <= 0:
            return text
        room -= excess
    return task


def memory_part(state: State, ctx: Context, budget: int, counter: TokenCounter) -> tuple[str, str]:
    """Previous sessions' summaries (up to half the part when there are memories too), then memories.

    Returns:
        `(recap block, memory block)`, either possibly "".
    """
    recaps = list(state.recaps or [])
    recap_ids = {r.get("id") for r in recaps}
    memories = [m for m in state.memories if m.get("id") not in recap_ids]
    stored = str((state.prompt or {}).get("memory_block", "")) if not state.memories else ""
    recap = ""
    used = 0
    if recaps:
        share = budget // 2 if (memories or stored) else budget
        recap = recap_block(recaps, share - SEPARATOR_TOKENS, counter)
        used = _part_tokens(recap, counter)
    room = budget - used - SEPARATOR_TOKENS
    if memories:
        block = memory_block(memories, ctx, counter, room)
    elif stored and counter.count(stored) <= room:
        block = stored  # a block decided earlier (callers that render without retrieval)
    else:
        block = ""
    return recap, block


def _part_tokens(text: str, counter: TokenCounter) -> int:
    return counter.count(text) + SEPARATOR_TOKENS if text else 0


@dataclass
class Rendered:
    """A model request and how it was made."""

    messages: list[AnyMessage]
    """The exact request: the system message, then the history."""
    usage: dict[str, int]
    """Tokens per part (`system`, `summary`, `memory`, `history`), `output_reserve`, `total`."""
    parts: dict[str, str] = field(default_factory=dict)
    """The text blocks: `system`, `summary`, `recaps`, `memories`."""


def assemble(state: State, ctx: Context, counter: TokenCounter) -> Rendered:
    """The exact model request for the current state, its tokens per part, and its blocks.

    The parts are filled in `ctx.budget_order`; each takes at most its budget and at most what
    is left of `context_window - budget_output`, so the request never exceeds the window. The
    system prompt comes first and is never cut; the history is the newest whole turns that fit
    (a tool call and its results are never split; an over-long newest turn is shortened with a
    visible marker); the memory block goes into the system message or next to the newest user
    input, as `memory_position` says.

    Raises:
        InputError: the system prompt alone is over `budget_system`, or the newest turn cannot
            be made to fit what is left for the history.
    """
    limit = ctx.context_window - ctx.budget_output
    left = limit - REPLY_OVERHEAD - MESSAGE_OVERHEAD
    texts: dict[str, str] = {}
    usage: dict[str, int] = {}
    history: list[AnyMessage] = []
    history_room = 0
    for part in ctx.budget_parts():
        allowance = max(0, min(ctx.part_budget(part), left))
        if part == "system":
            texts[part] = system_prompt(ctx)
            usage[part] = counter.count(texts[part]) + MESSAGE_OVERHEAD
            if usage[part] > allowance + MESSAGE_OVERHEAD:
                raise InputError(
                    f"mneme: the system prompt has {usage[part] - MESSAGE_OVERHEAD} tokens, more than "
                    f"budget_system={ctx.budget_system}; it is never cut: shorten it or raise budget_system"
                )
            left -= usage[part] - MESSAGE_OVERHEAD
        elif part == "history":
            history_room = allowance
            history = fit_messages(state.messages, allowance, counter)
            usage[part] = sum(counter.count_message(m) for m in history)
            left -= usage[part]
        elif part == "summary":
            texts[part] = summary_part(state, allowance, counter)
            usage[part] = _part_tokens(texts[part], counter)
            left -= usage[part]
        else:
            texts["recaps"], texts["memories"] = memory_part(state, ctx, allowance, counter)
            usage[part] = _part_tokens(texts["recaps"], counter) + _part_tokens(texts["memories"], counter)
            left -= usage[part]
    messages = _join(texts, history, ctx)
    total = counter.count_messages(messages)
    # Joining blocks can tokenize a little differently from counting them apart: take it off
    # the history rather than ever going over the window.
    while total > limit and history:
        history_room -= total - limit
        history = fit_messages(state.messages, max(0, history_room), counter)
        messages = _join(texts, history, ctx)
        total = counter.count_messages(messages)
        usage["history"] = sum(counter.count_message(m) for m in history)
    usage["output_reserve"] = ctx.budget_output
    usage["total"] = total
    return Rendered(messages=messages, usage=usage, parts=texts)


def render(state: State, ctx: Context, counter: TokenCounter) -> tuple[list[AnyMessage], dict[str, int]]:
    """The exact model request for the current state and its tokens per part (see `assemble`)."""
    out = assemble(state, ctx, counter)
    return out.messages, out.usage


def _join(texts: dict[str, str], history: list[AnyMessage], ctx: Context) -> list[AnyMessage]:
    """The system message (its blocks in budget order) and the history, memory placed as asked."""
    memory = "\n\n".join(t for t in (texts.get("recaps", ""), texts.get("memories", "")) if t)
    history = list(history)
    if memory and ctx.memory_position == "user":
        for i in range(len(history) - 1, -1, -1):
            if isinstance(history[i], HumanMessage):
                msg = history[i]
                history[i] = msg.model_copy(update={"content": f"{memory}\n\n{message_text(msg)}"})
                memory = ""
                break
    blocks = []
    for part in ctx.budget_parts():
        text = memory if part == "memory" else texts.get(part, "")
        if text:
            blocks.append(text)
    return [SystemMessage(content="\n\n".join(blocks)), *history]


def build_context(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide the memory block of this turn and record the token use of each part."""
    ctx = context_of(runtime)
    # decided afresh from this turn's memories: the block of an earlier turn is never carried over
    out = assemble(replace(state, prompt={}), ctx, counter_of(ctx))
    prompt = {
        "memory_block": out.parts.get("memories", ""),
        "recap_block": out.parts.get("recaps", ""),
        "history_start": next((m.id for m in out.messages[1:] if m.id), None),
    }
    if ctx.debug:
        debuglog.write(ctx, {"stage": "build_context", "usage": out.usage, "prompt": prompt}, runtime.store)
    return {"prompt": prompt, "token_usage": out.usage}
