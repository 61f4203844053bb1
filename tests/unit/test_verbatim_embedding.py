"""A message kept as said is embedded once, whichever embeddings the store uses."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from tests.fakes import HashEmbeddings


def test_the_bundled_model_embeds_a_kept_message_once(
    e5_store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    original = LocalEmbeddings._passage_vectors

    def counted(self: LocalEmbeddings, model: Any, texts: list[str]) -> dict[str, list[float]]:
        seen.extend(texts)
        return original(self, model, texts)

    monkeypatch.setattr(LocalEmbeddings, "_passage_vectors", counted)
    text = "Mira: we finally picked the teal tiles for the bathroom, ordered them on Sunday."
    memory = Memory(e5_store)
    [change] = memory.add({"role": "user", "content": text, "id": "m1"}, user_id="u", infer=False)
    assert change.operation == "ADD"
    assert seen.count(text) == 1  # embedded beside the guard, found by the store in the cache
    hits = memory.search("which tiles did we choose for the bathroom", user_id="u")
    assert hits and hits[0].text == text


class CountingEmbeddings(HashEmbeddings):
    """Hash embeddings that count the texts they are asked to embed (as a paid API would bill)."""

    def __init__(self) -> None:
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


def test_other_embeddings_are_not_asked_twice_for_a_kept_message() -> None:
    embeddings = CountingEmbeddings()
    store = InMemoryStore(index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]})
    text = "Mira: the plumber comes on Thursday at nine."
    Memory(store).add({"role": "user", "content": text, "id": "m1"}, user_id="u", infer=False)
    assert embeddings.documents.count(text) == 1
