"""Scoring an extractor against labelled utterances: precision and recall of the facts it yields."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mneme.memory.extract import Candidate


@dataclass(frozen=True)
class ExpectedFact:
    """One fact a labelled utterance should yield.

    A candidate matches when its text (for a forget request, its topic) contains every string
    of `has` (case-insensitive), and `kind`, `subject` and `value` equal the candidate's when
    given. The action must equal the candidate's, except for a keyed fact (a `subject` is
    given): a profile field is replaced by its key whether or not the user said "change".
    """

    has: tuple[str, ...] = ()
    kind: str | None = None
    subject: str | None = None
    value: str | None = None
    action: str = "add"

    def matches(self, cand: Candidate) -> bool:
        """Whether a candidate is this fact."""
        text = (cand.topic or cand.text) if cand.action == "forget" else cand.text
        if not all(h.casefold() in text.casefold() for h in self.has):
            return False
        if self.kind is not None and cand.kind != self.kind:
            return False
        if self.subject is not None and cand.subject != self.subject:
            return False
        if self.value is not None and cand.value != self.value:
            return False
        if self.subject is not None:
            return (cand.action == "forget") == (self.action == "forget")
        return cand.action == self.action


@dataclass(frozen=True)
class LabelledUtterance:
    """One utterance and the facts it should yield (none for small talk)."""

    id: str
    lang: str
    category: str
    text: str
    facts: tuple[ExpectedFact, ...]


@dataclass
class Score:
    """Counts and the mistakes behind them."""

    true_positives: int = 0
    candidates: int = 0
    expected: int = 0
    false_positives: list[tuple[str, str]] = field(default_factory=list)
    """(utterance id, candidate text) of candidates that match no expected fact."""
    misses: list[tuple[str, str]] = field(default_factory=list)
    """(utterance id, utterance text) of expected facts no candidate matched."""

    @property
    def precision(self) -> float:
        """Share of candidates that are expected facts (1.0 when there are none)."""
        return self.true_positives / self.candidates if self.candidates else 1.0

    @property
    def recall(self) -> float:
        """Share of expected facts found (1.0 when none were expected)."""
        return self.true_positives / self.expected if self.expected else 1.0

    def as_dict(self) -> dict[str, Any]:
        """Figures for a report."""
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "true_positives": self.true_positives,
            "candidates": self.candidates,
            "expected": self.expected,
        }


@dataclass(frozen=True)
class LabelSet:
    """A labelled extraction set and the time its relative dates resolve against."""

    now: datetime
    items: tuple[LabelledUtterance, ...]


def load_labels(path: str | Path) -> LabelSet:
    """Read a labelled set (see `tests/data/extraction_labels.json`)."""
    data = json.loads(Path(path).read_text("utf-8"))
    items = tuple(
        LabelledUtterance(
            id=raw["id"],
            lang=raw["lang"],
            category=raw["category"],
            text=raw["text"],
            facts=tuple(
                ExpectedFact(
                    has=tuple(f.get("has", ())),
                    kind=f.get("kind"),
                    subject=f.get("subject"),
                    value=f.get("value"),
                    action=f.get("action", "add"),
                )
                for f in raw["facts"]
            ),
        )
        for raw in data["items"]
    )
    return LabelSet(now=datetime.fromisoformat(data["now"]), items=items)


def score_one(item: LabelledUtterance, found: list[Candidate], into: Score) -> None:
    """Match one utterance's candidates to its facts, one to one, and count."""
    unmatched = list(found)
    into.candidates += len(found)
    into.expected += len(item.facts)
    for fact in item.facts:
        hit = next((c for c in unmatched if fact.matches(c)), None)
        if hit is None:
            into.misses.append((item.id, item.text))
        else:
            unmatched.remove(hit)
            into.true_positives += 1
    into.false_positives += [(item.id, c.text) for c in unmatched]


def evaluate(extractor: Callable[[str, datetime], list[Candidate]], labels: LabelSet) -> dict[str, Score]:
    """Score an extractor on a labelled set.

    Args:
        extractor: `(text, now) -> candidates`.
        labels: The labelled set.

    Returns:
        Scores keyed `all`, `lang:<lang>` and `category:<category>`.
    """
    scores: dict[str, Score] = {}
    for item in labels.items:
        found = extractor(item.text, labels.now)
        for key in ("all", f"lang:{item.lang}", f"category:{item.category}"):
            score_one(item, found, scores.setdefault(key, Score()))
    return scores
