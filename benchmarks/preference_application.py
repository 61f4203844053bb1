"""Issue 11: a preference said once reaches a later request that never repeats its words, through the graph.

Two sets, each split into a tuning half and a report half before any tuning:

- PrefEval's explicit preferences (`../shared/data/prefeval/`, CC BY-NC 4.0, amazon-science/
  PrefEval): 20 topics; the 10 whose file names sort first are the tuning half, the other 10
  (`pet_ownership` ... `travel_transportation`) the report half. Each simulated user states one
  preference per topic (its own turn, among 8 unrelated requests) and later asks each topic's
  question, each in a new session.
- The Chinese set (`benchmarks/data/zh_prefs.json`, written by an independent author): 27
  domains of 8 pairs; each user states one preference per domain, with the set's own `split`.

Per question: whether the memory written from the needed preference is in the memory block the
model saw, the block's tokens, and how many of the user's other preferences it holds (noise).
mneme runs its whole graph on the real embedded defaults (offline model); the peers of
`make bench` get the same statements verbatim and are scored on their top 5 and on what their
own defaults would inject.

Run: `python -m benchmarks.preference_application [--peers] [--users N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, block_ids, write_result

PREFEVAL = ROOT.parent / "shared" / "data" / "prefeval"
ZH_SET = ROOT / "benchmarks" / "data" / "zh_prefs.json"
FILLER_EN = ROOT / "benchmarks" / "data" / "filler_en.json"
FILLER_PER_USER = 8
TOP_K = 5


@dataclass
class Pref:
    """One preference and the later question that needs it."""

    id: str
    topic: str
    split: str
    preference: str
    question: str


@dataclass
class User:
    """A simulated user: the preferences they state and the unrelated requests between them."""

    id: str
    lang: str
    prefs: list[Pref]
    filler: list[str] = field(default_factory=list)

    def statements(self, seed: int) -> list[tuple[str | None, str]]:
        """`(pref id or None, text)` in the order they are said: preferences among filler."""
        turns: list[tuple[str | None, str]] = [(p.id, p.preference) for p in self.prefs]
        turns += [(None, f) for f in self.filler]
        random.Random(seed).shuffle(turns)
        return turns


def prefeval_users(n: int, seed: int = 0) -> list[User]:
    """Users of PrefEval: each states one preference of every topic (drawn without repeats)."""
    files = sorted(PREFEVAL.glob("*.json"))
    if not files:
        raise SystemExit(f"PrefEval not found at {PREFEVAL}")
    topics = {f.stem: json.loads(f.read_text()) for f in files}
    tune = set(sorted(topics)[:10])
    filler = json.loads(FILLER_EN.read_text())["items"]
    rng = random.Random(seed)
    picks = {t: rng.sample(range(len(items)), n) for t, items in topics.items()}
    users = []
    for u in range(n):
        prefs = [
            Pref(
                id=f"{t}#{picks[t][u]}",
                topic=t,
                split="tune" if t in tune else "report",
                preference=topics[t][picks[t][u]]["preference"],
                question=topics[t][picks[t][u]]["question"],
            )
            for t in sorted(topics)
        ]
        users.append(User(f"pe{u}", "en", prefs, rng.sample(filler, FILLER_PER_USER)))
    return users


def zh_users(n: int, seed: int = 0) -> list[User]:
    """Users of the Chinese set: user u states the u-th pair of every domain."""
    data = json.loads(ZH_SET.read_text())
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for item in data["items"]:
        by_domain.setdefault(item["domain"], []).append(item)
    rng = random.Random(seed)
    per_domain = min(len(v) for v in by_domain.values())
    users = []
    for u in range(min(n, per_domain)):
        prefs = [
            Pref(
                id=items[u]["id"],
                topic=domain,
                split=items[u]["split"],
                preference=items[u]["preference"],
                question=items[u]["question"],
            )
            for domain, items in sorted(by_domain.items())
        ]
        users.append(User(f"zh{u}", "zh", prefs, rng.sample(data["unrelated"], FILLER_PER_USER)))
    return users


def run_mneme(users: list[User], seed: int = 0) -> Iterator[dict[str, Any]]:
    """Each user's statements through the graph, then each question in a new session."""
    from mneme.graph import build_graph
    from mneme.home import open_home
    from mneme.memory.repo import Repo
    from mneme.memory.usage import flush_uses
    from mneme.memory.usermodel.recall import touch_of
    from mneme.tokens import counter_for

    counter = counter_for("offline")
    with tempfile.TemporaryDirectory(prefix="mneme-prefs-") as tmp:
        home = open_home(tmp)
        try:
            graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
            for user in users:
                written: dict[str, set[str]] = {}
                for i, (pid, text) in enumerate(user.statements(seed)):
                    out = graph.invoke(
                        {"messages": [{"role": "user", "content": text, "id": f"{user.id}-m{i}"}]},
                        {"configurable": {"thread_id": f"{user.id}-statements"}},
                        context={"user_id": user.id},
                    )
                    if pid is not None:
                        written[pid] = {
                            str(w["id"])
                            for w in out.get("writes", [])
                            if w.get("id") and w.get("operation") in ("ADD", "SUPERSEDE", "NOOP", "UPDATE")
                        }
                repo = Repo(home.store)
                current = {
                    pid: any(repo.get(user.id, mid) is not None for mid in ids)
                    for pid, ids in written.items()
                }
                for q, pref in enumerate(user.prefs):
                    t0 = time.perf_counter()
                    out = graph.invoke(
                        {"messages": [{"role": "user", "content": pref.question}]},
                        {"configurable": {"thread_id": f"{user.id}-q{q}"}},
                        context={"user_id": user.id},
                    )
                    ms = (time.perf_counter() - t0) * 1000
                    shown = block_ids(out)
                    block = str(out["prompt"].get("memory_block", ""))
                    others = [p for p in user.prefs if p.id != pref.id and written.get(p.id, set()) & shown]
                    touch = touch_of(pref.question)
                    yield {
                        "system": "mneme",
                        "user": user.id,
                        "pref": pref.id,
                        "topic": pref.topic,
                        "split": pref.split,
                        "stored": bool(written.get(pref.id)),
                        # a user's preferences are independent: one no longer current was
                        # wrongly replaced by a later statement
                        "replaced": bool(written.get(pref.id)) and not current.get(pref.id, False),
                        "injected": bool(written.get(pref.id, set()) & shown),
                        "noise": len(others),
                        "noise_prefs": [p.id for p in others],
                        "tokens": counter.count(block) if block else 0,
                        "recap_tokens": counter.count(str(out["prompt"].get("recap_block", "")) or "")
                        if out["prompt"].get("recap_block")
                        else 0,
                        "ms": round(ms, 1),
                        "domains": [[d, round(p, 3)] for d, p in touch.top_domains(2)],
                    }
            flush_uses()
        finally:
            home.close()


def run_peer(name: str, users: list[User]) -> Iterator[dict[str, Any]]:
    """A peer given the same statements verbatim, scored on its top 5 and its default injection."""
    from benchmarks.systems import cached_local
    from benchmarks.worker import make_system
    from mneme.tokens import counter_for

    counter = counter_for("offline")
    emb = cached_local()
    system = make_system(name, emb)
    defaults = {"mem0": (20, 0.1), "langgraph-inmemory": (10, None), "bm25": (TOP_K, None)}
    try:
        for user in users:
            items = [(p.id, p.preference) for p in user.prefs]
            items += [(f"f{i}", f) for i, f in enumerate(user.filler)]
            system.add_texts(user.id, items)
            texts = dict(items)
            for pref in user.prefs:
                k, threshold = defaults.get(name, (TOP_K, None))
                top = system.search_user(user.id, pref.question, TOP_K)
                default = _default_search(system, user.id, pref.question, k, threshold)
                for mode, keys in (("top5", top), ("defaults", default)):
                    block = "\n".join(f"- {texts[k]}" for k in keys if k in texts)
                    yield {
                        "system": name,
                        "mode": mode,
                        "user": user.id,
                        "pref": pref.id,
                        "topic": pref.topic,
                        "split": pref.split,
                        "injected": pref.id in keys,
                        "noise": sum(1 for k in keys if k != pref.id and not k.startswith("f")),
                        "tokens": counter.count(block) if block else 0,
                    }
    finally:
        system.close()


def _default_search(system: Any, user: str, query: str, k: int, threshold: float | None) -> list[str]:
    """What the peer's own defaults return (mem0: top_k 20, threshold 0.1)."""
    if threshold is not None and hasattr(system, "memory"):
        found = system.memory.search(query, top_k=k, threshold=threshold, filters={"user_id": user})
        return [str(r.get("metadata", {}).get("key", "")) for r in found["results"]]
    keys: list[str] = system.search_user(user, query, k)
    return keys


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Injected rate, mean tokens and mean noise per split."""
    out: dict[str, Any] = {}
    for split in ("tune", "report"):
        sel = [r for r in rows if r["split"] == split]
        if not sel:
            continue
        out[split] = {
            "questions": len(sel),
            "injected_rate": round(sum(r["injected"] for r in sel) / len(sel), 3),
            "mean_tokens": round(statistics.fmean(r["tokens"] for r in sel), 1),
            "mean_noise": round(statistics.fmean(r["noise"] for r in sel), 2),
            **(
                {
                    "stored_rate": round(sum(r["stored"] for r in sel) / len(sel), 3),
                    "wrongly_replaced": sum(r.get("replaced", False) for r in sel),
                }
                if "stored" in sel[0]
                else {}
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=10, help="PrefEval users (the Chinese set: up to 8)")
    parser.add_argument("--peers", action="store_true", help="also run mem0, LangGraph's store and BM25")
    parser.add_argument("--sets", default="prefeval,zh")
    parser.add_argument("--raw", type=Path, default=None, help="write every question's row here")
    args = parser.parse_args()
    sets = {"prefeval": prefeval_users(args.users), "zh": zh_users(args.users)}
    result: dict[str, Any] = {"users": args.users, "sets": {}}
    raw: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for name in args.sets.split(","):
        users = sets[name]
        rows = list(run_mneme(users))
        raw += [{**r, "set": name} for r in rows]
        entry: dict[str, Any] = {"mneme": summarize(rows)}
        entry["mneme"]["turn_ms_p50"] = round(statistics.median(r["ms"] for r in rows), 1)
        if args.peers:
            for peer in ("mem0", "langgraph-inmemory", "bm25"):
                prow = list(run_peer(peer, users))
                raw += [{**r, "set": name} for r in prow]
                for mode in ("top5", "defaults"):
                    entry[f"{peer}/{mode}"] = summarize([r for r in prow if r["mode"] == mode])
        result["sets"][name] = entry
        print(name, json.dumps(entry, indent=1))
    result["seconds"] = round(time.perf_counter() - t0, 1)
    path = write_result("preference_application", result)
    if args.raw:
        args.raw.write_text(json.dumps(raw, ensure_ascii=False, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
