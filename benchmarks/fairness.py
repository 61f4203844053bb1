"""Fairness: user B's search latency while user A saves the largest allowed input, against B alone.

Run: `python -m benchmarks.fairness [--quick] [--src PATH] [--a-chars N]`. The server is the
real `mneme serve` on a fresh home (local model, Chroma on disk). User B holds the turns of the
Chinese multi-session set (`benchmarks/data/zh_multisession.json`) and searches them one query
at a time with queries never sent before (each one embeds); user A, meanwhile, sends back to
back the largest requests the limits allow: a text of `MAX_TEXT_CHARS` (`save`), then as many
such messages as `MAX_REQUEST_CHARS` allows (`add` with extraction). B keeps searching until
A's two requests are answered.
Reported: B's p50/p95 alone and under A's load, their ratio (target at most 3), A's request
times, and the load average. `--src` runs the server from another source tree (e.g. the code
before this change, with the same requests, for a side-by-side). Writes
`benchmarks/results/fairness.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import ROOT, pct, summary, write_result
from mneme.validate import MAX_REQUEST_CHARS, MAX_TEXT_CHARS

KEY = "fairness-benchmark-key-01"
LOADED_MAX_S = 600.0
"""B stops searching after this long even if A's requests are not answered yet (the code before
this change took longer than that)."""
DATA = ROOT / "benchmarks" / "data" / "zh_multisession.json"


def corpus() -> tuple[list[str], list[str]]:
    """B's memories (every turn) and B's queries (questions, then turns reworded as questions)."""
    data = json.loads(DATA.read_text())
    turns = [t["text"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]]
    questions = [q["question"] for c in data["conversations"] for q in c.get("qa", [])]
    asked = [f"{t.rstrip('。！？!?')}吗？" for t in turns]
    return turns, list(dict.fromkeys(questions + asked))


def long_text(chars: int, seed: str) -> str:
    """A long Chinese text made of the set's turns, `chars` characters."""
    turns, _ = corpus()
    text = seed
    while len(text) < chars:
        text += "".join(turns)
    return text[:chars]


def start(home: Path, log: Path, src: str | None) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    env.update({"MNEME_API_KEY": KEY, "MNEME_RATE_LIMIT": "off"})
    if src:
        env["PYTHONPATH"] = src
    exe = Path(sys.executable).with_name("mneme")
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--home", str(home)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"mneme serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit("mneme serve did not start")


async def searches(http: httpx.AsyncClient, queries: list[str]) -> list[float]:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        resp = await http.get("/v1/users/B/memories", params={"q": q[:2000], "limit": 5})
        resp.raise_for_status()
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def scenario(url: str, quick: bool, a_chars: int) -> dict[str, Any]:
    turns, queries = corpus()
    n = 25 if quick else 60
    alone_q = queries[:n]
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=900) as http:
        messages = [{"role": "user", "content": t, "id": f"b{i}"} for i, t in enumerate(turns)]
        for i in range(0, len(messages), 100):
            resp = await http.post(
                "/v1/users/B/memories", json={"messages": messages[i : i + 100], "infer": False}
            )
            resp.raise_for_status()
        await searches(http, [f"热身 {i}" for i in range(5)])  # the model and the index are warm

        alone = await searches(http, alone_q)

        saves: list[dict[str, Any]] = []
        count = max(1, MAX_REQUEST_CHARS // a_chars)
        requests: list[tuple[str, dict[str, Any]]] = [
            (f"save, {a_chars:,} characters", {"text": long_text(a_chars, "第一篇：")}),
            (
                f"add with extraction, {count} x {a_chars:,} characters",
                {
                    "messages": [
                        {"role": "user", "content": long_text(a_chars, f"第二篇之{i}：")}
                        for i in range(count)
                    ]
                },
            ),
        ]

        async def user_a() -> None:
            for kind, body in requests:
                t0 = time.perf_counter()
                try:
                    resp = await http.post("/v1/users/A/memories", json=body)
                except asyncio.CancelledError:
                    saves.append(
                        {"kind": kind, "status": "still running", "s": round(time.perf_counter() - t0, 2)}
                    )
                    raise
                saves.append(
                    {"kind": kind, "status": resp.status_code, "s": round(time.perf_counter() - t0, 2)}
                )

        a_task = asyncio.create_task(user_a())
        await asyncio.sleep(1.0)  # A's first request is under way
        loaded: list[float] = []
        rest = [q for q in queries if q not in alone_q]
        i = 0
        began = time.monotonic()
        while len(loaded) < n or (not a_task.done() and time.monotonic() - began < LOADED_MAX_S):
            query = rest[i % len(rest)] + ("" if i < len(rest) else f" {i}")
            loaded += await searches(http, [query])  # B searches for as long as A is saving
            i += 1
        if not a_task.done():
            a_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await a_task
    p95_alone, p95_loaded = summary(alone)["p95"], summary(loaded)["p95"]

    def tail(values: list[float]) -> dict[str, float]:
        return {**summary(values), "p99": round(pct(values, 99), 2), "max": round(max(values), 2)}

    return {
        "b_alone_ms": tail(alone),
        "b_while_a_saves_ms": tail(loaded),
        "p95_ratio": round(p95_loaded / p95_alone, 2),
        "b_searches": {"alone": len(alone), "while_a_saves": len(loaded)},
        "b_memories": len(turns),
        "a_requests": saves,
        "a_request_s": summary([s["s"] for s in saves]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="25 searches per phase instead of 60.")
    parser.add_argument(
        "--src", help="Run the server from this source tree (PYTHONPATH), e.g. /work/main/src."
    )
    parser.add_argument("--a-chars", type=int, default=MAX_TEXT_CHARS, help="Length of user A's texts.")
    parser.add_argument("--name", default="fairness", help="Result file name (benchmarks/results/NAME.json).")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start(Path(tmp) / "home", Path(tmp) / "serve.log", args.src)
        try:
            result = asyncio.run(scenario(url, args.quick, args.a_chars))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    result.update({"load_before": load_before, "load_after": os.getloadavg(), "src": args.src or "this tree"})
    path = write_result(args.name, result)
    print(json.dumps({k: v for k, v in result.items() if k != "a_requests"}, indent=2, ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
