"""What a user goes on to say about their pet with a pronoun reaches a later request as the pet's, and nothing said of an animal not theirs does.

`benchmarks/data/pet_pronouns.json` (80 conversations, written by a helper who read no code): a
user names their pet, then says more about it in the next message, starting with a pronoun
("它对鸡肉过敏" after "我家狗叫旺财", "he's diabetic, gets insulin shots" after "my cat Simba").
A question is then asked in a new session. Counted per half and language, through the graph on
the embedded defaults, as `benchmarks.pronoun_reads` counts:

- `pet-new`: the pronoun sentence's fact is in the memory block;
- `pet-change`: its new value is in the block and the old one is not;
- `not-mine`: nothing said of an animal or thing not the user's pet is in the block;
- `stored`: the fact is in one of the user's current memories;
- `theirs`: that memory names the pet (a pet's allergy kept as "对鸡肉过敏" is the user's).

An English keyword matches at the start of a word ("raw" is not in "drawing").

    python -m benchmarks.pet_reads --split tune
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from benchmarks.common import run_half
from benchmarks.pronoun_reads import run as run_reads

DATA = Path(__file__).parent / "data" / "pet_pronouns.json"


def _has(texts: list[str], word: str) -> bool:
    if not word.isascii():
        return any(word in t for t in texts)
    return any(re.search(rf"\b{re.escape(word)}", t, re.I) for t in texts)


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Run a half of the pet conversations through the graph and count."""
    return run_reads(split, verbose, data=DATA, has=_has)


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("pet_reads", __doc__, run)


if __name__ == "__main__":
    main()
