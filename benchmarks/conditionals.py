"""Issue 11: a fact said with a condition is kept, a supposition is not (benchmarks/data/conditionals.json).

Three helpers who read no code wrote conditional sentences, each a `fact` ("If I have coffee after
2pm, I'm wide awake until 3am.", "I'm vegan, if that matters.") or a `supposition` ("要是我中了
彩票，第一件事就是辞职"): `tune` (its misses were read), `report` (held out) and `fresh` (written
after the `supposition` head was final). Each line is said by a fresh user through `Memory.add`
on the embedded defaults:

- `fact_kept`: the share of facts that left a user-model memory (higher is better);
- `supposition_left`: the share of suppositions that left none (higher is better).

    python -m benchmarks.conditionals --split report [--verbose]
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.common import ROOT, labelled, run_half, said_alone

DATA = ROOT / "benchmarks" / "data" / "conditionals.json"


def lines(split: str) -> list[dict[str, Any]]:
    """The lines of a half (`tune`, `report`, `fresh`, or `all`: tune and report)."""
    return labelled(DATA, split, outside_all=("fresh",))


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say each line of a half as a fresh user and count which left a user-model memory."""
    counts: Counter[str] = Counter()
    for item, records in said_alone("conditionals", lines(split)):
        kept = [r.text for r in records if r.aspect]
        key = f"{item['label']}_{item['lang']}"
        counts[f"{key}_n"] += 1
        counts[f"{key}_ok"] += bool(kept) == (item["label"] == "fact")
        if verbose and bool(kept) != (item["label"] == "fact"):
            print(f"miss {item['label']} {item['text']!r}: kept {kept}")
    out: dict[str, Any] = {"split": split}
    for lang in ("zh", "en"):
        for label, name in (("fact", "fact_kept"), ("supposition", "supposition_left")):
            n = counts[f"{label}_{lang}_n"]
            out[f"{name}_{lang}"] = f"{counts[f'{label}_{lang}_ok']}/{n}"
    return out


if __name__ == "__main__":
    run_half("conditionals", __doc__, run, extra=("fresh",))
