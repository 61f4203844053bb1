"""Issue 11: terse news about oneself ("红牛戒了", "sold the car, biking everywhere now") read by the user model's heads.

`benchmarks/data/terse_lines.json`: 440 lines by a helper who read no code, labelled `change` (a
lasting change of the speaker's own), `passing` (the same words, true only for now), `other` (a
change of someone else's) and `plain` (a lasting fact, no change). Counted per language and
label, the share the heads read as worth keeping (`statements.MEMORABLE`), as a change (0.5), as
someone else's (`statements.SOMEONE_ELSE`) and as true only for now (`write.PASSING`).

    python -m benchmarks.terse_lines [--split report|tune|all]
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import ROOT, labelled, rate, run_half

DATA = ROOT / "benchmarks" / "data" / "terse_lines.json"
CHANGE = 0.5
"""`change` probability counted as read as a change."""


def run(split: str = "report", verbose: bool = False) -> dict[str, Any]:
    """Read every line of a half with the heads and count per language and label."""
    from mneme.memory.usermodel.heads import passing, read_statements
    from mneme.memory.usermodel.statements import MEMORABLE, SOMEONE_ELSE
    from mneme.memory.write import PASSING

    items = labelled(DATA, split)
    texts = [i["text"] for i in items]
    rows = [
        {
            "lang": i["lang"],
            "label": i["label"],
            "memorable": r.memorable >= MEMORABLE,
            "change": r.change >= CHANGE,
            "others": r.others >= SOMEONE_ELSE,
            "passing": p >= PASSING,
        }
        for i, r, p in zip(items, read_statements(texts), passing(texts), strict=True)
    ]
    if verbose:
        for i, row in zip(items, rows, strict=True):
            print(i["label"], {k: v for k, v in row.items() if isinstance(v, bool)}, i["text"])
    out: dict[str, Any] = {}
    for lang in ("zh", "en"):
        for label in ("change", "passing", "other", "plain"):
            mine = [r for r in rows if r["lang"] == lang and r["label"] == label]
            out[f"{lang}_{label}"] = {
                "lines": len(mine),
                **{
                    k: rate(sum(r[k] for r in mine), len(mine))
                    for k in ("memorable", "change", "others", "passing")
                },
            }
    return out


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("terse_lines", __doc__, run)


if __name__ == "__main__":
    main()
