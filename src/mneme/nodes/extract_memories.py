"""`extract_memories`: the write path at the end of a turn, inline or in the background.

Inline, the turn's memories are written before the run ends. Deferred, each speaker's part of
the turn becomes a job persisted in the store's pending queue, handed to the process's
background worker, and the node returns at once: the reply never waits for extraction, and
a crash loses nothing (the job is still queued; the next worker or `Memory.retry_pending`
runs it). Jobs and writes are keyed by the source messages and their content, so running a
turn twice never duplicates a memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from mneme.context import Context, context_of, thread_id
from mneme.memory.pipeline import BEFORE, Pipeline
from mneme.memory.queue import PendingJob
from mneme.memory.record import MemoryChange, check_user
from mneme.memory.worker import worker
from mneme.nodes.agent import note_session
from mneme.state import Node, State
from mneme.tokens import message_text

log = logging.getLogger("mneme.extract")


def turn_messages(state: State) -> list[AnyMessage]:
    """The messages of the current turn (from its first user message on).

    The turn starts at `turn_start` (set by `ingest`); in a graph without `ingest`, at the
    last user message.
    """
    ids = [m.id for m in state.messages]
    if state.turn_start in ids:
        start = ids.index(state.turn_start)
    else:
        humans = [i for i, m in enumerate(state.messages) if isinstance(m, HumanMessage)]
        start = humans[-1] if humans else max(0, len(ids) - 1)
    return list(state.messages[start:])


def said_before(state: State) -> list[str]:
    """What the user said in the thread's last few messages before this turn (`BEFORE`).

    Only read by the extractor, for whom a pronoun stands for; a group's bursts are left out
    (a pronoun there may be anyone's).
    """
    turn = turn_messages(state)
    earlier = state.messages[: len(state.messages) - len(turn)]
    said = [
        message_text(m)
        for m in earlier
        if isinstance(m, HumanMessage) and not m.additional_kwargs.get("group_messages")
    ]
    return [t for t in said if t.strip()][-BEFORE:]


def turn_inputs(
    messages: list[AnyMessage], user_id: str
) -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """What each speaker said this turn: `(user, messages, metadata)`.

    In a group chat every participant's lines go to that participant's memory; otherwise the
    run's user said everything.
    """
    by_user: dict[str, list[dict[str, Any]]] = {}
    group_users: set[str] = set()
    for m in messages:
        if not isinstance(m, HumanMessage):
            continue
        lines = m.additional_kwargs.get("group_messages")
        if lines:
            for i, line in enumerate(lines):
                sender = str(line.get("sender") or "unknown")
                group_users.add(sender)
                by_user.setdefault(sender, []).append(
                    {"role": "user", "content": str(line.get("content", "")), "id": f"{m.id}#{i}"}
                )
        else:
            text = message_text(m)
            if text.strip():
                by_user.setdefault(user_id, []).append({"role": "user", "content": text, "id": m.id})
    return [(user, said, {"group": True} if user in group_users else {}) for user, said in by_user.items()]


def write_turn(
    store: BaseStore,
    ctx: Context,
    model: str | BaseChatModel | None,
    messages: list[AnyMessage],
    thread_id: str,
    before: Sequence[str] = (),
) -> list[MemoryChange]:
    """Extract and store the memories of one turn; in a group, each speaker's for that speaker.

    `before`: what the user said just before the turn (`said_before`), read for pronouns.
    """
    pipeline = Pipeline(store, ctx, model)
    changes: list[MemoryChange] = []
    for job in turn_jobs(pipeline, ctx, messages, thread_id, before):
        changes += pipeline.run(job)
    return changes


def turn_jobs(
    pipeline: Pipeline, ctx: Context, messages: list[AnyMessage], thread_id: str, before: Sequence[str]
) -> list[PendingJob]:
    """One extraction job per speaker of the turn (`turn_inputs`); the run's user's keeps `before`."""
    return [
        pipeline.job(
            user,
            said,
            session_id=thread_id or None,
            metadata=metadata,
            agent_id=ctx.agent_id or None,
            before=before if user == ctx.user_id and not metadata else (),
        )
        for user, said, metadata in turn_inputs(messages, ctx.user_id)
    ]


def defer_turn(
    store: BaseStore,
    ctx: Context,
    model: str | BaseChatModel | None,
    messages: list[AnyMessage],
    thread_id: str,
    before: Sequence[str] = (),
) -> list[PendingJob]:
    """Persist one turn's extraction jobs and hand them to the background worker (`write_turn`)."""
    pipeline = Pipeline(store, ctx, model)
    jobs = turn_jobs(pipeline, ctx, messages, thread_id, before)
    for job in jobs:
        check_user(job.user_id)
        pipeline.queue.put(job)  # persisted before anything else: a crash loses nothing
    for job in jobs:
        worker().submit(store, job, context=ctx, model=model)
    return jobs


def make_extract_memories(
    model: str | BaseChatModel | None,
) -> Node:
    """Build the `extract_memories` node for a model (None: the run's `Context.model`)."""

    def extract_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Write what the user said this turn to long-term memory (or queue it).

        A turn that ended with a reply also updates the session's recap (what the user's next
        session starts with); after mneme's own `agent`, which already did, nothing changes.
        """
        ctx = context_of(runtime)
        last = state.messages[-1] if state.messages else None
        if runtime.store is not None and isinstance(last, AIMessage) and not last.tool_calls:
            note_session(replace(state, messages=state.messages[:-1]), last, ctx, runtime)
        if ctx.extraction == "off" or runtime.store is None:
            return {"writes": []}
        spec = model if model is not None else (ctx.model or None)
        thread = thread_id()
        messages = turn_messages(state)
        if ctx.extraction == "deferred":
            jobs = defer_turn(runtime.store, ctx, spec, messages, thread, said_before(state))
            return {"writes": [{"operation": "DEFERRED", "id": j.id, "text": ""} for j in jobs]}
        changes = write_turn(runtime.store, ctx, spec, messages, thread, said_before(state))
        return {"writes": [c.model_dump() for c in changes]}

    return extract_memories
