"""`build_context`: assemble what the model sees inside the token budget, part by part."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from mneme import prompts
from mneme.context import Context, context_of
from mneme.models import model_name
from mneme.state import State
from mneme.tokens import TokenCounter, counter_for
from mneme.window import fit_messages, shorten_text

log = logging.getLogger("mneme.prompt")


def counter_of(ctx: Context, model: Any = None) -> TokenCounter:
    """The token counter of the model a run uses."""
    return counter_for(model_name(model if model is not None else (ctx.model or None)))


def memory_lines(memories: list[dict[str, Any]], ctx: Context) -> list[str]:
    """One line per memory: `- #ref [who] (kind) text`, each cut to `memory_max_chars`."""
    lines = []
    for mem in memories:
        text = " ".join(str(mem["text"]).split())
        if len(text) > ctx.memory_max_chars:
            text = text[: ctx.memory_max_chars - 1] + "…"
        who = f"[{mem['who']}] " if mem.get("who") else ""
        lines.append(f"- #{mem['ref']} {who}({mem['kind']}) {text}")
    return lines


def memory_block(memories: list[dict[str, Any]], ctx: Context, counter: TokenCounter) -> str:
    """The memory block, dropping the least relevant memories until it fits its budget."""
    kept = list(memories)
    while kept:
        block = prompts.MEMORY_BLOCK.format(memories="\n".join(memory_lines(kept, ctx)))
        if counter.count(block) <= ctx.budget_memory:
            return block
        # Profile fields (score None) are kept longest; then the best-scored memories.
        worst = min(
            range(len(kept)),
            key=lambda i: (kept[i].get("score") is None, kept[i].get("score") or 0),
        )
        kept.pop(worst)
    return ""


def task_text(state: State) -> str:
    """The task state as the model sees it (empty when there is nothing to show)."""
    task = state.task or {}
    slots = task.get("slots") or {}
    if not slots and task.get("intent") in (None, "", "chat") and not task.get("pending_action"):
        return ""
    return prompts.TASK_BLOCK.format(task=json.dumps(task, ensure_ascii=False))


def system_text(state: State, ctx: Context, counter: TokenCounter) -> str:
    """The pinned system prompt, then the summary and the task state within their budgets."""
    system = ctx.system_prompt.replace("{time}", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    system = shorten_text(system, ctx.budget_system, counter)
    if state.summary:
        summary = shorten_text(state.summary, ctx.budget_summary, counter)
        system += "\n\n" + prompts.SUMMARY_BLOCK.format(summary=summary)
    task = task_text(state)
    if task:
        system += "\n\n" + task
    return system


def render(state: State, ctx: Context, counter: TokenCounter) -> tuple[list[AnyMessage], dict[str, int]]:
    """The exact model request for the current state, and its tokens per part.

    The system prompt comes first and is never trimmed by history; the history is the newest
    whole turns that fit (a tool call and its results are never split); the memory block goes
    into the system message or next to the newest user input, as `memory_position` says.
    """
    block = str((state.prompt or {}).get("memory_block", ""))
    system = system_text(state, ctx, counter)
    if block and ctx.memory_position == "system":
        system += "\n\n" + block
    # Whatever the parts add up to, the request plus the output reserve stays in the window.
    room = ctx.context_window - ctx.budget_output - counter.count_messages([SystemMessage(content=system)])
    if ctx.memory_position == "user":
        room -= counter.count(block)
    history = fit_messages(state.messages, max(0, min(ctx.budget_history, room)), counter)
    if block and ctx.memory_position == "user":
        for i in range(len(history) - 1, -1, -1):
            if isinstance(history[i], HumanMessage):
                msg = history[i]
                history[i] = msg.model_copy(update={"content": f"{block}\n\n{msg.content}"})
                break
    messages: list[AnyMessage] = [SystemMessage(content=system), *history]
    usage = {
        "system": counter.count(system) - (counter.count(block) if ctx.memory_position == "system" else 0),
        "memory": counter.count(block),
        "summary": counter.count(state.summary) if state.summary else 0,
        "history": sum(counter.count_message(m) for m in history),
        "output_reserve": ctx.budget_output,
    }
    usage["total"] = counter.count_messages(messages)
    return messages, usage


def build_context(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide the memory block of this turn and record the token use of each part."""
    ctx = context_of(runtime)
    counter = counter_of(ctx)
    block = memory_block(state.memories, ctx, counter)
    prompt = {"memory_block": block}
    probe = State(**{**state.__dict__, "prompt": prompt})
    _, usage = render(probe, ctx, counter)
    if ctx.debug:
        log.info(json.dumps({"stage": "build_context", "usage": usage}, ensure_ascii=False))
    return {"prompt": prompt, "token_usage": usage}
