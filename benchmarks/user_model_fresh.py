"""Issue 11: the user model on fresh sentences no one tuned on (benchmarks/data/user_model_fresh.json).

Written by helpers who read none of mneme's code, from the feature's promise alone. Each pair is
said by a fresh user, `first` then `second`, each in its own conversation, through `Memory.add`
or through the graph (`build_graph`, a new thread per statement). A `change` pair passes when
its `new_term` is in a current memory and its `old_term` in none; a `compatible` pair when both
are. A session recap marked outdated (it quotes a changed fact; no turn injects it) is not
counted as current. Each message is said by a fresh user through `Memory.add`: a fact passes
when a memory stored from it contains its `key`; a non-fact when nothing is stored.

Run: `python -m benchmarks.user_model_fresh [--via memory|graph] [--verbose]`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from collections import Counter
from typing import Any

from benchmarks.common import ROOT

DATA = ROOT / "benchmarks" / "data" / "user_model_fresh.json"


def _current(memory: Any, user: str) -> str:
    return " || ".join(r.text for r in memory.get_all(user_id=user) if not r.metadata.get("outdated")).lower()


def pairs(via: str, verbose: bool = False) -> dict[str, Any]:
    """Changes of mind and compatible statements, through `Memory.add` or the graph."""
    from mneme import Memory, build_graph

    data = json.loads(DATA.read_text())["pairs"]
    ok: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    threads = itertools.count()
    with tempfile.TemporaryDirectory(prefix="mneme-fresh-") as tmp:
        graph = build_graph(home=tmp) if via == "graph" else None
        memory = Memory(graph.store) if graph is not None else Memory.open(tmp)
        for n, p in enumerate(data):
            user = f"f{n}"
            for text in (p["first"], p["second"]):
                if graph is not None:
                    graph.invoke(
                        {"messages": [{"role": "user", "content": text}]},
                        {"configurable": {"thread_id": f"{user}-{next(threads)}"}},
                        context={"user_id": user},
                    )
                else:
                    memory.add(text, user_id=user)
            now = _current(memory, user)
            old, new = p["old_term"].lower() in now, p["new_term"].lower() in now
            passed = (new and not old) if p["relation"] == "change" else (old and new)
            key = (p["relation"], p["lang"])
            total[key] += 1
            ok[key] += passed
            if verbose and not passed:
                print(f"miss {p['relation']} {p['first']!r} -> {p['second']!r}: {now!r}")
        if graph is None:
            memory.close()
    out: dict[str, Any] = {f"{r}_{lang}": f"{ok[(r, lang)]}/{total[(r, lang)]}" for r, lang in sorted(total)}
    for relation in ("change", "compatible"):
        n = sum(v for k, v in total.items() if k[0] == relation)
        out[relation] = round(sum(v for k, v in ok.items() if k[0] == relation) / n, 3) if n else None
    return out


def messages(verbose: bool = False) -> dict[str, Any]:
    """Facts kept and non-facts left alone, one message per fresh user."""
    from mneme import Memory

    data = json.loads(DATA.read_text())["messages"]
    rows: list[tuple[bool, bool, bool]] = []
    with tempfile.TemporaryDirectory(prefix="mneme-fresh-") as tmp, Memory.open(tmp) as memory:
        for n, m in enumerate(data):
            user = f"m{n}"
            memory.add([{"role": "user", "content": m["text"], "id": "m1"}], user_id=user, session_id="s1")
            stored = [r for r in memory.get_all(user_id=user) if "m1" in r.source.message_ids]
            kept = m["fact"] and any(m["key"].lower() in r.text.lower() for r in stored)
            rows.append((m["fact"], bool(stored), kept))
            if verbose and (m["fact"] != kept or (not m["fact"] and stored)):
                print(f"miss fact={m['fact']} {m['text']!r}: {[r.text for r in stored]}")
    facts = [r for r in rows if r[0]]
    stored = [r for r in rows if r[1]]
    none = [r for r in rows if not r[0]]
    return {
        "facts_kept": f"{sum(r[2] for r in facts)}/{len(facts)}",
        "precision": f"{sum(r[0] for r in stored)}/{len(stored)}",
        "non_facts_left_alone": f"{sum(not r[1] for r in none)}/{len(none)}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--via", default="memory", choices=("memory", "graph"))
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    result = {"pairs": pairs(args.via, args.verbose)}
    if args.via == "memory":
        result["messages"] = messages(args.verbose)
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
