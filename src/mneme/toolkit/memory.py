"""Memory tools for the agent: search, save, update, forget, always for the run's own user."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command

from mneme.errors import MnemeError
from mneme.memory.api import Memory
from mneme.memory.record import MemoryRecord
from mneme.toolkit.runtime import tool_user


def _refs(runtime: ToolRuntime[Any, Any]) -> dict[str, str]:
    state = runtime.state
    refs = state.get("memory_refs") if isinstance(state, dict) else getattr(state, "memory_refs", None)
    return dict(refs or {})


def _reply(
    runtime: ToolRuntime[Any, Any], payload: dict[str, Any], refs: dict[str, str] | None = None
) -> Command[Any]:
    update: dict[str, Any] = {
        "messages": [
            ToolMessage(
                content=json.dumps(payload, ensure_ascii=False),
                tool_call_id=runtime.tool_call_id or "",
            )
        ]
    }
    if refs is not None:
        update["memory_refs"] = refs
    return Command(update=update)


def _resolve(runtime: ToolRuntime[Any, Any], memory: Memory, user: str, ref: int) -> MemoryRecord | str:
    """Map a small integer shown to the model back to a memory, or explain why not."""
    memory_id = _refs(runtime).get(str(ref))
    if memory_id is None:
        return f"unknown memory ref {ref}: use a number shown by search_memory or in <memories>"
    try:
        return memory.get(memory_id, user_id=user)
    except MnemeError:
        return f"memory ref {ref} no longer exists"


@tool
def search_memory(query: str, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Search what you remember about the current user.

    Args:
        query: What to look for, in any language. Empty: the user's most important memories
            (for "what do you know about me?").
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    limit = ctx.retrieval_limit or 5
    if query.strip():
        found = [
            (h.id, h.text, h.kind)
            for h in memory.search(query, user_id=user, limit=limit, min_relevance=ctx.min_relevance / 2)
        ]
    else:
        records = sorted(
            memory.get_all(user_id=user), key=lambda r: (r.importance, r.updated_at), reverse=True
        )
        found = [(r.id, r.text, r.kind) for r in records[:limit]]
    refs = _refs(runtime)
    by_id = {v: k for k, v in refs.items()}
    shown = []
    for memory_id, text, kind in found:
        ref = by_id.get(memory_id)
        if ref is None:
            ref = str(len(refs) + 1)
            refs[ref] = memory_id
            by_id[memory_id] = ref
        shown.append({"ref": int(ref), "text": text[: ctx.memory_max_chars * 2], "kind": kind})
    return _reply(runtime, {"memories": shown}, refs)


@tool
def save_memory(text: str, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Remember a fact or preference the current user stated.

    Args:
        text: The fact, in the user's language, as a short statement.
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    try:
        change = memory.save(text, user_id=user, actor="agent")
    except MnemeError as exc:
        return _reply(runtime, {"error": str(exc)})
    return _reply(runtime, {"operation": change.operation, "text": change.text, "reason": change.reason})


@tool
def update_memory(ref: int, text: str, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Correct a memory of the current user.

    Args:
        ref: The memory's number, as shown by search_memory or in <memories>.
        text: The corrected statement.
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    target = _resolve(runtime, memory, user, ref)
    if isinstance(target, str):
        return _reply(runtime, {"error": target})
    change = memory.update(target.id, text, user_id=user)
    return _reply(runtime, {"operation": change.operation, "text": change.text, "old_text": change.old_text})


@tool
def forget_memory(ref: int, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Forget a memory of the current user (when they ask you to).

    Args:
        ref: The memory's number, as shown by search_memory or in <memories>.
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    target = _resolve(runtime, memory, user, ref)
    if isinstance(target, str):
        return _reply(runtime, {"error": target})
    memory.delete(target.id, user_id=user)
    return _reply(runtime, {"operation": "DELETE", "ref": ref})


MEMORY_TOOLS = [search_memory, save_memory, update_memory, forget_memory]

__all__ = ["MEMORY_TOOLS", "forget_memory", "save_memory", "search_memory", "update_memory"]
