"""Issue 11: offline extraction and updates on phrasings the rules never saw (benchmarks/data/user_model_facts.json).

The set was written by an independent author before any tuning and is split into a tuning half
and a report half. Each utterance is said by a fresh user through `Memory.add` (the offline
extractor, real embedded defaults):

- a fact is kept when a current memory from that message contains every `must_contain` string;
- precision is the share of utterances that stored something about which the label says there
  was a fact to keep; no-fact inputs left alone is the share of `fact: false` inputs that
  stored nothing.

Each pair is said by a fresh user, `first` then `second`, in two sessions. A `change` pair
passes when the memory of `second` is current and no memory of `first` is; a `compatible`
pair passes when both are current.

Run: `python -m benchmarks.user_model_extraction [--split tune|report|all] [--verbose]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

from benchmarks.common import ROOT, write_result

DATA = ROOT / "benchmarks" / "data" / "user_model_facts.json"


def _current_from(mem: Any, user: str, message_id: str) -> list[Any]:
    return [r for r in mem.get_all(user_id=user) if message_id in r.source.message_ids]


def _has(records: list[Any], terms: list[str]) -> bool:
    return any(all(t.lower() in r.text.lower() for t in terms) for r in records)


def say_pairs(mem: Any, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Say each pair as a fresh user, `first` then `second` in two sessions, and judge it.

    A `change` pair is handled when the memory of `second` is current and no memory of `first`
    is; a `compatible` pair when both are current.
    """
    rows: list[dict[str, Any]] = []
    for n, p in enumerate(pairs):
        user = f"p{n}"
        mem.add([{"role": "user", "content": p["first"], "id": "m1"}], user_id=user, session_id="s1")
        first_stored = bool(_current_from(mem, user, "m1"))
        mem.add([{"role": "user", "content": p["second"], "id": "m2"}], user_id=user, session_id="s2")
        old = _current_from(mem, user, "m1")
        new = _current_from(mem, user, "m2")
        ok = bool(new) and (not old if p["relation"] == "change" else bool(old))
        rows.append(
            {
                "type": "pair",
                "id": p["id"],
                "lang": p["lang"],
                "split": p["split"],
                "relation": p["relation"],
                "first_stored": first_stored,
                "ok": ok,
                "first_current": bool(old),
                "second_current": bool(new),
                "current": [r.text for r in mem.get_all(user_id=user)],
            }
        )
    return rows


def run(split: str = "all", verbose: bool = False) -> dict[str, Any]:
    from mneme.memory.api import Memory

    data = json.loads(DATA.read_text())
    pick = (lambda x: True) if split == "all" else (lambda x: x["split"] == split)
    utterances = [u for u in data["utterances"] if pick(u)]
    pairs = [p for p in data["pairs"] if pick(p)]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mneme-umx-") as tmp, Memory.open(tmp) as mem:
        for n, u in enumerate(utterances):
            user = f"u{n}"
            mem.add([{"role": "user", "content": u["text"], "id": "m1"}], user_id=user, session_id="s1")
            stored = _current_from(mem, user, "m1")
            kept = bool(stored) and _has(stored, u["must_contain"]) if u["fact"] else False
            rows.append(
                {
                    "type": "utterance",
                    "id": u["id"],
                    "lang": u["lang"],
                    "split": u["split"],
                    "fact": u["fact"],
                    "stored": bool(stored),
                    "kept": kept,
                    "texts": [r.text for r in stored],
                    "aspects": [r.aspect for r in stored],
                }
            )
        rows += say_pairs(mem, pairs)
    result = {"split": split, "seconds": round(time.perf_counter() - t0, 1), **score(rows)}
    if verbose:
        for r in rows:
            bad = (
                r["type"] == "utterance" and (r["fact"] != r["kept"] or (not r["fact"] and r["stored"]))
            ) or (r["type"] == "pair" and not r["ok"])
            if bad:
                print(json.dumps(r, ensure_ascii=False))
    return result


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall, precision, no-fact inputs left alone, and pairs handled, per language and overall."""
    out: dict[str, Any] = {}
    for lang in ("zh", "en", "all"):
        sel = [r for r in rows if lang == "all" or r["lang"] == lang]
        utt = [r for r in sel if r["type"] == "utterance"]
        facts = [r for r in utt if r["fact"]]
        stored = [r for r in utt if r["stored"]]
        nofact = [r for r in utt if not r["fact"]]
        change = [r for r in sel if r["type"] == "pair" and r["relation"] == "change"]
        compat = [r for r in sel if r["type"] == "pair" and r["relation"] == "compatible"]

        def rate(xs: list[Any], ok: Any) -> float | None:
            return round(sum(1 for x in xs if ok(x)) / len(xs), 3) if xs else None

        out[lang] = {
            "utterances": len(utt),
            "recall": rate(facts, lambda r: r["kept"]),
            "precision": rate(stored, lambda r: r["fact"]),
            "no_fact_left_alone": rate(nofact, lambda r: not r["stored"]),
            "change_pairs": len(change),
            "change_ok": rate(change, lambda r: r["ok"]),
            "change_first_stored": rate(change, lambda r: r["first_stored"]),
            "compatible_pairs": len(compat),
            "compatible_ok": rate(compat, lambda r: r["ok"]),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", default="all", choices=("tune", "report", "all"))
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    parser.add_argument(
        "--save", action="store_true", help="write benchmarks/results/user_model_extraction.json"
    )
    args = parser.parse_args()
    if args.split == "all" and args.save:
        result = {"tune": run("tune"), "report": run("report")}
    else:
        result = run(args.split, args.verbose)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.save:
        print(write_result("user_model_extraction", result))


if __name__ == "__main__":
    main()
