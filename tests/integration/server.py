"""Start `langgraph dev` on a free loopback port for tests."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
