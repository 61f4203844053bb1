"""`retrieve_memories`: find the long-term memories worth showing the model this turn."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from mneme.context import Context, context_of
from mneme.memory.record import MemoryHit, MemoryRecord
from mneme.memory.repo import Repo
from mneme.memory.search import SearchSettings, search
from mneme.state import State
from mneme.tokens import message_text

PROFILE_LIMIT = 8
"""At most this many profile fields per person are shown (they are short key/value lines)."""
QUERY_CHARS = 1000
"""The retrieval query is cut to this many characters (the embedding model reads ~512 tokens)."""


def build_query(state: State, ctx: Context) -> str:
    """The new input, plus the previous user turns and the task's slots.

    A follow-up such as "and how do I return it?" means nothing alone; the turns before it
    and the order id in the task state say what "it" is.
    """
    humans = [m for m in state.messages if isinstance(m, HumanMessage)]
    recent = humans[-(ctx.query_turns + 1) :]
    parts = [message_text(m).strip() for m in reversed(recent)]
    slots = (state.task or {}).get("slots") or {}
    parts += [str(v) for v in slots.values()]
    return "\n".join(p for p in parts if p)[:QUERY_CHARS]


def retrieve_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve each participant's profile fields and relevant memories, labelled by person."""
    ctx = context_of(runtime)
    if runtime.store is None or ctx.retrieval_limit == 0:
        return {"memories": [], "memory_refs": {}}
    query = build_query(state, ctx)
    people = state.participants or [ctx.user_id]
    group = len(people) > 1 or bool(people and people[0] != ctx.user_id)
    repo = Repo(runtime.store)
    settings = SearchSettings(
        limit=ctx.retrieval_limit,
        kinds=("semantic", "episodic"),
        min_relevance=ctx.min_relevance,
    )
    memories: list[dict[str, Any]] = []
    refs: dict[str, str] = {}
    for person in people:
        who = person if group else ""
        rows: list[tuple[MemoryRecord | MemoryHit, float | None]] = [
            (r, None) for r in repo.records(person, ["profile"])[-PROFILE_LIMIT:]
        ]
        rows += [(h, h.score) for h in search(runtime.store, person, query, settings)]
        for record, score in rows:
            ref = str(len(refs) + 1)
            refs[ref] = record.id
            memories.append(
                {
                    "ref": int(ref),
                    "id": record.id,
                    "who": who,
                    "user_id": person,
                    "kind": record.kind,
                    "text": record.text,
                    "score": score,
                }
            )
    return {"memories": memories, "memory_refs": refs}
