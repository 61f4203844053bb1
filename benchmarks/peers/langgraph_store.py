"""LangGraph's own `InMemoryStore` with a semantic index: what a LangGraph user gets out of the box.

Each text is one item `{"text": ...}` keyed by its id in the namespace `("memories", user)`,
written with `store.batch` of `PutOp`s (200 per call, as mneme's adapter does) and embedded
through the store's index; a search is `store.search(namespace, query=..., limit=k)`.
"""

from __future__ import annotations

from importlib import metadata

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks.peers.base import TextSystem

BATCH = 200


def indexed_store(embeddings: Embeddings, dims: int = 384) -> InMemoryStore:
    """An `InMemoryStore` that embeds the `text` field of every item."""
    return InMemoryStore(index={"dims": dims, "embed": embeddings, "fields": ["text"]})


class LangGraphStoreSystem(TextSystem):
    """Texts as items of a LangGraph `InMemoryStore` with an index."""

    name = "langgraph-inmemory"

    def __init__(self, embeddings: Embeddings) -> None:
        self.store = indexed_store(embeddings)
        self.notes = (
            f"langgraph {metadata.version('langgraph')} InMemoryStore(index=E5, fields=['text']); "
            "brute-force cosine over the namespace"
        )

    def add_texts(self, user: str, items: list[tuple[str, str]]) -> None:
        ops = [PutOp(("memories", user), key, {"text": text}) for key, text in items]
        for i in range(0, len(ops), BATCH):
            self.store.batch(ops[i : i + BATCH])

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        return [item.key for item in self.store.search(("memories", user), query=query, limit=k)]
