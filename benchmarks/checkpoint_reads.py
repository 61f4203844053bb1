"""What reading a long thread's state costs: `graph.get_state` and a whole turn, after N turns.

Checkpointing messages as deltas makes each read replay the writes since the last full copy;
this measures that cost on the embedded defaults with the offline model. Run it with this
checkout's `src` first on the path, and with an older checkout's for the figures before.
Run: `python -m benchmarks.checkpoint_reads [--turns 150] [--label after]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import mneme
from benchmarks.checkpoint_growth import db_bytes, user_turns
from benchmarks.common import write_result
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    ctx = Context(user_id="user_123", model="offline")
    with tempfile.TemporaryDirectory(prefix="mneme-reads-") as tmp:
        home = open_home(tmp)
        graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
        cfg = {"configurable": {"thread_id": "long"}}
        turns = user_turns(args.turns + 20)
        times = []
        for i, text in enumerate(turns, start=1):
            t0 = time.perf_counter()
            graph.invoke({"messages": [{"role": "user", "content": text}]}, cfg, context=ctx)
            if i > args.turns:
                times.append((time.perf_counter() - t0) * 1000)
        reads = []
        for _ in range(args.reads):
            t0 = time.perf_counter()
            graph.get_state(cfg)
            reads.append((time.perf_counter() - t0) * 1000)
        result = {
            "label": args.label,
            "mneme": mneme.__file__,
            "turns": len(turns),
            "get_state_ms_p50": round(statistics.median(reads), 1),
            "turn_ms_p50_last_20": round(statistics.median(times), 1),
            **db_bytes(home.checkpoint_path),
        }
        home.close()
    print(result)
    write_result(f"checkpoint_reads_{args.label}", result)


if __name__ == "__main__":
    main()
