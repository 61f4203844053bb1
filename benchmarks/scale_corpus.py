"""Up to 100,000 distinct memory texts with E5 vectors, built in seconds from the cached LoCoMo turns.

Embedding 100,000 texts with E5 takes about 40 minutes on the reference machine, longer than
the whole benchmark may run. The corpus is therefore made from real parts:

- texts 0 .. 5,881 are the LoCoMo turns (`"{speaker}: {text}"`) with their real E5 passage
  vectors (from the benchmark's embedding cache);
- every further text joins two different turns, `"{turn a} / {turn b}"` (pairs drawn with a
  fixed seed, never repeated), and its vector is the normalized sum of the two real vectors:
  not what E5 would compute for the joined text, but a point in the same region of the same
  space, so index structures and distance computations face realistic data.

Queries are never synthetic: they are LoCoMo questions embedded by the real model at search
time. `CorpusEmbeddings` hands the prepared vectors to any system that embeds these texts;
any other text (a system's own probes, anchors) goes to the real model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.locomo import conversations
from benchmarks.peers.base import turn_text

SEED = 20240607


@dataclass
class ScaleCorpus:
    """Texts with their vectors, and the questions used as queries."""

    keys: list[str]
    texts: list[str]
    vectors: np.ndarray
    questions: list[str]
    real: int
    """How many texts (the first ones) are single LoCoMo turns with their own E5 vectors."""


def build(n: int, embeddings: Embeddings) -> ScaleCorpus:
    """The first n texts of the scale corpus (deterministic for a given n and seed).

    Args:
        n: How many texts.
        embeddings: The document embeddings of the real turns (the benchmark cache).
    """
    convs = conversations()
    turns = list(dict.fromkeys(turn_text(t) for c in convs for t in c.turns))
    base = np.asarray(embeddings.embed_documents(turns), dtype=np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True) + 1e-9
    texts = turns[:n]
    vecs = [base[: len(texts)]]
    rng = random.Random(SEED)
    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    while len(texts) + len(pairs) < n:
        a, b = rng.randrange(len(turns)), rng.randrange(len(turns))
        if a == b or (a, b) in seen or turns[a] == turns[b]:
            continue
        seen.add((a, b))
        pairs.append((a, b))
    if pairs:
        ia = np.fromiter((a for a, _ in pairs), dtype=np.int64)
        ib = np.fromiter((b for _, b in pairs), dtype=np.int64)
        summed = base[ia] + base[ib]
        summed /= np.linalg.norm(summed, axis=1, keepdims=True) + 1e-9
        vecs.append(summed)
        texts = texts + [f"{turns[a]} / {turns[b]}" for a, b in pairs]
    questions = list(dict.fromkeys(q.text for c in convs for q in c.questions))
    rng.shuffle(questions)
    return ScaleCorpus(
        keys=[f"m{i}" for i in range(len(texts))],
        texts=texts,
        vectors=np.concatenate(vecs) if len(vecs) > 1 else vecs[0],
        questions=questions,
        real=min(n, len(turns)),
    )


class CorpusEmbeddings(Embeddings):
    """Prepared vectors for the corpus texts; the real model for queries and any other text."""

    def __init__(self, corpus: ScaleCorpus, inner: Embeddings) -> None:
        self.inner = inner
        self.dims = corpus.vectors.shape[1]
        self._vectors = corpus.vectors
        self._row = {t: i for i, t in enumerate(corpus.texts)}
        self.misses = 0
        """Documents that were not corpus texts (embedded by the real model)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = [self._row.get(t) for t in texts]
        missing = [t for t, r in zip(texts, rows, strict=True) if r is None]
        computed = iter(self.inner.embed_documents(missing) if missing else [])
        self.misses += len(missing)
        return [self._vectors[r].tolist() if r is not None else next(computed) for r in rows]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)
