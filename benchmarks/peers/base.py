"""What every system under comparison offers: add texts for a user, search a user's texts.

The LoCoMo protocol (`benchmarks.locomo`) speaks of conversations; the scale benchmark speaks
of one user with many texts. Both reduce to the two methods below, so each adapter is written
once and every system receives exactly the same text per turn.
"""

from __future__ import annotations

from typing import Any

from benchmarks.locomo import Conversation


def turn_text(turn: dict[str, Any]) -> str:
    """The text every system stores for a LoCoMo turn (the embedding cache is keyed on it)."""
    return f"{turn['speaker']}: {turn['text']}"


def turn_items(conv: Conversation) -> list[tuple[str, str]]:
    """A conversation's turns as `(dia_id, text)` pairs, in order."""
    return [(t["dia_id"], turn_text(t)) for t in conv.turns]


class TextSystem:
    """Base of the adapters: the LoCoMo methods are written in terms of `add_texts`/`search_user`."""

    name = "system"
    notes = ""
    """How this system was configured, shown next to its figures."""

    def add_texts(self, user: str, items: list[tuple[str, str]]) -> None:
        """Store `(key, text)` pairs for a user, each text verbatim and findable by its key."""
        raise NotImplementedError

    def search_user(self, user: str, query: str, k: int) -> list[str]:
        """The keys of a user's k best texts for a query, best first."""
        raise NotImplementedError

    def add(self, conv: Conversation) -> None:
        self.add_texts(conv.conv_id, turn_items(conv))

    def search(self, conv: Conversation, question: str, k: int) -> list[str]:
        return self.search_user(conv.conv_id, question, k)

    def close(self) -> None:
        """Release files and memory (the default holds nothing)."""
