"""Start servers on free loopback ports for tests: `langgraph dev`, `mneme serve`, an app in a thread."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def langgraph_dev(env: dict[str, str] | None = None, timeout: float = 120.0) -> Iterator[str]:
    """Run `langgraph dev` with the project's langgraph.json; yield its base URL."""
    port = free_port()
    full_env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        **(env or {}),
    }
    exe = Path(os.sys.executable).with_name("langgraph")
    log = open(ROOT / ".langgraph_api.test.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(exe), "dev", "--port", str(port), "--host", "127.0.0.1", "--no-browser", "--no-reload"],
        cwd=ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"langgraph dev exited: {(ROOT / '.langgraph_api.test.log').read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(url + "/ok", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("langgraph dev did not start")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


def wait_ok(
    url: str, proc: subprocess.Popen[Any] | None = None, timeout: float = 120.0, log: Path | None = None
) -> None:
    """Wait until `url` answers 200 (raise if the process dies first or time runs out)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer")
        time.sleep(0.2)


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn in a thread on a free loopback port; yield its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def mneme_serve(
    home: Path, env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run `mneme serve` on a home and a free loopback port; yield its base URL and process."""
    port = free_port()
    exe = Path(sys.executable).with_name("mneme")
    log = log or home.parent / f"mneme-serve-{port}.log"
    out = open(log, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--home", str(home)],
        env={**os.environ, **(env or {})},
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ok(url + "/healthz", proc, timeout=120, log=log)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        out.close()
