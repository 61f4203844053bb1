"""An on-disk cache of document embeddings for benchmark runs (never used by mneme itself).

Recall experiments add the same ~5,900 LoCoMo turns again and again; caching their vectors
(keyed by model and text) turns minutes of embedding into seconds. The vectors are the
model's own, so recall is unchanged. Query embeddings are not cached here: latency figures
always include embedding the query.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.common import ROOT

CACHE = ROOT / "benchmarks" / ".cache" / "embeddings.sqlite"


class CachedEmbeddings(Embeddings):
    """Wraps an embeddings model; documents are looked up in, or added to, a SQLite cache."""

    def __init__(
        self, inner: Embeddings, model_key: str, path: Path = CACHE, cache_queries: bool = False
    ) -> None:
        self.inner = inner
        self.model_key = model_key
        self.cache_queries = cache_queries
        self.dims = getattr(inner, "dims", None)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (k TEXT PRIMARY KEY, v BLOB)")
        self._lock = threading.Lock()

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha256(f"{self.model_key}\x1f{kind}\x1f{text}".encode()).hexdigest()

    def _cached(self, kind: str, texts: list[str], compute) -> list[list[float]]:  # type: ignore[no-untyped-def]
        keys = [self._key(kind, t) for t in texts]
        with self._lock:
            rows = (
                dict(
                    self._db.execute(
                        f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(keys))})", keys
                    ).fetchall()
                )
                if keys
                else {}
            )
        missing = [i for i, k in enumerate(keys) if k not in rows]
        if missing:
            vectors = compute([texts[i] for i in missing])
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vec VALUES (?, ?)",
                    [
                        (keys[i], np.asarray(v, dtype=np.float32).tobytes())
                        for i, v in zip(missing, vectors, strict=True)
                    ],
                )
                self._db.commit()
            for i, v in zip(missing, vectors, strict=True):
                rows[keys[i]] = np.asarray(v, dtype=np.float32).tobytes()
        return [np.frombuffer(rows[k], dtype=np.float32).tolist() for k in keys]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), 500):  # keep SQLite's parameter list short
            out += self._cached("doc", texts[i : i + 500], self.inner.embed_documents)
        return out

    def embed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return self.inner.embed_query(text)
        return self._cached("query", [text], lambda ts: [self.inner.embed_query(t) for t in ts])[0]
