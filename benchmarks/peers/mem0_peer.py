"""mem0 (`mem0ai`, open-source `Memory`) with `infer=False`, its default local Qdrant, the same E5.

Set-up, all offline: telemetry off (`MEM0_TELEMETRY=False`), mem0's folder and history
database in a temporary directory, the default vector store (Qdrant in local mode) in that
folder, and the embedder replaced by E5 through mem0's own `EmbeddingBase` interface. mem0
builds an OpenAI client at start-up even with `infer=False`, so the worker process gets a
placeholder `OPENAI_API_KEY`; the network guard (`benchmarks.offline`) refuses and counts any
connection, and the count is reported (it must be 0).

mem0's embedder interface tells the embedder whether a text is being added or searched
(`memory_action`); E5 needs exactly that ("passage: " vs "query: " prefixes), so the adapter
embeds added texts as passages (the cached vectors every system gets) and searches as queries.
mem0's LangChain embedder would send both through `embed_query`.

mem0 2.x adds BM25 and entity boosts to its ranking when spaCy's `en_core_web_sm` and
fastembed's `Qdrant/bm25` model are present; both are downloaded at run time (GitHub and the
Hugging Face hub), which is impossible offline, so mem0 ranks by semantic similarity alone,
as it does itself when they are missing (it logs that hybrid scoring is disabled).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import uuid
from datetime import UTC, datetime
from importlib import metadata
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from benchmarks.peers.base import TextSystem

PLACEHOLDER_KEY = "sk-placeholder-mneme-benchmark-no-network"


def prepare_environment(home: str) -> None:
    """What mem0 reads from the environment at import and start-up (call before importing it)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = home
    os.environ.setdefault("OPENAI_API_KEY", PLACEHOLDER_KEY)


def _memory_client() -> Any:
    from qdrant_client import QdrantClient

    return QdrantClient(location=":memory:")


class Mem0System(TextSystem):
    """mem0's `Memory.add(..., infer=False)` and `Memory.search(..., filters={"user_id": ...})`."""

    name = "mem0"

    def __init__(self, embeddings: Embeddings, dims: int = 384, in_memory: bool = False) -> None:
        """Start mem0 offline.

        Args:
            embeddings: The shared E5 embeddings.
            dims: Their size.
            in_memory: Qdrant's local mode without its on-disk copy (the scale benchmark: the
                on-disk copy commits every point to SQLite, which makes filling 100,000
                memories take many minutes; searches run in memory either way).
        """
        self._tmp = tempfile.TemporaryDirectory(prefix="mem0-bench-")
        prepare_environment(self._tmp.name)
        from mem0 import Memory
        from mem0.embeddings.base import EmbeddingBase

        class E5Embedder(EmbeddingBase):
            """Passages for what is added or updated, queries for what is searched."""

            def embed(
                self, text: Any, memory_action: Literal["add", "search", "update"] | None = None
            ) -> list[float]:
                if memory_action == "search":
                    return embeddings.embed_query(text)
                return embeddings.embed_documents([text])[0]

        logging.getLogger("mem0").setLevel(logging.ERROR)  # "hybrid scoring disabled" once, not per call
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "embedding_model_dims": dims,
                    "path": os.path.join(self._tmp.name, "qdrant"),
                    **({"client": _memory_client()} if in_memory else {}),
                },
            },
            "embedder": {"provider": "langchain", "config": {"model": embeddings, "embedding_dims": dims}},
            "history_db_path": os.path.join(self._tmp.name, "history.db"),
        }
        self.memory = Memory.from_config(config)
        self.memory.embedding_model = E5Embedder()
        self.notes = (
            f"mem0ai {metadata.version('mem0ai')}, infer=False, Qdrant local mode"
            f"{' in memory' if in_memory else ' on disk (the default)'} (qdrant-client "
            f"{metadata.version('qdrant-client')}), E5 passages/queries; semantic ranking only "
            "(its BM25 and entity boosts need spaCy en_core_web_sm and fastembed Qdrant/bm25, "
            "both downloaded at run time, unavailable offline)"
        )

    def add_texts(self, user: str, items: list[tuple[str, str]]) -> None:
        for key, text in items:  # one call per turn: metadata is per call
            self.memory.add(text, user_id=user, infer=False, metadata={"key": key})

    def bulk_insert(self, user: str, items: list[tuple[str, str]]) -> None:
        """Fill path of the scale benchmark: one batch insert into mem0's vector store.

        Each point gets the vector and the payload `Memory.add(..., infer=False)` would write
        (text, hash, times, user, role, metadata); mem0's history rows are not written.
        """
        texts = [t for _, t in items]
        now = datetime.now(UTC).isoformat()
        vectors = [self.memory.embedding_model.embed(t, "add") for t in texts]
        payloads = [
            {
                "key": key,
                "user_id": user,
                "role": "user",
                "data": text,
                "hash": hashlib.md5(text.encode()).hexdigest(),
                "created_at": now,
                "updated_at": now,
                "text_lemmatized": text,
            }
            for key, text in items
        ]
        self.memory.vector_store.insert(
            vectors=vectors, payloads=payloads, ids=[str(uuid.uuid4()) for _ in items]
        )

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        found = self.memory.search(query, top_k=k, filters={"user_id": user})
        return [str(r.get("metadata", {}).get("key", "")) for r in found["results"]]

    def close(self) -> None:
        try:
            self.memory.vector_store.client.close()
        finally:
            self._tmp.cleanup()
