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
QUERY_CHARS = 300
"""Each query text is cut to this many characters: embedding cost grows with length
(about 1 ms per token here), and the start of a message carries its topic."""
EARLIER_WEIGHT = 0.8
"""Relevance found through an earlier turn counts this much (per turn back) of the new input's."""


def build_queries(state: State, ctx: Context) -> list[tuple[str, float]]:
    """The new input, then the previous user turns (and task slots) with decaying weights.

    A follow-up such as "and how do I return it?" means nothing alone; the turns before it
    and the order id in the task state say what "it" is. Each part is searched on its own
    and the results fused, so the earlier turns' embeddings come from the cache.
    """
    humans = [m for m in state.messages if isinstance(m, HumanMessage)]
    recent = humans[-(ctx.query_turns + 1) :]
    queries: list[tuple[str, float]] = []
    for back, msg in enumerate(reversed(recent)):
        text = " ".join(message_text(msg).split())[:QUERY_CHARS]
        if text:
            queries.append((text, EARLIER_WEIGHT**back))
    slots = (state.task or {}).get("slots") or {}
    if slots:
        queries.append((" ".join(str(v) for v in slots.values())[:QUERY_CHARS], EARLIER_WEIGHT))
    return queries


def retrieve_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve each participant's profile fields and relevant memories, labelled by person."""
    ctx = context_of(runtime)
    if runtime.store is None or ctx.retrieval_limit == 0:
        return {"memories": [], "memory_refs": {}}
    queries = build_queries(state, ctx)
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
        rows += [(h, h.score) for h in search(runtime.store, person, queries, settings)]
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
