"""Issue 11: "I don't drink" reaches a later request whose answer involves alcohol, in words it never shares.

The data (`benchmarks/data/drink_requests.json`) was written by a helper who read none of mneme's
code: 24 ways of saying one does not drink, 160 requests whose good answer involves alcoholic
drinks (a wine to pair with a steak, beer for a barbecue, 敬酒 at a banquet, a brewery tour), and
120 look-alikes whose answer does not (a recipe, takeout, tea); then a second helper 400 more
(`round` 2: 260 look-alikes such as milk tea, cold brew and kids' parties, and 140 sideways
alcohol requests). Halves by a hash of each text, fixed before tuning; the tuning half's requests
train the request-domain head.

For each half, up to three people per language each say one of its statements, then "allergic to
peanuts" and "vegetarian", each in its own session, through the graph on the real embedded
defaults; each asks every request of the half in their language, each in a new session. Counted:
alcohol requests whose memory block holds the memory written from the statement (found), other
requests whose block holds it (noise).

Run: `python -m benchmarks.drink_requests [--split report|tune|all] [--verbose]`.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common import ROOT, by_language, new_sessions, print_misses, rate, run_half

DATA = ROOT / "benchmarks" / "data" / "drink_requests.json"
OTHERS = {"zh": ["我对花生过敏", "我是素食者"], "en": ["I'm allergic to peanuts", "I'm vegetarian"]}
PEOPLE = 3
"""People per language (each with one statement of the half)."""


def run(split: str = "report", verbose: bool = False) -> dict[str, Any]:
    data = json.loads(DATA.read_text())
    chosen = ("tune", "report") if split == "all" else (split,)
    requests = [r for r in data["requests"] if r["split"] in chosen]
    rows: list[dict[str, Any]] = []
    with new_sessions("drinks") as say:
        for lang in ("zh", "en"):
            said = [s for s in data["statements"] if s["split"] in chosen and s["lang"] == lang][:PEOPLE]
            for n, statement in enumerate(said):
                user = f"{lang}-{n}"
                written = {w["id"] for w in say(statement["text"], user)["writes"] if w.get("id")}
                for text in OTHERS[lang]:
                    say(text, user)
                for item in (r for r in requests if r["lang"] == lang):
                    shown = {m.get("id") for m in say(item["text"], user)["memories"]}
                    rows.append(
                        {
                            "statement": statement["text"],
                            "stored": bool(written),
                            "text": item["text"],
                            "lang": lang,
                            "alcohol": item["label"] == "alcohol",
                            "shown": bool(written & shown),
                            "round": item.get("round", 1),
                        }
                    )
    if verbose:
        print_misses(rows, lambda r: r["alcohol"] != r["shown"])
    return score(rows)


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per language and overall, and per round of the data: the memory shown for alcohol requests and others."""
    out: dict[str, Any] = {}
    for lang, sel in by_language(rows):
        out[lang] = _score(sel)
        for written in sorted({r["round"] for r in sel}):
            out[lang][f"round_{written}"] = _score([r for r in sel if r["round"] == written])
    return out


def _score(sel: list[dict[str, Any]]) -> dict[str, Any]:
    found = [r for r in sel if r["alcohol"]]
    other = [r for r in sel if not r["alcohol"]]
    return {
        "people": len({r["statement"] for r in sel}),
        "stored": sum(r["stored"] for r in {r["statement"]: r for r in sel}.values()),
        "alcohol_requests": len(found),
        "shown_when_alcohol": rate(sum(r["shown"] for r in found), len(found)),
        "other_requests": len(other),
        "shown_otherwise": rate(sum(r["shown"] for r in other), len(other)),
    }


def main() -> None:
    run_half("drink_requests", __doc__, run)


if __name__ == "__main__":
    main()
