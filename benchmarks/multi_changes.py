"""Issue 11: one message that changes several things replaces each old value, and keeps the rest.

The data (`benchmarks/data/multi_changes.json`) was written by a helper who read none of mneme's
code: 120 users (60 zh, 60 en), each with 3 or 4 facts said in their own messages, then one
message that changes 2 or 3 of them ("跟你说下，我搬到上海了，工作也换了，现在在字节跳动"). Halves
by a hash of the message, fixed before tuning.

Each user's messages go through `Memory.add` (the offline extractor) on the real embedded
defaults. Counted per change: the new value current (in a current memory), the old value gone
(in none), both (handled); per item, all its changes handled; and the facts that were not
changed still current. Also (added 2026-12-08, after a run showed that "Left Deloitte for a
small firm." keeps "Deloitte" in a current memory by saying it was left): the old value in no
memory still current of those its earlier messages wrote (`old_retired`), and that with the new
value current.

Run: `python -m benchmarks.multi_changes [--split report|tune|all] [--verbose]`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, by_language, print_misses, run_half

DATA = ROOT / "benchmarks" / "data" / "multi_changes.json"


def run(split: str = "report", verbose: bool = False) -> dict[str, Any]:
    from mneme import Memory

    chosen = ("tune", "report") if split == "all" else (split,)
    items = [i for i in json.loads(DATA.read_text())["items"] if i["split"] in chosen]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mneme-multi-") as tmp, Memory.open(Path(tmp)) as memory:
        for item in items:
            user = item["id"]
            earlier = {
                change.id for text in item["before"] for change in memory.add(text, user_id=user) if change.id
            }
            memory.add(item["message"], user_id=user)
            records = [r for r in memory.get_all(user_id=user) if r.kind != "episodic"]
            current = [r.text for r in records]
            said = "\n".join(current).lower()
            still = "\n".join(r.text for r in records if r.id in earlier).lower()
            changes = [
                {
                    "new_current": not c["new"] or c["new"].lower() in said,
                    "old_gone": c["old"].lower() not in said,
                    "old_retired": c["old"].lower() not in still,
                }
                for c in item["changes"]
            ]
            rows.append(
                {
                    "id": user,
                    "lang": item["lang"],
                    "message": item["message"],
                    "current": current,
                    "changes": changes,
                    "kept": [w.lower() in said for w in item["unchanged"]],
                }
            )
    if verbose:
        print_misses(
            rows,
            lambda r: not all(c["new_current"] and c["old_gone"] for c in r["changes"]) or not all(r["kept"]),
        )
    return score(rows)


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per language and overall: changes handled, new values current, old ones gone, the rest kept."""
    out: dict[str, Any] = {}
    for lang, sel in by_language(rows):
        changes = [c for r in sel for c in r["changes"]]
        kept = [k for r in sel for k in r["kept"]]
        out[lang] = {
            "items": len(sel),
            "changes": len(changes),
            "handled": sum(c["new_current"] and c["old_gone"] for c in changes),
            "new_current": sum(c["new_current"] for c in changes),
            "old_gone": sum(c["old_gone"] for c in changes),
            "old_retired": sum(c["old_retired"] for c in changes),
            "retired_and_new_current": sum(c["new_current"] and c["old_retired"] for c in changes),
            "items_all_handled": sum(
                all(c["new_current"] and c["old_gone"] for c in r["changes"]) for r in sel
            ),
            "unchanged": len(kept),
            "unchanged_kept": sum(kept),
        }
    return out


def main() -> None:
    run_half("multi_changes", __doc__, run)


if __name__ == "__main__":
    main()
