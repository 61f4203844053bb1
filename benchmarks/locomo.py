"""The LoCoMo retrieval protocol shared by every benchmark that reports recall.

Each dialog turn of a conversation is added verbatim with its `dia_id`; each non-adversarial
question (categories 1-4) searches its own conversation; recall@k is the share of the
question's evidence turns found among the top k, averaged over questions.
Data: ../shared/data/locomo10.json (snap-research/locomo, CC BY-NC 4.0), read in place.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchmarks.common import locomo, locomo_turns, summary

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 25)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Question:
    """One LoCoMo question with its evidence turns."""

    conv_id: str
    text: str
    category: int
    evidence: list[str]
    answer: Any = None


@dataclass
class Conversation:
    """One LoCoMo conversation: its turns and its non-adversarial questions."""

    conv_id: str
    speakers: tuple[str, str]
    turns: list[dict[str, Any]]
    questions: list[Question] = field(default_factory=list)


def evidence_ids(raw: list[str]) -> list[str]:
    """Normalize the dataset's evidence field (`'D8:6; D9:17'`, `'D:11:26'`) to dia_ids."""
    out: list[str] = []
    for item in raw:
        for a, b in _EVIDENCE.findall(item):
            dia = f"D{a}:{b}"
            if dia not in out:
                out.append(dia)
    return out


def conversations(limit: int | None = None) -> list[Conversation]:
    """The LoCoMo conversations with their turns and non-adversarial questions."""
    out = []
    for sample in locomo()[:limit]:
        conv = sample["conversation"]
        c = Conversation(
            conv_id=sample["sample_id"],
            speakers=(conv["speaker_a"], conv["speaker_b"]),
            turns=locomo_turns(sample),
        )
        known = {t["dia_id"] for t in c.turns}
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            ev = [e for e in evidence_ids(qa["evidence"]) if e in known]
            if ev:
                c.questions.append(Question(c.conv_id, qa["question"], qa["category"], ev, qa.get("answer")))
        out.append(c)
    return out


class RetrievalSystem(Protocol):
    """What a system must offer to be measured on LoCoMo."""

    name: str

    def add(self, conv: Conversation) -> None:
        """Store every turn of a conversation (verbatim, with its dia_id)."""
        ...

    def search(self, conv: Conversation, question: str, k: int) -> list[str]:
        """The dia_ids of the top-k turns for a question, best first."""
        ...


def evaluate(system: RetrievalSystem, convs: list[Conversation], ks: tuple[int, ...] = KS) -> dict[str, Any]:
    """Add every conversation, ask every question, and report recall@k and timings."""
    t0 = time.perf_counter()
    n_turns = 0
    for conv in convs:
        system.add(conv)
        n_turns += len(conv.turns)
    add_s = time.perf_counter() - t0
    kmax = max(ks)
    per_cat: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    overall: dict[int, list[float]] = defaultdict(list)
    latencies: list[float] = []
    for conv in convs:
        for q in conv.questions:
            t1 = time.perf_counter()
            ranked = system.search(conv, q.text, kmax)
            latencies.append((time.perf_counter() - t1) * 1000)
            for k in ks:
                top = set(ranked[:k])
                r = sum(1 for e in q.evidence if e in top) / len(q.evidence)
                overall[k].append(r)
                per_cat[q.category][k].append(r)
    lat = summary(latencies)
    return {
        **{f"recall@{k}": round(sum(v) / len(v), 4) for k, v in overall.items()},
        "per_category": {
            CATEGORIES[c]: {f"recall@{k}": round(sum(v) / len(v), 4) for k, v in by_k.items()}
            | {"questions": len(by_k[ks[0]])}
            for c, by_k in sorted(per_cat.items())
        },
        "questions": len(latencies),
        "turns": n_turns,
        "search_ms_p50": lat["p50"],
        "search_ms_p95": lat["p95"],
        "add_per_s": round(n_turns / add_s, 1) if add_s > 0 else None,
    }
