"""`Memory.add(infer=False)` one message at a time (how a chat app writes), before and after, same run.

Four stores, in turns (round-robin, so that a busy moment of the machine hits them all alike):

- `chroma_only`: every namespace in Chroma on disk (the layout before `SplitStore`: four
  Chroma upserts per write);
- `embedded`: the home's `SplitStore` (the record in Chroma, its rows in SQLite: one upsert);
- `postgres`: `PostgresStore` with pgvector (a `pgserver` wheel on the same disk);
- `embedding_only`: the passage embedding alone, the floor of any of them.

Each message is a LoCoMo turn never written before (so each write embeds it). Reported: writes/s
and per-write p50/p95, with the load average. Run: `python -m benchmarks.write_throughput
[--writes 200]`. Writes `benchmarks/results/write_throughput.json`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import locomo, locomo_turns, summary, write_result
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writes", type=int, default=200, help="writes per store")
    args = parser.parse_args()
    import pgserver

    turns = [t for s in locomo() for t in locomo_turns(s)][: args.writes * 4 + 10]
    emb = LocalEmbeddings()
    index: Any = {"embed": emb, "dims": emb.dims, "fields": ["text"]}
    out: dict[str, Any] = {
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "writes": args.writes,
    }
    with tempfile.TemporaryDirectory(prefix="mneme-wt-") as tmp_s:
        tmp = Path(tmp_s)
        server = pgserver.get_server(tmp / "pg", cleanup_mode="stop")
        try:
            mems = {
                "chroma_only": Memory(ChromaStore.open(str(tmp / "old" / "chroma"), index=index)),
                "embedded": Memory.open(tmp / "home"),
                "postgres": Memory.open(postgres=server.get_uri()),
            }
            for name, mem in mems.items():  # model, calibrator and tables warm
                mem.add(
                    {"role": "user", "content": f"warm up {name}", "id": "w"}, user_id="warm", infer=False
                )
            times: dict[str, list[float]] = {name: [] for name in [*mems, "embedding_only"]}
            k = 0
            for i in range(args.writes):
                for name, mem in mems.items():
                    turn = turns[k]
                    k += 1
                    message = {"role": "user", "content": f"{turn['speaker']}: {turn['text']}", "id": f"m{k}"}
                    t0 = time.perf_counter()
                    mem.add(message, user_id="u", session_id="s", infer=False)
                    times[name].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                emb.embed_documents([f"{turns[k]['speaker']}: {turns[k]['text']} ({i})"])
                times["embedding_only"].append((time.perf_counter() - t0) * 1000)
            for name, values in times.items():
                out[name] = {"per_s": round(1000 * len(values) / sum(values), 1), "ms": summary(values)}
            for mem in mems.values():
                mem.close()
        finally:
            server.cleanup()
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))
    print(f"written to {write_result('write_throughput', out)}")


if __name__ == "__main__":
    main()
