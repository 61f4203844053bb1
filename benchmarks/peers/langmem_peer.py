"""LangMem's search tool (`create_search_memory_tool`) over the same LangGraph store as its row.

LangMem writes memories through an LLM (its memory manager, or an agent calling its manage
tool), which cannot run offline; the verbatim turns are therefore written into the store
exactly as in the `langgraph-inmemory` row, and every search goes through LangMem's tool,
invoked with the user in `configurable` as inside a graph. Its recall therefore equals the
store's; what it adds is the tool's cost (and LangMem's import footprint).
"""

from __future__ import annotations

import json
from importlib import metadata

from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore
from langmem import create_search_memory_tool

from benchmarks.peers.langgraph_store import LangGraphStoreSystem


class LangMemSystem(LangGraphStoreSystem):
    """Texts in an indexed `InMemoryStore`, searched through LangMem's `search_memory` tool."""

    name = "langmem"

    def __init__(self, embeddings: Embeddings, store: InMemoryStore | None = None) -> None:
        super().__init__(embeddings)
        if store is not None:
            self.store = store
        self.tool = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=self.store)
        self.notes = (
            f"langmem {metadata.version('langmem')} search_memory tool over the langgraph-inmemory "
            "store (writes go to the store directly: LangMem's own writers need an LLM)"
        )

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        out = self.tool.invoke(
            {"query": query, "limit": k}, config={"configurable": {"langgraph_user_id": user}}
        )
        return [row["key"] for row in json.loads(out)]
