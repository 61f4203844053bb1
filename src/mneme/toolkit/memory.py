"""Memory tools for the agent: search, save, update, forget, always for the run's own user.

The model never names a user (the user comes from the run) and never sees a memory id: it
sees small numbers (`ref`), kept per thread in `State.memory_refs` (shared with the memories
`retrieve_memories` injected), and every number it sends back is checked against that map. A
number that is not in it is refused with an explanation, never guessed.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command

from mneme.context import Context
from mneme.errors import MnemeError
from mneme.memory.api import Memory
from mneme.memory.record import MemoryRecord
from mneme.memory.usage import note_use
from mneme.toolkit.runtime import tool_user

MAX_SEARCH = 10
"""A search shows the model at most this many memories."""


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
                status="error" if "error" in payload else "success",
            )
        ]
    }
    if refs is not None:
        update["memory_refs"] = refs
    return Command(update=update)


def _new_ref(refs: dict[str, str], memory_id: str) -> str:
    """The number of a memory, adding one after the highest in use when it has none."""
    for ref, known in refs.items():
        if known == memory_id:
            return ref
    ref = str(max((int(k) for k in refs if k.isdigit()), default=0) + 1)
    refs[ref] = memory_id
    return ref


def _resolve(
    runtime: ToolRuntime[Any, Any], memory: Memory, user: str, ref: Any, ctx: Context
) -> MemoryRecord | str:
    """Map a small number shown to the model back to one of the user's memories, or say why not."""
    if isinstance(ref, bool) or not isinstance(ref, int):
        return f"ref must be a memory number such as 1, got {ref!r}"
    memory_id = _refs(runtime).get(str(ref))
    if memory_id is None:
        return f"unknown memory ref {ref}: use a number shown by search_memory or in <memories>"
    try:
        record = memory.get(memory_id, user_id=user)
    except MnemeError:
        return f"memory ref {ref} no longer exists"
    if record.sensitivity > ctx.max_sensitivity:
        return f"memory ref {ref} is not available at this sensitivity level"
    return record


def _shown(ctx: Context, text: str) -> str:
    limit = ctx.memory_max_chars * 2
    return text if len(text) <= limit else text[: limit - 1] + "…"


@tool
def search_memory(query: str, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Search what you remember about the current user.

    Args:
        query: What to look for, in any language. Empty: the user's most important memories
            (for "what do you know about me?").
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    limit = min(max(ctx.retrieval_limit, 1), MAX_SEARCH)
    if not isinstance(query, str):
        return _reply(runtime, {"error": "query must be text"})
    if query.strip():
        try:
            hits = memory.search(
                query,
                user_id=user,
                limit=limit,
                min_relevance=ctx.min_relevance / 2,  # an explicit question: a lower bar than injection
                max_sensitivity=ctx.max_sensitivity,
            )
        except MnemeError as exc:  # a query over the limit, a NUL, a lone surrogate
            return _reply(runtime, {"error": str(exc)})
        found = [(h.id, h.text, h.kind) for h in hits]
    else:
        records = [r for r in memory.get_all(user_id=user) if r.sensitivity <= ctx.max_sensitivity]
        records.sort(key=lambda r: (r.importance, r.updated_at), reverse=True)
        found = [(r.id, r.text, r.kind) for r in records[:limit]]
    refs = _refs(runtime)
    shown = [
        {"ref": int(_new_ref(refs, memory_id)), "text": _shown(ctx, text), "kind": kind}
        for memory_id, text, kind in found
    ]
    note_use(store, user, [f[0] for f in found])  # written in the background
    return _reply(runtime, {"memories": shown}, refs)


@tool
def save_memory(
    text: str, runtime: ToolRuntime[Any, Any], kind: Literal["semantic", "episodic"] = "semantic"
) -> Command[Any]:
    """Remember something the current user stated about themselves.

    Args:
        text: The fact, preference or event, in the user's language, as a short statement.
        kind: `semantic` for a lasting fact or preference, `episodic` for an event.
    """
    ctx, user, store = tool_user(runtime)
    if kind not in ("semantic", "episodic"):
        return _reply(runtime, {"error": f"kind must be 'semantic' or 'episodic', got {kind!r}"})
    memory = Memory(store, context=ctx)
    try:
        change = memory.save(text, user_id=user, kind=kind, actor="agent")
    except MnemeError as exc:
        return _reply(runtime, {"error": str(exc)})
    payload: dict[str, Any] = {"operation": change.operation, "text": change.text}
    if change.reason:
        payload["reason"] = change.reason
    refs = None
    if change.id and change.operation != "REFUSE":
        refs = _refs(runtime)
        payload["ref"] = int(_new_ref(refs, change.id))
    return _reply(runtime, payload, refs)


@tool
def update_memory(ref: int, text: str, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Correct a memory of the current user (their own correction, not your guess).

    Args:
        ref: The memory's number, as shown by search_memory or in <memories>.
        text: The corrected statement.
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    target = _resolve(runtime, memory, user, ref, ctx)
    if isinstance(target, str):
        return _reply(runtime, {"error": target})
    try:
        change = memory.update(target.id, text, user_id=user)
    except MnemeError as exc:
        return _reply(runtime, {"error": str(exc)})
    return _reply(
        runtime, {"operation": change.operation, "ref": ref, "text": change.text, "old_text": change.old_text}
    )


@tool
def forget_memory(ref: int, runtime: ToolRuntime[Any, Any]) -> Command[Any]:
    """Forget a memory of the current user (when they ask you to).

    Args:
        ref: The memory's number, as shown by search_memory or in <memories>.
    """
    ctx, user, store = tool_user(runtime)
    memory = Memory(store, context=ctx)
    target = _resolve(runtime, memory, user, ref, ctx)
    if isinstance(target, str):
        return _reply(runtime, {"error": target})
    try:
        memory.delete(target.id, user_id=user)
    except MnemeError as exc:
        return _reply(runtime, {"error": str(exc)})
    return _reply(runtime, {"operation": "DELETE", "ref": ref})


MEMORY_TOOLS = [search_memory, save_memory, update_memory, forget_memory]

__all__ = ["MEMORY_TOOLS", "forget_memory", "save_memory", "search_memory", "update_memory"]
