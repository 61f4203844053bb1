"""Changes of mind said without a keyword: the later statement replaces the earlier, an addition stands beside it.

`benchmarks/data/change_pairs.json`: 560 pairs written by four helpers who read no code (zh/en),
split into a tuning and a report half by a hash of the id, and a new user's `trial` of 120 more
(a fifth helper; tuning data, outside `all`), then `trial8` (60, tuning data) and `trial9` (80,
held out), outside `all` too. A user says `first`, then, in
another session, `second`. Each pair is said by a fresh user through `Memory.add` on the
embedded defaults, as in `benchmarks.user_model_extraction`:

- `change_ok`: the memory of `second` is current and no memory of `first` is;
- `compatible_ok`: both are current;
- `change_first_stored`: `first` was kept at all (a pair whose first statement is not kept
  cannot be handled);
- `change_old_gone`: of the change pairs whose `first` was kept, the share where it is no
  longer current (whether or not `second` was kept);
- `compatible_old_kept`: of the compatible pairs whose `first` was kept, the share where it is
  still current (a later remark wrongly read as a change replaces it).

    python -m benchmarks.change_pairs --split report   # or tune, all, trial, trial8, trial9
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import run_half
from benchmarks.user_model_extraction import say_pairs, score

DATA = Path(__file__).parent / "data" / "change_pairs.json"


def written_pairs(split: str) -> list[dict[str, Any]]:
    """The pairs of a half (`tune`, `report` or `all` of the two), or of a new user's trial."""
    pairs: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["pairs"]
    return [
        p for p in pairs if p["split"] == split or (split == "all" and not p["split"].startswith("trial"))
    ]


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say a half of the pairs, each as a fresh user, and count the pairs handled."""
    from mneme.memory.api import Memory

    pairs = written_pairs(split)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mneme-pairs-") as tmp, Memory.open(tmp) as mem:
        rows = say_pairs(mem, pairs)
    if verbose:
        for r in rows:
            if not r["ok"]:
                print(json.dumps(r, ensure_ascii=False))
    keys = ("change_pairs", "change_ok", "change_first_stored", "compatible_pairs", "compatible_ok")
    figures = {lang: {k: v for k, v in f.items() if k in keys} for lang, f in score(rows).items()}
    for lang, f in figures.items():
        kept = [r for r in rows if r["first_stored"] and lang in ("all", r["lang"])]
        change = [r for r in kept if r["relation"] == "change"]
        compatible = [r for r in kept if r["relation"] == "compatible"]
        f["change_old_gone"] = round(sum(not r["first_current"] for r in change) / max(1, len(change)), 3)
        f["compatible_old_kept"] = round(
            sum(r["first_current"] for r in compatible) / max(1, len(compatible)), 3
        )
    return {"split": split, "seconds": round(time.perf_counter() - t0, 1), **figures}


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("change_pairs", __doc__, run, extra=("trial", "trial8", "trial9"))


if __name__ == "__main__":
    main()
