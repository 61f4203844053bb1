"""Issue 11: each fact of a message that says several is kept, for the right person (benchmarks/data/multi_facts.json).

A helper who read no code wrote 100 messages that say two or three things at once ("I live in
Denver, been here six years, and I work nights", "今年35岁，在银行上班，对花生过敏"), with the facts
a careful assistant keeps: whose each is and a word a memory must hold. Each message is said by a
fresh user through `Memory.add` on the embedded defaults:

- `found`: facts with a user-model memory holding their word, about the right person (a family
  member's fact under the family, a pet's under pets or family, the user's under neither);
- `extra`: user-model memories that hold none of the message's words (a piece kept as a fact it
  is not, "been here six years" as an age).

    python -m benchmarks.multi_facts --split report [--verbose]
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.common import ROOT, labelled, run_half, said_alone

DATA = ROOT / "benchmarks" / "data" / "multi_facts.json"
OTHERS = "family"
PETS = "pet"


def messages(split: str) -> list[dict[str, Any]]:
    """The messages of a half (`tune`, `report` or `all`)."""
    return labelled(DATA, split)


def right_person(fact: dict[str, Any], aspect: str | None) -> bool:
    """Whether a memory's aspect fits whose the fact is."""
    if fact["about"] == "user":
        return aspect != OTHERS or fact["topic"] == "family"
    if fact["about"] == "family":
        return aspect == OTHERS
    return aspect in (PETS, OTHERS)


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say each message of a half as a fresh user and count the facts kept."""
    counts: Counter[str] = Counter()
    for item, kept in said_alone("multi", messages(split)):
        records = [r for r in kept if r.aspect]
        used: set[str] = set()
        lang = item["lang"]
        for fact in item["facts"]:
            hits = [r for r in records if fact["key"].lower() in r.text.lower()]
            used |= {r.id for r in hits}
            found = any(right_person(fact, r.aspect) for r in hits)
            counts[f"{lang}_facts"] += 1
            counts[f"{lang}_found"] += found
            if verbose and not found:
                print(f"miss {item['text']!r} {fact}: kept {[(r.text, r.aspect) for r in records]}")
        for r in records:
            if r.id not in used:
                counts[f"{lang}_extra"] += 1
                if verbose:
                    print(f"extra {item['text']!r}: {r.text!r} ({r.aspect})")
    out: dict[str, Any] = {"split": split}
    for lang in ("zh", "en"):
        out[f"found_{lang}"] = f"{counts[f'{lang}_found']}/{counts[f'{lang}_facts']}"
        out[f"extra_{lang}"] = counts[f"{lang}_extra"]
    return out


if __name__ == "__main__":
    run_half("multi_facts", __doc__, run)
