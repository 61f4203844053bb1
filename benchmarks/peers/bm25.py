"""BM25 alone (`bm25s`, English stop words, Snowball stemmer): the lexical baseline.

`bm25s` indexes a fixed corpus and has no incremental add, so each `add_texts` call
re-indexes the user's whole corpus (the tokens of earlier texts are kept, only the index is
rebuilt): that is what adding memories to a BM25 index costs, and it is timed as adding.
"""

from __future__ import annotations

import bm25s
import Stemmer

from benchmarks.peers.base import TextSystem


class BM25System(TextSystem):
    """One `bm25s.BM25` index per user, rebuilt on every add."""

    name = "bm25"

    def __init__(self) -> None:
        self.notes = f"bm25s {bm25s.__version__}, stop words 'en', Snowball English stemmer; no embeddings"
        self._stemmer = Stemmer.Stemmer("english")
        self._keys: dict[str, list[str]] = {}
        self._tokens: dict[str, list[list[str]]] = {}
        self._index: dict[str, bm25s.BM25] = {}

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        out = bm25s.tokenize(
            texts, stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        return [list(t) for t in out]  # type: ignore[union-attr]

    def add_texts(self, user: str, items: list[tuple[str, str]], reindex: bool = True) -> None:
        """Tokenize the new texts and rebuild the user's index (`reindex=False`: not yet)."""
        keys = self._keys.setdefault(user, [])
        tokens = self._tokens.setdefault(user, [])
        keys += [k for k, _ in items]
        tokens += self._tokenize([t for _, t in items])
        if reindex:
            index = bm25s.BM25()
            index.index(tokens, show_progress=False)
            self._index[user] = index

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        index = self._index.get(user)
        if index is None:
            return []
        keys = self._keys[user]
        q = self._tokenize([query])
        if not q[0]:  # nothing but stop words: BM25 has nothing to match
            return []
        ids, scores = index.retrieve(q, k=min(k, len(keys)), show_progress=False, n_threads=1)
        return [keys[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]
