"""Checkpoint bytes per turn on Postgres (`PostgresSaver`), the thread of `checkpoint_growth`.

The same long thread as `benchmarks/checkpoint_growth.py` (offline model, LoCoMo lines as user
turns, default `Context` and durability), on a home whose threads and memories live in a
Postgres with pgvector (the `pgserver` wheel). Size = `pg_total_relation_size` of LangGraph's
three checkpoint tables (rows, TOAST and indexes), after a `VACUUM` so dead rows do not count.

Run: `python -m benchmarks.checkpoint_growth_postgres [--marks 50,100,200]`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.checkpoint_growth import user_turns
from benchmarks.common import write_result
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home

TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def table_bytes(url: str) -> dict[str, int]:
    """Bytes of each checkpoint table (with its TOAST and indexes), after a VACUUM."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        out = {}
        for table in TABLES:
            conn.execute(f"VACUUM {table}")
            row = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()
            out[table] = int(row[0]) if row else 0
    return out


def run(url: str, marks: list[int]) -> list[dict[str, Any]]:
    """Play one thread to max(marks) turns on Postgres; measure at each mark."""
    ctx = Context(user_id="user_123", model="offline")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mneme-pg-growth-") as tmp:
        home = open_home(tmp, postgres=url)
        try:
            graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
            cfg = {"configurable": {"thread_id": "long"}}
            start = table_bytes(url)  # the empty tables' own pages
            t0 = time.perf_counter()
            last: tuple[int, int] = (0, sum(start.values()))
            for i, text in enumerate(user_turns(max(marks)), start=1):
                graph.invoke({"messages": [{"role": "user", "content": text}]}, cfg, context=ctx)
                if i in marks:
                    sizes = table_bytes(url)
                    total = sum(sizes.values())
                    rows.append(
                        {
                            "turns": i,
                            **sizes,
                            "total_bytes": total,
                            "bytes_per_turn_since_last_mark": round((total - last[1]) / (i - last[0])),
                            "elapsed_s": round(time.perf_counter() - t0, 1),
                        }
                    )
                    last = (i, total)
                    print(rows[-1], flush=True)
        finally:
            home.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--marks", default="50,100,200", help="turn counts to measure at")
    args = parser.parse_args()
    marks = sorted({int(m) for m in args.marks.split(",")})
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix="mneme-bench-pg-"))
    server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    try:
        rows = run(server.get_uri(), marks)
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    path = write_result("checkpoint_growth_postgres", {"marks": marks, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
