"""Checkpoint database size of one long thread: linear with running summaries, quadratic without.

One thread on the real embedded defaults (SQLite checkpoints, Chroma, local embeddings) with
the offline model: LoCoMo dialogue lines as user turns, an order id at turn 3 and an order
status question every 25 turns (a tool call). Measured after 100, 200 and 500 turns: the
SQLite file (after a WAL checkpoint), the bytes of checkpoint and pending-write blobs, the
tokens of each model request, and what sending the full history would have needed. The same
thread with summarization switched off (a window so large that nothing is ever folded) shows
the growth mneme avoids, and the same thread with `durability="exit"` (one checkpoint per turn
instead of one per step) shows what a caller can trade for size. Run: `python -m benchmarks.checkpoint_growth [--quick]`.
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import SystemMessage

from benchmarks.common import locomo, locomo_turns, write_result
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.nodes.build_context import system_prompt
from mneme.tokens import counter_for

ORDER = "20240508001"
NO_FOLDING = {"context_window": 10_000_000, "budget_history": 9_000_000}
"""Settings under which no turn is ever summarized: the state keeps the whole thread."""


def user_turns(n: int) -> list[str]:
    lines = [t["text"] for s in locomo() for t in locomo_turns(s)]
    out = []
    for i in range(1, n + 1):
        if i == 3:
            out.append(f"My order number is {ORDER}, a bluetooth headset.")
        elif i % 25 == 0:
            out.append("Has my order shipped yet?")
        else:
            out.append(lines[i % len(lines)])
    return out


def db_bytes(path: Path) -> dict[str, int]:
    """The checkpoint file after folding its WAL in, and the bytes of its blobs."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        blobs = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
        count = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    finally:
        conn.close()
    return {
        "file_bytes": path.stat().st_size,
        "checkpoint_blob_bytes": blobs,
        "write_blob_bytes": writes,
        "checkpoints": count,
    }


def run_thread(marks: list[int], settings: dict[str, Any], durability: str = "async") -> list[dict[str, Any]]:
    """Play one thread up to max(marks) turns; measure at each mark.

    Args:
        marks: Turn counts after which to measure.
        settings: `Context` fields.
        durability: LangGraph's checkpointing mode: `async` (default: a checkpoint after every
            step, about 7 a turn) or `exit` (one at the end of each run).
    """
    ctx = Context(user_id="user_123", model="offline", **settings)
    counter = counter_for("offline")
    rows = []
    with tempfile.TemporaryDirectory(prefix="mneme-growth-") as tmp:
        home = open_home(tmp)
        graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
        cfg = {"configurable": {"thread_id": "long"}}
        full = counter.count_messages([SystemMessage(content=system_prompt(ctx))])
        seen: set[str] = set()
        sent, ratios, times = [], [], []
        t0 = time.perf_counter()
        for i, text in enumerate(user_turns(max(marks)), start=1):
            t1 = time.perf_counter()
            out = graph.invoke(
                {"messages": [{"role": "user", "content": text}]},
                cfg,
                context=ctx,
                durability=durability,  # type: ignore[arg-type]
            )
            times.append(time.perf_counter() - t1)
            for m in out["messages"]:  # what the full history would hold by now
                if m.id not in seen:
                    seen.add(m.id)
                    full += counter.count_message(m)
            request = int(out["token_usage"]["total"])
            sent.append(request)
            ratios.append(full / request)
            if i in marks:
                state = graph.get_state(cfg).values
                sizes = db_bytes(home.checkpoint_path)
                rows.append(
                    {
                        "turns": i,
                        **sizes,
                        "bytes_per_turn_so_far": round(sizes["file_bytes"] / i),
                        "messages_in_state": len(state["messages"]),
                        "summary_mentions_order": ORDER in state.get("summary", ""),
                        "order_id_in_task_state": (state.get("task") or {}).get("slots", {}).get("order_id")
                        == ORDER,
                        "tokens_sent_last_call": request,
                        "tokens_sent_mean_last_50": round(statistics.fmean(sent[-50:])),
                        "full_history_tokens": full,
                        "ratio_full_over_sent": round(full / request, 1),
                        "seconds_per_turn_mean_last_50": round(statistics.fmean(times[-50:]), 3),
                        "elapsed_s": round(time.perf_counter() - t0, 1),
                    }
                )
                print(rows[-1], flush=True)
        home.close()
    return rows


def growth(rows: list[dict[str, Any]], key: str = "file_bytes") -> dict[str, dict[str, float]]:
    """How much the database grew between marks, against linear and quadratic growth."""
    out = {}
    for a, b in itertools.pairwise(rows):
        out[f"{a['turns']}->{b['turns']}"] = {
            "bytes_per_turn": round((b[key] - a[key]) / (b["turns"] - a["turns"])),
            "blob_bytes_per_turn": round(
                (
                    b["checkpoint_blob_bytes"]
                    + b["write_blob_bytes"]
                    - a["checkpoint_blob_bytes"]
                    - a["write_blob_bytes"]
                )
                / (b["turns"] - a["turns"])
            ),
            "bytes_ratio": round(b[key] / a[key], 2),
            "linear_would_be": round(b["turns"] / a["turns"], 2),
            "quadratic_would_be": round((b["turns"] / a["turns"]) ** 2, 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100 and 200 turns (and 100 unfolded)")
    parser.add_argument(
        "--defaults-only", action="store_true", help="only the default thread (no exit-mode or unfolded runs)"
    )
    args = parser.parse_args()
    marks = [100, 200] if args.quick else [100, 200, 500]
    unfolded_marks = [50, 100] if args.quick else [100, 200]
    print("with running summaries (defaults):")
    folded = run_thread(marks, {})
    result: dict[str, Any] = {
        "quick": args.quick,
        "with_summaries": {"rows": folded, "growth": growth(folded)},
    }
    series = [("with summaries", folded)]
    if not args.defaults_only:
        print("with running summaries and one checkpoint per turn (durability='exit'):")
        exit_rows = run_thread(unfolded_marks if args.quick else marks[:2], {}, durability="exit")
        print("without summarization (the whole thread stays in the state):")
        unfolded = run_thread(unfolded_marks, NO_FOLDING)
        result["with_summaries_durability_exit"] = {"rows": exit_rows, "growth": growth(exit_rows)}
        result["without_summaries"] = {"rows": unfolded, "growth": growth(unfolded), "settings": NO_FOLDING}
        series += [("durability=exit", exit_rows), ("without", unfolded)]
    path = write_result("checkpoint_growth_defaults" if args.defaults_only else "checkpoint_growth", result)
    for name, rows in series:
        sizes = ", ".join(f"{r['turns']} turns {r['file_bytes'] / 1e6:.1f} MB" for r in rows)
        print(f"{name}: {sizes}")
    print(f"growth with summaries: {result['with_summaries']['growth']} -> {path}")


if __name__ == "__main__":
    main()
