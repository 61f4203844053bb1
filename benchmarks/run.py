"""`make bench`: mneme side by side with the systems users would pick instead, in one run.

Every measurement runs in its own process (`benchmarks.worker`): LoCoMo retrieval for mneme,
mneme dense-only, BM25, LangGraph's InMemoryStore, LangMem and mem0 (each with its peak
resident memory), mneme's token cost, the scale curve at 1,000 / 10,000 / 100,000 memories,
the write path, and the per-turn overhead of the graph. The figures go to
`benchmarks/results/latest.json`, the plots and the tables to `docs/benchmarks.md`
(section "Side by side with peers (issue 4)").

Run: `python -m benchmarks.run [--quick] [--only TASK ...]` (the bench virtual environment
`.venv-bench` has the peers installed; `make bench` sets it up). The full run takes about
30 minutes on 2 quiet cores; `--quick` (one conversation, 60 questions, sizes up to 10,000)
about 5. On a fresh machine the first run also embeds the 5,882 LoCoMo turns once into the
benchmark cache (`prepare`, several minutes, before anything is timed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.common import RESULTS, ROOT, machine
from benchmarks.worker import LOCOMO_SYSTEMS, SCALE_GROUPS

PEER_PACKAGES = ("mem0ai", "qdrant-client", "langmem", "bm25s", "langchain-core", "matplotlib")


@dataclass
class Task:
    """One worker process: what it runs, its share of the progress bar, and its time limit."""

    name: str
    weight: float
    """Expected seconds on the reference machine (the progress bar's unit)."""
    timeout: float


def tasks(quick: bool) -> list[Task]:
    """Everything a run measures, in order."""
    f = 0.15 if quick else 1.0
    locomo = {
        "mneme": 170,
        "mneme-dense": 130,
        "bm25": 10,
        "langgraph-inmemory": 90,
        "langmem": 90,
        "mem0": 200,
    }
    scale = {"mneme": 420, "langgraph-inmemory": 200, "mem0": 220, "bm25": 60}
    out = [Task("prepare", 5, 3600)]
    out += [Task(f"locomo:{n}", locomo[n] * f, 1500) for n in LOCOMO_SYSTEMS]
    out += [Task(f"scale:{g}", scale[g] * (0.05 if quick else 1.0), 1800) for g in SCALE_GROUPS]
    out += [Task("ingest", 80 * f, 900), Task("overhead", 150 * f, 900)]
    return out


def environment() -> dict[str, str]:
    """The workers' environment: offline, no telemetry, this checkout importable."""
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see the docs: E5's OpenMP threads spin otherwise
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
            "MEM0_TELEMETRY": "False",
            "ANONYMIZED_TELEMETRY": "False",
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONWARNINGS": "ignore",
        }
    )
    return env


def run_task(task: Task, quick: bool, workdir: Path, bar: tqdm, start: float, log: Any) -> dict[str, Any]:
    """Run one worker, following its progress; a crash or a time-out becomes the row's reason."""
    out = workdir / f"{task.name.replace(':', '_')}.json"
    cmd = [sys.executable, "-m", "benchmarks.worker", task.name, "--out", str(out)]
    if quick:
        cmd.append("--quick")
    bar.set_postfix_str(task.name)
    log.write(f"\n=== {task.name}: {' '.join(cmd)}\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
    )
    assert proc.stdout is not None
    timed_out = False
    for line in proc.stdout:
        if line.startswith("@@ "):
            done = start + task.weight * float(line[3:])
            bar.update(max(0.0, done - bar.n))
        else:
            log.write(line)
        if time.monotonic() - t0 > task.timeout:
            timed_out = True
            proc.kill()
            break
    try:
        proc.wait(timeout=max(1.0, task.timeout - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        proc.wait()
    bar.update(max(0.0, start + task.weight - bar.n))
    if timed_out:
        return {"skipped": f"timed out after {task.timeout:.0f} s on this machine"}
    if not out.exists():
        return {
            "skipped": f"the worker exited with code {proc.returncode} before writing its figures (see the log)"
        }
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def versions() -> dict[str, str | None]:
    """Versions of the peers and tools in this environment."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in PEER_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def assemble(
    raw: dict[str, dict[str, Any]], quick: bool, seconds: float, load: tuple[float, float] = (0.0, 0.0)
) -> dict[str, Any]:
    """`latest.json`: machine, systems (one row each), tokens, scale, write path, overhead."""
    systems: dict[str, Any] = {}
    keep = (
        "recall@5",
        "recall@10",
        "recall@25",
        "per_category",
        "search_ms_p50",
        "search_ms_p95",
        "add_per_s",
        "peak_rss_mb",
    )
    for name in LOCOMO_SYSTEMS:
        r = raw.get(f"locomo:{name}")
        if r is None:
            continue
        if "skipped" in r:
            systems[name] = {"skipped": r["skipped"]}
            continue
        systems[name] = {k: r[k] for k in keep} | {
            "questions": r["questions"],
            "turns": r["turns"],
            "notes": r.get("notes", ""),
            "network_attempts": len(r.get("network_attempts", [])),
        }
    scale: dict[str, Any] = {}
    for group in SCALE_GROUPS:
        r = raw.get(f"scale:{group}")
        if r is None:
            continue
        if "skipped" in r:
            for name in SCALE_GROUPS[group]:
                scale[name] = {"skipped": r["skipped"]}
            continue
        for name, by_size in r["variants"].items():
            scale[name] = {"sizes": by_size, "notes": r.get("notes", ""), "probe_adds": r.get("probe_adds")}
    mneme = raw.get("locomo:mneme", {})
    return {
        "machine": machine()
        | {
            "peers": versions(),
            "omp_wait_policy": environment().get("OMP_WAIT_POLICY"),
            "load_average_1min": {"start": round(load[0], 2), "end": round(load[1], 2)},
        },
        "quick": quick,
        "run_seconds": round(seconds, 1),
        "systems": systems,
        "tokens": mneme.get("tokens", {"skipped": mneme.get("skipped", "mneme's LoCoMo run did not run")}),
        "scale": scale,
        "write_path": raw.get("ingest", {"skipped": "not run"}),
        "turn_overhead": raw.get("overhead", {"skipped": "not run"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="one conversation, 60 questions, sizes up to 10,000"
    )
    parser.add_argument("--only", nargs="*", help="task names (e.g. locomo:mem0 scale:mneme ingest overhead)")
    parser.add_argument(
        "--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md and the plots"
    )
    args = parser.parse_args()
    todo = [t for t in tasks(args.quick) if not args.only or t.name in args.only]
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path = RESULTS / "latest.log"
    raw: dict[str, dict[str, Any]] = {}
    t0 = time.monotonic()
    load_start = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp,
        log_path.open("w") as log,
        tqdm(
            total=sum(t.weight for t in todo),
            unit="s",
            desc="make bench",
            bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}",
        ) as bar,
    ):
        start = 0.0
        for task in todo:
            raw[task.name] = run_task(task, args.quick, Path(tmp), bar, start, log)
            start += task.weight
    raw_path = RESULTS / "latest_raw.json"
    rerun: list[str] = []
    if args.only and raw_path.exists():  # a partial re-run replaces only its own tasks
        previous = json.loads(raw_path.read_text())
        rerun = sorted(raw)
        raw = previous.get("tasks", {}) | raw
    raw_path.write_text(json.dumps({"tasks": raw, "reran": rerun}, indent=2, ensure_ascii=False))
    result = assemble(raw, args.quick, time.monotonic() - t0, (load_start, os.getloadavg()[0]))
    if rerun:
        result["partial_rerun"] = rerun  # these rows come from a later run than the others
        result["partial_rerun_seconds"] = result["run_seconds"]
        latest = RESULTS / "latest.json"
        if latest.exists():  # the run the other rows come from
            before = json.loads(latest.read_text())
            result["run_seconds"] = before.get("run_seconds", result["run_seconds"])
            result["machine"]["load_average_1min"] = before.get("machine", {}).get("load_average_1min", {})
    (RESULTS / "latest.json").write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"figures: {RESULTS / 'latest.json'} (log: {log_path})")
    if not args.no_docs:
        from benchmarks.report import write

        for path in write(result):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
