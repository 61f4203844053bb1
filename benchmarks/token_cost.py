"""Tokens mneme injects per question, against the whole conversation (the full-context baseline).

For every LoCoMo question, the graph's own `retrieve_memories` node runs at the default
`Context` (retrieval limit, relevance threshold, memory budget) over the store that holds the
conversation's turns, and the memory part that `build_context` would assemble from its result
is counted. The running summary is not simulated: it is counted at its budget
(`budget_summary`), an upper bound. The baseline is the whole conversation as text (each
session's date line, then `"{speaker}: {text}"` per turn), as in the mem0 paper's
"full-context" row (26,031 tokens per query, judge score 72.9; mem0 about 1,764).
Counts use the o200k_base tokenizer of `openai:gpt-4o-mini` (exact and offline).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from benchmarks.common import summary
from benchmarks.locomo import Conversation
from benchmarks.peers.base import turn_text
from mneme.context import Context
from mneme.nodes.build_context import assemble
from mneme.nodes.retrieve_memories import retrieve_memories
from mneme.state import State
from mneme.tokens import TokenCounter, counter_for

MODEL = "openai:gpt-4o-mini"
MEM0_PAPER = {
    "full_context_tokens": 26031,
    "full_context_judge": 72.9,
    "mem0_tokens": 1764,
    "source": "Chhikara et al. 2025, Mem0 (arXiv:2504.19413), table 2",
}


def conversation_text(conv: Conversation) -> str:
    """The whole conversation as a model would be given it: date lines and turns."""
    lines: list[str] = []
    session = None
    for turn in conv.turns:
        if turn.get("session") != session:
            session = turn.get("session")
            lines.append(f"[session {session}, {turn.get('date', '')}]")
        lines.append(turn_text(turn))
    return "\n".join(lines)


def memory_tokens(store: BaseStore, user: str, question: str, ctx: Context, counter: TokenCounter) -> int:
    """Tokens of the memory part the graph would build for this question."""
    state = State(messages=[HumanMessage(content=question)])
    found = retrieve_memories(state, Runtime(context=ctx, store=store))
    rendered = assemble(State(**{**state.__dict__, **found}), ctx, counter)
    return int(rendered.usage.get("memory", 0))


def measure(
    store: BaseStore, convs: list[Conversation], progress: Callable[[float], None] = lambda f: None
) -> dict[str, Any]:
    """Per-question injected tokens against the full conversation, for every question."""
    counter = counter_for(MODEL)
    injected: list[float] = []
    full: list[float] = []
    budget_summary = Context().budget_summary
    total = sum(len(c.questions) for c in convs)
    for conv in convs:
        ctx = Context(user_id=conv.conv_id)
        whole = counter.count(conversation_text(conv))
        for q in conv.questions:
            injected.append(memory_tokens(store, conv.conv_id, q.text, ctx, counter))
            full.append(whole)
            progress(len(injected) / total)
    mem = summary(injected)
    base = summary(full)
    upper = mem["mean"] + budget_summary
    return {
        "tokenizer": f"o200k_base ({MODEL})",
        "questions": len(injected),
        "mneme_memory_tokens": mem,
        "mneme_questions_with_no_memory": sum(1 for t in injected if t == 0),
        "summary_budget_tokens": budget_summary,
        "mneme_tokens_per_query": round(upper, 1),
        "full_context_tokens_per_query": base["mean"],
        "full_over_mneme": round(base["mean"] / upper, 1) if upper else None,
        "full_over_mneme_memories_only": round(base["mean"] / mem["mean"], 1) if mem["mean"] else None,
        "mem0_paper": MEM0_PAPER,
    }
