"""Issue 11: a user asks, in their own words, to forget something (benchmarks/data/forget_requests.json).

Written by two helpers who read none of mneme's code, from the promise alone: a user told the
assistant three facts on different topics (and, told before them, the six facts of two other
scenarios: a user has more memories than the ones in question), then says one message. A forget request ("邮箱那个就当
我没说过哈", "you don't need to know where I work") must delete exactly the facts it points at;
a near miss ("我又忘了带钥匙", "before I forget, book the dentist", "I moved to Bristol") must
delete nothing. A second set of near misses (`forget_near_misses.json`, written by another helper
on 2026-12-07: mishaps, deleting one's own photos, editing a text, "I just want to forget today")
is said after six facts each; it counts the texts read as a request and those that deleted anything. Each scenario is a fresh user on one `Memory`, each fact its own `Memory.add`.

The set was split before any tuning by a hash of the message (`half`: tune or report). A
scenario counts when every fact it names was stored at all (what was never stored cannot be
forgotten); a fact counts as deleted when a DELETE change removed a memory stored from it
(a SUPERSEDE by an update is no deletion). A scenario passes when exactly the facts it names
were deleted, and none of the other scenarios' facts.

Run: `python -m benchmarks.forget_requests [--split tune|report|all] [--verbose]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from typing import Any

from benchmarks.common import ROOT, write_result

DATA = ROOT / "benchmarks" / "data" / "forget_requests.json"
NEAR_MISSES = ROOT / "benchmarks" / "data" / "forget_near_misses.json"


def near_misses() -> list[dict[str, Any]]:
    """The second set of near misses (`forget_near_misses.json`).

    Mishaps, deleting one's own files, editing a text, wanting to forget a bad day.
    """
    items: list[dict[str, Any]] = json.loads(NEAR_MISSES.read_text(encoding="utf-8"))["items"]
    return items


def run(split: str, verbose: bool = False, only: str = "") -> dict[str, Any]:
    """Score the scenarios of one half (or all) through `Memory.add`."""
    from mneme import Memory
    from mneme.memory.usermodel.statements import read_message

    data = [s for s in json.loads(DATA.read_text())["scenarios"] if split in ("all", s["half"])]
    if only:
        data = [s for s in data if only in s["message"]] + [s for s in data if only not in s["message"]][:4]
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="mneme-forget-") as tmp, Memory.open(tmp) as memory:
        for n, sc in enumerate(data):
            user = f"f{n}"
            ids: list[set[str]] = []
            others = [o for o in data if o["lang"] == sc["lang"] and o is not sc]
            told = [
                f for o in (others[n % len(others)], others[(n * 7 + 3) % len(others)]) for f in o["facts"]
            ]
            distractors: set[str] = set()
            for k, fact in enumerate(told):
                changes = memory.add(
                    [{"role": "user", "content": fact, "id": f"d{k}"}], user_id=user, session_id="s0"
                )
                distractors |= {c.id for c in changes if c.id and c.operation in ("ADD", "SUPERSEDE")}
            for i, fact in enumerate(sc["facts"]):
                changes = memory.add(
                    [{"role": "user", "content": fact, "id": f"f{i}"}], user_id=user, session_id="s1"
                )
                ids.append({c.id for c in changes if c.id and c.operation in ("ADD", "SUPERSEDE")})
            # a keyed field told again (a second employer) is superseded in place: its id is the
            # scenario's fact now, not a distractor
            distractors -= set().union(*ids)
            kind = "request" if sc["forget"] else "near_miss"
            key = f"{kind}_{sc['lang']}"
            if any(not ids[i] for i in sc["forget"]):
                counts[f"{key}_unstored"] += 1
                continue
            changes = memory.add(
                [{"role": "user", "content": sc["message"], "id": "m"}], user_id=user, session_id="s2"
            )
            gone = {c.id for c in changes if c.operation == "DELETE"}
            deleted = {i for i, own in enumerate(ids) if own & gone}
            counts[f"{key}_other_memory_deleted"] += bool(distractors & gone)
            stored = any(c.operation == "ADD" for c in changes)
            counts[f"{key}_n"] += 1
            passed = deleted == set(sc["forget"]) and not distractors & gone
            counts[f"{key}_ok"] += passed
            if kind == "request":
                counts[f"{key}_stored_as_memory"] += stored and bool(sc["forget"])
            else:
                counts[f"{key}_deleted_something"] += bool(gone)
            if verbose and not passed:
                print(f"miss {kind} {sc['message']!r}: deleted {sorted(deleted)}, wanted {sc['forget']}")
                print("    " + "; ".join(f"{c.operation} {c.text}" for c in changes))
        for n, item in enumerate(i for i in near_misses() if split in ("all", i["half"])):
            # a second, harder set of near misses: each said after six facts of its language
            user = f"n{n}"
            own = [o for o in data if o["lang"] == item["lang"]]
            told = [f for o in (own[n % len(own)], own[(n * 5 + 1) % len(own)]) for f in o["facts"]]
            for k, fact in enumerate(told):
                memory.add([{"role": "user", "content": fact, "id": f"d{k}"}], user_id=user, session_id="s0")
            changes = memory.add(
                [{"role": "user", "content": item["text"], "id": "m"}], user_id=user, session_id="s1"
            )
            key = f"near_miss_new_{item['lang']}"
            counts[f"{key}_n"] += 1
            counts[f"{key}_read"] += any(c.action == "forget" for c in read_message(item["text"]))
            gone = [c.text for c in changes if c.operation == "DELETE"]
            counts[f"{key}_deleted_something"] += bool(gone)
            if verbose and gone:
                print(f"miss near_miss_new {item['text']!r}: deleted {gone}")
    out: dict[str, Any] = {"split": split}
    for lang in ("zh", "en"):
        key = f"near_miss_new_{lang}"
        out[key] = {
            "texts": counts[f"{key}_n"],
            "read_as_forget_request": counts[f"{key}_read"],
            "deleted_something": counts[f"{key}_deleted_something"],
        }
    for kind in ("request", "near_miss"):
        for lang in ("zh", "en"):
            key = f"{kind}_{lang}"
            n = counts[f"{key}_n"]
            out[key] = {
                "scenarios": n,
                "exact": round(counts[f"{key}_ok"] / n, 3) if n else None,
                "fact_never_stored": counts[f"{key}_unstored"],
                "other_memory_deleted": counts[f"{key}_other_memory_deleted"],
            }
            if kind == "request":
                out[key]["request_stored_as_memory"] = counts[f"{key}_stored_as_memory"]
            else:
                out[key]["deleted_something"] = counts[f"{key}_deleted_something"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=["tune", "report", "all"], default="report")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--only", default="", help="scenarios whose message contains this")
    parser.add_argument(
        "--save", action="store_true", help="write benchmarks/results/forget_requests_<split>.json"
    )
    args = parser.parse_args()
    out = run(args.split, args.verbose, args.only)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    if args.save:
        print(f"written to {write_result(f'forget_requests_{args.split}', out)}")


if __name__ == "__main__":
    main()
