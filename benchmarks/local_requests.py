"""Issue 11: a request whose answer depends on where the user lives brings their home in, and others do not.

The requests (`benchmarks/data/local_requests.json`) were written by a helper who read none of
mneme's code, labelled `local` when a good answer depends on where the user lives or is (the
weather, somewhere to eat nearby, a plumber) and not when it does not (a recipe, a trip to a
named city). A report set only: the `local` head was trained on another helper's requests.

Each language has one user who said where they live and four other things about themself, each
in its own session, through the graph on the real embedded defaults; then every request is asked
in a new session. Counted: local requests whose memory block holds the home (found), other
requests whose block holds it (noise), and the block's tokens.

Run: `python -m benchmarks.local_requests [--verbose]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from benchmarks.common import ROOT, by_language, new_sessions, print_misses, rate, write_result

DATA = ROOT / "benchmarks" / "data" / "local_requests.json"
PEOPLE = {
    "zh": ("我住在成都高新区", ["我对芒果过敏", "我不喝酒", "坐飞机我喜欢靠窗", "我在一家游戏公司做策划"]),
    "en": (
        "I live in Denver, in the Highlands.",
        ["I'm allergic to shellfish.", "I don't drink.", "I prefer aisle seats.", "I work as a nurse."],
    ),
}
HOME = {"zh": "成都", "en": "Denver"}


def run(verbose: bool = False) -> dict[str, Any]:
    from mneme.tokens import counter_for

    items = json.loads(DATA.read_text())["items"]
    counter = counter_for("offline")
    rows: list[dict[str, Any]] = []
    with new_sessions("local") as say:
        for lang, (where, others) in PEOPLE.items():
            for text in (where, *others):
                say(text, lang)
        for item in items:
            out = say(item["text"], item["lang"])
            block = str(out["prompt"].get("memory_block", ""))
            rows.append(
                {
                    "text": item["text"],
                    "lang": item["lang"],
                    "local": item["local"],
                    "home_shown": HOME[item["lang"]] in block,
                    "tokens": counter.count(block) if block else 0,
                }
            )
    if verbose:
        print_misses(rows, lambda r: r["local"] != r["home_shown"])
    return score(rows)


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per language and overall: home shown for local requests, and for the others."""
    out: dict[str, Any] = {}
    for lang, sel in by_language(rows):
        local = [r for r in sel if r["local"]]
        other = [r for r in sel if not r["local"]]
        out[lang] = {
            "local_requests": len(local),
            "home_shown_when_local": rate(sum(r["home_shown"] for r in local), len(local)),
            "other_requests": len(other),
            "home_shown_otherwise": rate(sum(r["home_shown"] for r in other), len(other)),
            "mean_tokens": round(statistics.mean(r["tokens"] for r in sel), 1) if sel else None,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/local_requests.json")
    args = parser.parse_args()
    result = run(args.verbose)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.save:
        print(write_result("local_requests", result))


if __name__ == "__main__":
    main()
