"""`retrieve_memories`: find the long-term memories worth showing the model this turn."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from mneme.context import Context, context_of
from mneme.memory.record import MemoryHit
from mneme.memory.search import SearchSettings, search
from mneme.memory.usage import note_use
from mneme.memory.usermodel.recall import Touch, touch_of, user_model_hits
from mneme.memory.write import OUTDATED
from mneme.state import State
from mneme.tokens import message_text

QUERY_CHARS = 300
"""Each query text is cut to this many characters: embedding cost grows with length
(about 1 ms per token here), and the start of a message carries its topic."""
MODEL_POOL = 8
"""The turn's search returns this many more memories than it injects: the user-model memories
among them are candidates of the user model's choice."""
EARLIER_WEIGHT = 0.8
"""Evidence found through an earlier turn counts this much (per turn back) of the new input's."""


def _clip(text: str) -> str:
    return " ".join(text.split())[:QUERY_CHARS]


def _group_lines(message: BaseMessage) -> list[dict[str, str]]:
    said = message.additional_kwargs.get("group_messages") if isinstance(message, HumanMessage) else None
    return [m for m in said or [] if isinstance(m, dict) and m.get("content")]


def _said(message: BaseMessage) -> str:
    """What a user turn asks: the line that addressed the bot in a group burst, else the text."""
    lines = _group_lines(message)
    return _clip(str(lines[-1]["content"]) if lines else message_text(message))


def build_queries(state: State, ctx: Context, person: str | None = None) -> list[tuple[str, float]]:
    """The new input, then earlier user turns (and task slots) with decaying weights.

    A follow-up such as "and how do I return it?" means nothing alone; the turns before it
    and the order id in the task state say what "it" is. Each text is searched on its own and
    the evidence fused by weight, so earlier turns' embeddings come from the cache.

    Args:
        state: The thread state (the new input is its last user message).
        ctx: Settings (`query_turns`).
        person: In a group chat, the participant whose memories are searched: what they said
            in this burst is added to the query.

    Returns:
        `(text, weight)` pairs, the new input first.
    """
    humans = [m for m in state.messages if isinstance(m, HumanMessage)]
    recent = humans[-(ctx.query_turns + 1) :]
    queries: list[tuple[str, float]] = []
    for back, msg in enumerate(reversed(recent)):
        text = _said(msg)
        if text:
            queries.append((text, EARLIER_WEIGHT**back))
    if person is not None and humans:
        own = [str(m["content"]) for m in _group_lines(humans[-1]) if m.get("sender") == person]
        if own:
            queries.append((_clip(" ".join(own[-3:])), EARLIER_WEIGHT))
    slots = (state.task or {}).get("slots") or {}
    if slots:
        queries.append((_clip(" ".join(str(v) for v in slots.values())), EARLIER_WEIGHT))
    seen: set[str] = set()
    return [(t, w) for t, w in queries if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]


def _row(hit: MemoryHit, ref: int, who: str, person: str, model: bool) -> dict[str, Any]:
    return {
        "ref": ref,
        "id": hit.id,
        "who": who,
        "user_id": person,
        "kind": hit.kind,
        "text": hit.text,
        "aspect": hit.aspect,
        "constraint": hit.constraint,
        "said": hit.said_at,
        "score": None if model else hit.score,
    }


def person_memories(
    store: BaseStore, person: str, queries: list[tuple[str, float]], ctx: Context, touch: Touch | None = None
) -> tuple[list[MemoryHit], list[MemoryHit]]:
    """(user-model memories, relevant memories) of one person for these queries.

    The user model brings in what the request's domain touches of the person, whatever words
    it uses (a restaurant request: their diet and allergies), at most `profile_limit`, hard
    constraints first; other memories come when they resemble the request enough
    (`min_relevance`), at most `retrieval_limit`. Both skip memories above `max_sensitivity`.
    """
    settings = SearchSettings.from_context(ctx)
    found = search(store, person, queries, replace(settings, limit=ctx.retrieval_limit + MODEL_POOL))
    model = (
        user_model_hits(
            store, person, queries[0][0], queries, settings, ctx.profile_limit, touch, relevant=found
        )
        if ctx.profile_limit and queries
        else []
    )
    # user-model memories come through the model; a recap quoting a changed fact never comes
    memories = [h for h in found if not h.aspects and not (h.metadata or {}).get(OUTDATED)]
    return model, memories[: ctx.retrieval_limit]


def retrieve_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve each participant's user-model memories and relevant memories, labelled by person.

    What is returned is what `build_context` injects; each memory's use is counted (see
    `memory/usage.py`), so memories that keep being useful gain weight.
    """
    ctx = context_of(runtime)
    store = runtime.store
    if store is None or (ctx.retrieval_limit == 0 and ctx.profile_limit == 0):
        return {"memories": [], "memory_refs": {}}
    people = state.participants or [ctx.user_id]
    # a group's thread is a group even when one member speaks (what they confided elsewhere stays out)
    group = state.shared or len(people) > 1 or bool(people and people[0] != ctx.user_id)
    memories: list[dict[str, Any]] = []
    refs: dict[str, str] = {}
    touch: Touch | None = None
    last = state.messages[-1] if state.messages else None
    asker = (last.name if isinstance(last, HumanMessage) else None) or ctx.user_id  # who addressed the bot
    for person in people:
        queries = build_queries(state, ctx, person if group else None)
        if not queries:
            continue
        if touch is None and ctx.profile_limit:
            touch = touch_of(queries[0][0])  # the request is the same for every participant
        limited = replace(ctx, max_sensitivity=min(ctx.max_sensitivity, ctx.group_max_sensitivity))
        theirs = touch.elsewhere() if touch is not None and group and person != asker else touch
        model, found = person_memories(store, person, queries, limited if group else ctx, theirs)
        for hits, is_model in ((model, True), (found, False)):
            for hit in hits:
                ref = len(refs) + 1
                refs[str(ref)] = hit.id
                memories.append(_row(hit, ref, person if group else "", person, is_model))
        note_use(store, person, [h.id for h in (*model, *found)])  # written in the background
    return {"memories": memories, "memory_refs": refs}
