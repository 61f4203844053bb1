"""`extract_memories`: the write path at the end of a turn, inline or in the background."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from mneme.context import Context, context_of, thread_id
from mneme.memory.api import Memory
from mneme.memory.record import MemoryChange
from mneme.state import Node, State

log = logging.getLogger("mneme.extract")
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mneme-extract")


def turn_messages(state: State) -> list[AnyMessage]:
    """The messages of the current turn (from its first user message on)."""
    ids = [m.id for m in state.messages]
    start = ids.index(state.turn_start) if state.turn_start in ids else max(0, len(ids) - 1)
    return list(state.messages[start:])


def write_turn(
    store: BaseStore,
    ctx: Context,
    model: str | BaseChatModel | None,
    messages: list[AnyMessage],
    thread_id: str,
) -> list[MemoryChange]:
    """Extract and store the memories of one turn; in a group, each speaker's for that speaker."""
    memory = Memory(store, model=model, context=ctx)
    changes: list[MemoryChange] = []
    for m in messages:
        if not isinstance(m, HumanMessage):
            continue
        group = m.additional_kwargs.get("group_messages")
        if group:
            for line in group:
                changes += memory.add(
                    {"role": "user", "content": line["content"], "id": m.id},
                    user_id=line["sender"],
                    session_id=thread_id,
                    metadata={"group": True},
                    agent_id=ctx.agent_id or None,
                )
        else:
            changes += memory.add(m, user_id=ctx.user_id, session_id=thread_id, agent_id=ctx.agent_id or None)
    return changes


def make_extract_memories(
    model: str | BaseChatModel | None,
) -> Node:
    """Build the `extract_memories` node for a model (None: the run's `Context.model`)."""

    def extract_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Write what the user said this turn to long-term memory."""
        ctx = context_of(runtime)
        if ctx.extraction == "off" or runtime.store is None:
            return {"writes": []}
        spec = model if model is not None else (ctx.model or None)
        thread = thread_id()
        messages = turn_messages(state)
        if ctx.extraction == "deferred":
            future = _background.submit(write_turn, runtime.store, ctx, spec, messages, thread)
            future.add_done_callback(_log_failure)
            return {"writes": [{"operation": "DEFERRED", "id": None, "text": ""}]}
        changes = write_turn(runtime.store, ctx, spec, messages, thread)
        return {"writes": [c.model_dump() for c in changes]}

    return extract_memories


def _log_failure(future: Any) -> None:
    exc = future.exception()
    if exc is not None:
        log.error("mneme: deferred extraction failed: %s", exc)
