"""A server stops on SIGTERM in seconds with queued jobs kept; a live home stays locked; MCP answers bad text."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mneme import shutdown
from mneme.context import Context
from mneme.memory.api import Memory
from mneme.memory.queue import PendingJob, PendingQueue
from mneme.memory.worker import BackgroundWorker
from mneme.validate import MAX_TEXT_CHARS
from tests.integration.server import mneme_serve
from tests.integration.test_cli import MNEME, run

pytestmark = pytest.mark.integration

KEY = "stop-test-operator-key"
STOP_S = 6.0
"""SIGTERM to exit, at most (a few seconds, with a request of the largest size in flight)."""
LONGEST = ("我喜欢在周末去公园散步，然后喝一杯咖啡。" * 6000)[:MAX_TEXT_CHARS]


def job(i: int) -> PendingJob:
    messages = [{"role": "user", "content": f"I play the piano {i}", "id": f"m{i}"}]
    return PendingJob(
        id=PendingJob.job_id("ann", "s", messages), user_id="ann", messages=messages, session_id="s"
    )


def post(url: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        url + "/v1/users/ann/memories",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    # 503 while stopping, or the connection closed: either way nothing was acknowledged
    with contextlib.suppress(OSError):
        urllib.request.urlopen(req, timeout=120).read()


def test_sigterm_stops_the_server_in_seconds_with_queued_jobs_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home) as mem:
        for i in range(3):
            PendingQueue(mem.store).put(job(i))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    env["MNEME_API_KEY"] = KEY
    with mneme_serve(home, env=env, log=tmp_path / "serve.log") as (url, proc):
        writer = threading.Thread(target=post, args=(url, {"text": LONGEST}), daemon=True)
        writer.start()  # the longest allowed text, being saved when the signal comes
        time.sleep(1.0)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        stopped_in = time.monotonic() - started
    print(f"stopped {stopped_in:.2f} s after SIGTERM")
    assert stopped_in < STOP_S, (tmp_path / "serve.log").read_text()[-2000:]
    with Memory.open(home) as mem:  # the home was released, and nothing queued was lost
        assert sorted(j.id for j in mem.pending(user_id="ann")) == sorted(job(i).id for i in range(3))
        for record in mem.get_all(user_id="ann"):  # what was stored, if anything, has its row
            assert mem.history(record.id, user_id="ann")[0].operation == "ADD"


def test_a_stopping_worker_takes_no_new_job_and_leaves_it_queued(memory: Memory) -> None:
    queue = PendingQueue(memory.store)
    jobs = [job(i) for i in range(3)]
    for j in jobs:
        queue.put(j)
    worker = BackgroundWorker()
    shutdown.begin()
    try:
        started = time.monotonic()
        for j in jobs:
            worker.submit(memory.store, j, context=Context(), model=None)
        assert worker.flush(30.0)
        assert time.monotonic() - started < 5.0
    finally:
        shutdown.reset()
    assert sorted(j.id for j in queue.jobs("ann")) == sorted(j.id for j in jobs)
    assert memory.get_all(user_id="ann") == []


HOLDER = "import sys, time\nfrom mneme.home import open_home\nopen_home(sys.argv[1])\nprint('ready', flush=True)\ntime.sleep(300)\n"


def test_deleting_the_lock_file_does_not_let_a_second_process_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        (home / "lock").unlink()
        locked = run("memories", "list", "--user", "ann", home=home)
        assert locked.returncode == 4 and "in use" in locked.stderr
    finally:
        holder.kill()  # however the owner ends, the OS drops its lock
        holder.wait()
    assert run("memories", "list", "--user", "ann", home=home).returncode == 0


def _rpc(
    proc: subprocess.Popen[bytes], message: dict[str, Any], timeout: float = 120.0
) -> dict[str, Any] | None:
    """Send one JSON-RPC message to `mneme mcp`; read the answer to it (None for a notification)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")  # ensure_ascii: "\ud800" travels escaped
    proc.stdin.flush()
    if "id" not in message:
        return None
    answer: dict[str, Any] = {}
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            parsed = json.loads(line)
            if parsed.get("id") == message["id"]:
                answer.update(parsed)
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(timeout), f"no answer to {message['method']} within {timeout} s"
    return answer


def test_mcp_answers_a_lone_surrogate_with_a_tool_error_and_keeps_serving(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    proc = subprocess.Popen(
        [MNEME, "mcp", "--user", "ann", "--home", str(tmp_path / "home")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "save_memory", "arguments": {"text": "I like tea \ud800"}}
        bad = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, timeout=60)
        assert bad is not None and bad["result"]["isError"]
        assert "not valid Unicode" in bad["result"]["content"][0]["text"]
        call = {"name": "save_memory", "arguments": {"text": "I like tea"}}
        good = _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}, timeout=120)
        assert good is not None and not good["result"]["isError"]
    finally:
        proc.kill()
        proc.wait()
