"""A home with N stored memories of one user, and unseen queries, for the serving benchmarks.

The memories are LoCoMo texts: the 5,882 dialog turns (`"{speaker}: {text}"`, as the recall
benchmark stores them, so their vectors are already in the embedding cache), then the
observations, event summaries, session summaries and question/answer facts, up to N. The
queries are LoCoMo questions whose fact is not in the corpus, each used once, so the server's
query-vector cache never answers for the model. The built home is kept in
`benchmarks/.cache/` and reused while the corpus is the same.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, locomo, locomo_turns
from benchmarks.systems import cached_local

USER = "bench-user"
BATCH = 200


def texts_and_queries(n: int) -> tuple[list[str], list[str]]:
    """Up to `n` memory texts, and the questions left over as queries."""
    data = locomo()
    texts: list[str] = []
    for sample in data:
        texts += [f"{t['speaker']}: {t['text']}" for t in locomo_turns(sample)]
    for sample in data:
        for session in sample.get("observation", {}).values():
            for items in session.values():
                texts += [str(i[0]) for i in items if isinstance(i, list) and i]
    for sample in data:
        for session in sample.get("event_summary", {}).values():
            for items in session.values() if isinstance(session, dict) else []:
                texts += [str(i) for i in items] if isinstance(items, list) else []
    for sample in data:
        texts += [str(s) for s in sample.get("session_summary", {}).values()]
    questions = [(str(q["question"]), str(q.get("answer", ""))) for s in data for q in s["qa"]]
    seen: set[str] = set()
    unique = [t for t in texts if t.strip() and not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]
    facts = [f"{q} {a}" for q, a in questions if a]
    need = max(0, n - len(unique))
    unique += facts[:need]
    queries = [q for q, _ in questions[need:]]
    return unique[:n], queries


def home_path(texts: list[str]) -> Path:
    """Where the home built from these texts is kept."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]
    return ROOT / "benchmarks" / ".cache" / f"serving-home-{len(texts)}-{digest}"


def build_home(n: int) -> tuple[Path, list[str], dict[str, Any]]:
    """A home folder holding about `n` memories of `USER` (built once, then reused).

    The build runs in its own process, which exits before a server opens the home (Chroma's
    embedded store is single-process).

    Returns:
        The home, the queries, and what the build recorded (memories stored, seconds).
    """
    texts, queries = texts_and_queries(n)
    home = home_path(texts)
    done = home / "built.json"
    if not done.exists():
        subprocess.run([sys.executable, "-m", "benchmarks.serving_corpus", str(n)], check=True, cwd=ROOT)
    return home, queries, json.loads(done.read_text())


def _build(n: int) -> None:
    from mneme.memory.api import Memory
    from mneme.store.chroma import ChromaStore

    texts, _ = texts_and_queries(n)
    home = home_path(texts)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    store = ChromaStore.open(
        str(home / "chroma"), index={"embed": cached_local(), "dims": 384, "fields": ["text"]}
    )
    memory = Memory(store)
    t0 = time.perf_counter()
    added = 0
    for i in range(0, len(texts), BATCH):
        batch: list[Any] = [{"role": "user", "content": t} for t in texts[i : i + BATCH]]
        added += sum(c.operation == "ADD" for c in memory.add(batch, user_id=USER, infer=False))
        print(f"  stored {min(i + BATCH, len(texts))}/{len(texts)} memories", flush=True)
    seconds = time.perf_counter() - t0
    stored = len(memory.get_all(user_id=USER))
    if stored != added:
        raise SystemExit(f"added {added} memories but {stored} are stored")
    (home / "built.json").write_text(
        json.dumps({"memories": stored, "texts": len(texts), "build_seconds": round(seconds, 1)})
    )


if __name__ == "__main__":
    _build(int(sys.argv[1]))
