"""Issue 11: a message that says something told before was wrong is read as a correction (benchmarks/data/corrections.json).

Written by a helper who read no code: corrections of what the user told the assistant about
themselves ("你记岔了，豆豆是比熊不是泰迪", "it's Jon without the h") and look-alikes that are none
(a change over time, a correction of the assistant's answer, someone else's mistake, an edit
inside a task), split into halves by a hash of the text before use. Each message is read by the
offline reader (`read_message`), as the write path reads it:

- `read_as_correction` of the corrections: the share with a statement read as one (which
  replaces the closest memory of its area; the end-to-end effect is measured by
  `benchmarks.change_pairs`);
- `read_as_correction` of the others: the share wrongly read as one (lower is better);
- `kept`: the share of corrections with any statement kept at all.

    python -m benchmarks.corrections --split report [--verbose]
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from benchmarks.common import ROOT, run_half

DATA = ROOT / "benchmarks" / "data" / "corrections.json"


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Read each message of a half and count what was read as a correction."""
    from mneme.memory.usermodel.statements import read_message

    items = [i for i in json.loads(DATA.read_text(encoding="utf-8"))["items"] if split in ("all", i["half"])]
    counts: Counter[str] = Counter()
    for item in items:
        found = [c for c in read_message(item["text"]) if c.action != "forget" and not c.tentative]
        read = any(c.action == "correct" for c in found)
        key = f"{item['label']}_{item['lang']}"
        counts[f"{key}_n"] += 1
        counts[f"{key}_read"] += read
        counts[f"{key}_kept"] += bool(found)
        if verbose and read != (item["label"] == "correction"):
            print(f"miss {item['label']} {item['text']!r}: {[(c.action, c.aspect, c.text) for c in found]}")
    out: dict[str, Any] = {"split": split}
    for label in ("correction", "other"):
        for lang in ("zh", "en"):
            key = f"{label}_{lang}"
            n = counts[f"{key}_n"]
            out[key] = {
                "messages": n,
                "read_as_correction": round(counts[f"{key}_read"] / n, 3) if n else None,
                "kept": round(counts[f"{key}_kept"] / n, 3) if n else None,
            }
    return out


if __name__ == "__main__":
    run_half("corrections", __doc__, run)
