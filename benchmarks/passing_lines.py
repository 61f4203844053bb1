"""Issue 11: a line true only for now (a trip, a treat) is read as passing, a lasting change said as casually is not.

`benchmarks/data/passing_lines.json`: the held-out halves of two helpers' lines (the tuning
halves are the `passing` head's examples). Counted per language: the share of passing lines
the head reads at `mneme.memory.write.PASSING` or above (those replace no memory and key no
field), and the share of lasting ones it reads so (a change that would then replace nothing).

    python -m benchmarks.passing_lines
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import ROOT, labelled, write_result

DATA = ROOT / "benchmarks" / "data" / "passing_lines.json"


def run(verbose: bool = False) -> dict[str, Any]:
    """Read every held-out line with the `passing` head and count per language and label."""
    from mneme.memory.usermodel.heads import passing
    from mneme.memory.write import PASSING

    items = labelled(DATA, "report")
    read = passing([i["text"] for i in items])
    figures: dict[str, Any] = {"threshold": PASSING}
    for lang in ("zh", "en"):
        for label in ("passing", "lasting"):
            mine = [p for i, p in zip(items, read, strict=True) if i["lang"] == lang and i["label"] == label]
            figures[f"{lang}_{label}_read_passing"] = f"{sum(p >= PASSING for p in mine)}/{len(mine)}"
    if verbose:
        for i, p in zip(items, read, strict=True):
            if (p >= PASSING) != (i["label"] == "passing"):
                print(f"{p:.2f} {i['label']}: {i['text']}")
    return figures


def main() -> None:
    """Run the report half and write the result."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    result = run(parser.parse_args().verbose)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    write_result("passing_lines", result)


if __name__ == "__main__":
    main()
