"""LangGraph's own `InMemoryStore` with a semantic index: what a LangGraph user gets out of the box.

Each text is one item `{"text": ...}` keyed by its id in the namespace `("memories", user)`,
written with `store.batch` of `PutOp`s (200 per call, as mneme's adapter does; a text repeated
within a batch starts a new one, see `unique_text_batches`) and embedded
through the store's index; a search is `store.search(namespace, query=..., limit=k)`.
"""

from __future__ import annotations

from importlib import metadata

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks.peers.base import TextSystem

BATCH = 200


def unique_text_batches(items: list[tuple[str, str]], size: int = BATCH) -> list[list[tuple[str, str]]]:
    """Batches of at most `size` items in which no text occurs twice.

    `InMemoryStore.batch` embeds each distinct text once and then fails when a text occurs
    twice in one batch ("Number of embeddings (199) does not match number of indices (200)",
    langgraph 1.2.24), which LoCoMo's repeated short turns trigger; a repeated text therefore
    starts a new batch.
    """
    out: list[list[tuple[str, str]]] = []
    seen: set[str] = set()
    for key, text in items:
        if not out or len(out[-1]) >= size or text in seen:
            out.append([])
            seen = set()
        out[-1].append((key, text))
        seen.add(text)
    return out


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
            "brute-force cosine over the namespace; batches of 200 split where a text repeats "
            "(InMemoryStore.batch fails on a text repeated within one batch)"
        )

    def add_texts(self, user: str, items: list[tuple[str, str]]) -> None:
        for batch in unique_text_batches(items):
            self.store.batch([PutOp(("memories", user), key, {"text": text}) for key, text in batch])

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        return [item.key for item in self.store.search(("memories", user), query=query, limit=k)]
