"""Crash soak: kill -9 a writer, a graph run or a REST server at random points, restart, check nothing is lost.

A zygote process imports mneme once and forks one child per life (so a restart costs what
opening the store costs, not Python's imports). Each child opens the store, announces itself,
and works until it is killed, by a timer at a random moment or by itself at a chosen point
inside a write (between a batch's store calls, inside `extract_memories`, inside a deferred
job). Work is acknowledged in an append-only file only after the call returned, as a client
sees it. The next child re-sends the one unacknowledged item (a client's retry), resumes the
thread from its checkpoint and drains the pending extraction queue. At the end a clean child
checks:

- every acknowledged write is stored, once; no text is stored twice;
- every current record has exactly one ADD history row, and every ADD row its record;
- every acknowledged turn is in the thread once, or folded out of it into an episode by the
  summarizer ("User: ..."), and the thread is not stuck;
- the pending queue is empty, and each turn's extracted memories exist once;
- a search finds the last acknowledged write (the read path's index is in step).

Run: `python -m benchmarks.crash --kills 100` (SQLite + Chroma and a Postgres from the `pgserver`
wheel, in the same run). The test suite runs the same harness with fewer kills.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

POINTS = [
    "timer",  # anywhere: a timer fires while the child works
    "chroma_upsert",  # between the store calls of one write (embedded: SQLite rows, Chroma record)
    "pg_batch",  # inside a Postgres batch, before it commits
    "apply",  # after a write's reconcile, before its ops are applied
    "extract_memories",  # inside the graph's write node
    "deferred_job",  # inside the background extraction of a deferred turn
    "rest_write",  # a REST server, while it serves writes
]


# -- the child's side --------------------------------------------------------------------------


def _ack(path: Path, **entry: Any) -> None:
    """Append one line: a write() of a small line on an O_APPEND file is whole or absent."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps({"pid": os.getpid(), **entry}) + "\n").encode())
    finally:
        os.close(fd)


def _die_at(point: str, after: int) -> None:
    """Make this process kill itself the `after`-th time it reaches `point`."""
    calls = {"n": 0}

    def hit() -> None:
        calls["n"] += 1
        if calls["n"] >= after:
            os.kill(os.getpid(), signal.SIGKILL)

    def patch(owner: Any, name: str, before: bool = True) -> None:
        original = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if before:
                hit()
            out = original(*args, **kwargs)
            if not before:
                hit()
            return out

        setattr(owner, name, wrapped)

    if point == "chroma_upsert":
        from mneme.store.chroma import ChromaStore

        # before a record's upsert (its history row is in), or after it (its log not yet)
        patch(ChromaStore, "_upsert", before=after % 2 == 1)
    elif point == "pg_batch":
        from mneme.store.postgres import PostgresMemoryStore

        patch(PostgresMemoryStore, "_batch_put_ops", before=False)  # inside the transaction
    elif point == "apply":
        from mneme.memory.repo import Repo

        patch(Repo, "apply")
    elif point == "extract_memories":
        from mneme.memory.pipeline import Pipeline

        patch(Pipeline, "run")
    elif point == "deferred_job":
        from mneme.memory.write import Writer

        patch(Writer, "write")


def _texts(i: int) -> tuple[str, str]:
    return (
        f"note {i}: the parcel for order {1000 + i} goes to locker {i % 37}",
        f"I keep plant number {i} on shelf {i % 9}",
    )


def _open(spec: dict[str, Any]) -> Any:
    from mneme.memory.api import Memory

    return Memory.open(spec.get("home"), postgres=spec.get("postgres"))


def child_writes(spec: dict[str, Any], acks: Path, start: int) -> None:
    """Write verbatim messages and saved facts, acknowledging each after it returned."""
    mem = _open(spec)
    _ack(acks, kind="ready")
    for i in range(start, start + 10_000):
        message, fact = _texts(i)
        mem.add({"role": "user", "content": message, "id": f"m{i}"}, user_id="u", session_id="s", infer=False)
        mem.save(fact, user_id="u")
        _ack(acks, kind="write", i=i)


def child_turns(spec: dict[str, Any], acks: Path, start: int) -> None:
    """Run graph turns on one thread (deferred extraction), acknowledging each finished run."""
    from langchain_core.messages import HumanMessage

    from mneme.graph import at_latest_checkpoint, build_graph
    from mneme.memory.api import Memory

    graph = build_graph(model="offline", home=spec.get("home"), postgres=spec.get("postgres"))
    config: Any = {"configurable": {"thread_id": "crash-thread"}}
    ctx = {"user_id": "t", "extraction": "deferred"}
    # read by id: without one, LangGraph 1.2 shows a run killed after its input checkpoint as
    # finished (docs/benchmarks.md, "Crashes"); a new input would also finish it first
    state = graph.get_state(at_latest_checkpoint(graph, config))
    if state.next:  # killed mid-run: resume from the last checkpoint
        graph.invoke(None, config, context=ctx)
    # what earlier lives queued and did not run: run it now (a crash loses no job)
    Memory(graph.store).retry_pending(user_id="t", force=True)  # type: ignore[arg-type]
    # a turn that finished just before the kill, unacknowledged: the client sees it in the
    # thread (re-sending it would replace the message, as its id is the same)
    ids = {m.id for m in graph.get_state(config).values.get("messages", [])}
    while f"h{start}" in ids:
        _ack(acks, kind="turn", j=start)
        start += 1
    _ack(acks, kind="ready")
    for j in range(start, start + 10_000):
        graph.invoke(
            {"messages": [HumanMessage(f"我的第{j}号包裹寄到{j % 13}号柜", id=f"h{j}")]}, config, context=ctx
        )
        _ack(acks, kind="turn", j=j)


def child_rest(spec: dict[str, Any], acks: Path, port: int) -> None:
    """Serve the REST app (as `mneme serve` does) until killed."""
    import uvicorn

    from mneme.server.app import create_app
    from mneme.server.auth import KeyRing
    from mneme.server.backend import HomeBackend

    backend = HomeBackend(spec.get("home"), postgres=spec.get("postgres"))
    backend.open_now()
    app = create_app(backend, keys=KeyRing.from_env({"MNEME_API_KEY": "crash-test-key"}))
    _ack(acks, kind="ready")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


def child_check(spec: dict[str, Any], out: Path) -> None:
    """Resume, drain, then report what is stored (the parent compares it with the acks)."""
    from langchain_core.messages import HumanMessage

    from mneme.graph import at_latest_checkpoint, build_graph
    from mneme.memory.api import Memory

    graph = build_graph(model="offline", home=spec.get("home"), postgres=spec.get("postgres"))
    config: Any = {"configurable": {"thread_id": "crash-thread"}}
    ctx = {"user_id": "t", "extraction": "deferred"}
    if graph.get_state(at_latest_checkpoint(graph, config)).next:
        graph.invoke(None, config, context=ctx)
    mem = Memory(graph.store)  # type: ignore[arg-type]
    mem.retry_pending(force=True)
    report: dict[str, Any] = {"pending": len(mem.pending())}
    for user in ("u", "t", "r"):
        records = mem.get_all(user_id=user)
        history = mem.export(user_id=user)["history"]
        report[user] = {
            "texts": [r.text for r in records],
            # turns folded out of the thread by `summarize` are kept as episodes ("User: ...")
            "folded": [
                r.text
                for r in records
                if r.kind == "episodic"
                and r.source.actor == "system"
                and r.source.thread_id == "crash-thread"
            ],
            "ids": [r.id for r in records],
            "history": [[h["memory_id"], h["operation"]] for h in history],
        }
    state = graph.get_state(config)
    report["thread"] = [m.text for m in state.values.get("messages", []) if isinstance(m, HumanMessage)]
    report["thread_next"] = list(state.next)
    # to read a lost turn by: every message of the thread, and how many checkpoints it has
    report["thread_all"] = [f"{type(m).__name__}:{m.id}" for m in state.values.get("messages", [])]
    report["checkpoints"] = sum(1 for _ in graph.get_state_history(config))
    last = spec.get("last_text")
    report["found_last"] = bool(last) and any(h.text == last for h in mem.search(last, user_id="u", limit=3))
    out.write_text(json.dumps(report, ensure_ascii=False))


def zygote() -> None:
    """Import once, then fork one child per command read from stdin."""
    import mneme.graph
    import mneme.memory.api
    import mneme.server.app  # noqa: F401

    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if cmd.get("die_at"):
                    _die_at(cmd["die_at"], int(cmd["after"]))
                spec, acks = cmd["spec"], Path(cmd["acks"])
                if cmd["mode"] == "writes":
                    child_writes(spec, acks, int(cmd["start"]))
                elif cmd["mode"] == "turns":
                    child_turns(spec, acks, int(cmd["start"]))
                elif cmd["mode"] == "rest":
                    child_rest(spec, acks, int(cmd["port"]))
                else:
                    child_check(spec, Path(cmd["out"]))
            except BaseException as exc:  # reported to the parent, which fails the run
                _ack(Path(cmd["acks"]), kind="error", error=f"{type(exc).__name__}: {exc}")
                code = 1
            os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": status}), flush=True)


# -- the parent's side -------------------------------------------------------------------------


class Zygote:
    """The forking helper process."""

    def __init__(self) -> None:
        env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.crash", "--zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parents[1],
        )

    def start(self, **cmd: Any) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return int(json.loads(self.proc.stdout.readline())["pid"])

    def wait(self) -> int:
        assert self.proc.stdout is not None
        return int(json.loads(self.proc.stdout.readline())["status"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _read(acks: Path) -> list[dict[str, Any]]:
    if not acks.exists():
        return []
    return [json.loads(line) for line in acks.read_text().splitlines() if line.strip()]


def _wait_ready(acks: Path, pid: int, timeout: float) -> bool:
    """Wait until the child announced itself (True) or died first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = [r for r in _read(acks) if r["pid"] == pid]
        if any(r["kind"] == "error" for r in rows):
            raise RuntimeError(f"a crash child failed: {rows[-1]}")
        if any(r["kind"] == "ready" for r in rows):
            return True
        if _gone(pid):  # it reached its kill point while recovering (resume, queue drain)
            return False
        time.sleep(0.02)
    raise RuntimeError(f"a crash child did not start in {timeout:.0f} s")


def _rest_writes(port: int, start: int, acks: Path, stop_at: float) -> None:
    """Write through the REST routes until the server dies (or time is up)."""
    import http.client
    import urllib.request

    i = start
    while time.monotonic() < stop_at:
        message, _ = _texts(i)
        body = json.dumps(
            {"messages": [{"role": "user", "content": f"rest {message}", "id": f"r{i}"}], "infer": False}
        ).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/users/r/memories",
            data=body,
            headers={"Authorization": "Bearer crash-test-key", "Content-Type": "application/json"},
        )
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except (OSError, http.client.HTTPException):  # killed before or while it answered
            return  # the server is gone: this write is unacknowledged
        _ack(acks, kind="rest", i=i)
        i += 1


def run(
    spec: dict[str, Any],
    workdir: Path,
    kills: int,
    *,
    seed: int = 0,
    max_wait: float = 1.5,
    modes: tuple[str, ...] = ("writes", "turns", "rest"),
) -> dict[str, Any]:
    """Kill `kills` children at random points, then check the stored data against the acks.

    Args:
        spec: `{"home": folder}` (SQLite + Chroma) or `{"postgres": url}`.
        workdir: A folder for the acks and the report.
        kills: How many kills (split between writers, graph runs and the REST server).
        seed: Seed of the random kill points.
        max_wait: Longest random wait before a timer kill, seconds.
        modes: The kinds of process killed, in turn.

    Returns:
        Counts: kills, acknowledged writes and turns, lost, duplicated, mismatched history rows.
    """
    import socket

    rng = random.Random(seed)
    acks = workdir / "acks.jsonl"
    zyg = Zygote()
    points: Counter[str] = Counter()
    lives: list[str] = []  # what each life was and where it died, in order (to read a loss by)
    started = time.monotonic()
    try:
        for k in range(kills):
            rows = _read(acks)
            mode = modes[k % len(modes)]
            point = "timer"
            if mode == "writes":
                point = rng.choice(["timer", "apply", "chroma_upsert" if "home" in spec else "pg_batch"])
            elif mode == "turns":
                point = rng.choice(["timer", "extract_memories", "deferred_job"])
            cmd: dict[str, Any] = {"mode": mode, "spec": spec, "acks": str(acks)}
            if point != "timer":
                cmd.update(die_at=point, after=rng.randint(1, 4))
            if mode == "writes":
                cmd["start"] = max([r["i"] for r in rows if r["kind"] == "write"], default=-1) + 1
            elif mode == "turns":
                cmd["start"] = max([r["j"] for r in rows if r["kind"] == "turn"], default=-1) + 1
            else:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    cmd["port"] = s.getsockname()[1]
                point = "rest_write"
            pid = zyg.start(**cmd)
            if not _wait_ready(acks, pid, 300):
                pass  # killed itself at its point before it was ready
            elif mode == "rest":
                time.sleep(0.3)  # let uvicorn bind
                start = max([r["i"] for r in _read(acks) if r["kind"] == "rest"], default=-1) + 1
                import threading

                writer = threading.Thread(
                    target=_rest_writes, args=(cmd["port"], start, acks, time.monotonic() + 30), daemon=True
                )
                writer.start()
                time.sleep(rng.uniform(0.2, max_wait))
                os.kill(pid, signal.SIGKILL)
                writer.join(timeout=60)
            elif point == "timer":
                time.sleep(rng.uniform(0.05, max_wait))
                os.kill(pid, signal.SIGKILL)
            else:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not _gone(pid):
                    time.sleep(0.02)
                if not _gone(pid):  # it never reached the point: kill it anyway
                    os.kill(pid, signal.SIGKILL)
            status = zyg.wait()
            if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
                raise RuntimeError(f"a crash child ended without being killed: {status}, {_read(acks)[-1:]}")
            points[point] += 1
            lives.append(f"{mode}@{point}:{cmd.get('start', '')}")
        rows = _read(acks)
        writes = sorted({r["i"] for r in rows if r["kind"] == "write"})
        if writes:
            spec = {**spec, "last_text": _texts(writes[-1])[0]}
        out = workdir / "report.json"
        zyg.start(mode="check", spec=spec, acks=str(acks), out=str(out))
        if zyg.wait() != 0:
            raise RuntimeError(f"the check failed: {_read(acks)[-1:]}")
    finally:
        zyg.close()
    report = json.loads(out.read_text())
    return {**_score(report, rows, kills, points, time.monotonic() - started), "lives": lives}


def _gone(pid: int) -> bool:
    """Whether a child is dead (a zombie not yet reaped by the zygote counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] in ("Z", "X")
    except OSError:
        return True


def _score(
    report: dict[str, Any], rows: list[dict[str, Any]], kills: int, points: Counter[str], seconds: float
) -> dict[str, Any]:
    writes = sorted({r["i"] for r in rows if r["kind"] == "write"})
    rest = sorted({r["i"] for r in rows if r["kind"] == "rest"})
    turns = sorted({r["j"] for r in rows if r["kind"] == "turn"})
    u, t, r = report["u"], report["t"], report["r"]
    stored_u = Counter(u["texts"])
    stored_r = Counter(r["texts"])
    lost = [f"write {i}" for i in writes if _texts(i)[0] not in stored_u or _texts(i)[1] not in stored_u]
    lost += [f"rest {i}" for i in rest if f"rest {_texts(i)[0]}" not in stored_r]
    thread = Counter(report["thread"])
    folded = {text.split("\n", 1)[0] for text in t.get("folded", [])}
    lost += [
        f"turn {j}"
        for j in turns
        if f"我的第{j}号包裹寄到{j % 13}号柜" not in thread
        and f"User: 我的第{j}号包裹寄到{j % 13}号柜" not in folded
    ]
    duplicated = sum(
        n - 1 for c in (stored_u, stored_r, Counter(t["texts"]), thread) for n in c.values() if n > 1
    )
    mismatched: list[str] = []
    for part in (u, t, r):
        ops: dict[str, Counter[str]] = {}
        for memory_id, op in part["history"]:
            ops.setdefault(memory_id, Counter())[op] += 1
        ids = set(part["ids"])
        for i in ids:  # a record without its one ADD row
            if ops.get(i, Counter())["ADD"] != 1:
                mismatched.append(f"{i}: record with {dict(ops.get(i, {}))}")
        for i, seen in ops.items():  # an ADD row whose record is gone without a row saying why
            ended = seen["SUPERSEDE"] + seen["DELETE"] + seen["EXPIRE"]
            if seen["ADD"] and i not in ids and not ended:
                mismatched.append(f"{i}: no record, history {dict(seen)}")
    return {
        "kills": kills,
        "kill_points": dict(points),
        "acknowledged_writes": 2 * len(writes) + len(rest),
        "acknowledged_turns": len(turns),
        "lost": len(lost),
        "lost_items": lost[:10],
        "duplicated": duplicated,
        "history_mismatched": len(mismatched),
        "mismatches": mismatched[:10],
        "pending_left": report["pending"],
        "thread_stuck": bool(report["thread_next"]),
        "last_write_found": report["found_last"] or not writes,
        "seconds": round(seconds, 1),
        "thread_messages": report.get("thread_all") if lost else None,
        "thread_checkpoints": report.get("checkpoints"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kills", type=int, default=60, help="kills per back end")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.zygote:
        zygote()
        return
    import pgserver

    from benchmarks.common import write_result

    out: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="mneme-crash-") as tmp:
        root = Path(tmp)
        (root / "sqlite").mkdir()
        out["sqlite_chroma"] = run(
            {"home": str(root / "sqlite" / "home")}, root / "sqlite", args.kills, seed=args.seed
        )
        print(json.dumps(out["sqlite_chroma"]), flush=True)
        server = pgserver.get_server(root / "pg", cleanup_mode="stop")
        try:
            (root / "postgres").mkdir()
            out["postgres"] = run(
                {"postgres": server.get_uri()}, root / "postgres", args.kills, seed=args.seed
            )
            print(json.dumps(out["postgres"]), flush=True)
        finally:
            server.cleanup()
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"written to {write_result('crash', out)}")


if __name__ == "__main__":
    main()
