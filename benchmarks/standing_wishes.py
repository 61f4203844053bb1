"""Issue 11: a standing wish about how to answer ("以后用英文回答我") is kept, a one-off request in the same words is not.

`benchmarks/data/standing_wishes.json`: `tune`, the held-out half of a helper's lines (its other
half is among the `memorable` and `standing` heads' examples; `heads.WISH_KEEP` was chosen on
it), and `report`, a second helper's lines. Each line is said by a fresh user through
`Memory.add` on the embedded defaults:

- `one_off_stored`: the share of one-off requests that left a memory (lower is better);
- `wish_kept`: the share of standing wishes that left one (higher is better).

    python -m benchmarks.standing_wishes --split report [--verbose]
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import ROOT, kept_shares, labelled, run_half

DATA = ROOT / "benchmarks" / "data" / "standing_wishes.json"


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say each line of a half as a fresh user and count what was kept."""
    names = {"pass": "one_off_stored", "keep": "wish_kept"}
    return {"split": split, **kept_shares("wishes", labelled(DATA, split), names, verbose)}


if __name__ == "__main__":
    run_half("standing_wishes", __doc__, run)
