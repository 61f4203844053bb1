"""Concurrent writers: two processes through a Chroma server or a Postgres; a second one on an embedded home.

Two processes write one user's memory at once through a shared store the test starts (a Chroma
server, or a Postgres), and a second process that opens an embedded home in use gets a clear
error, never corruption.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from mneme import Memory
from mneme.memory import mirror
from mneme.memory.mirror import lexical_index, loads

pytestmark = pytest.mark.integration

WRITES = 100
WRITER = textwrap.dedent(
    """
    import json, sys
    from mneme import Memory

    shared, home, tag, n = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    memory = Memory.open(home, **shared)
    done = []
    for i in range(n):
        if i % 4 == 0:    # a fact only this process writes
            change = memory.save(f"{tag}进程的第{i}条笔记：喜欢编号{i}的颜色", user_id="shared")
        elif i % 4 == 1:  # a verbatim message
            msg = {"role": "user", "content": f"{tag} booked table {i} for dinner", "id": f"{tag}-{i}"}
            change = memory.add([msg], user_id="shared", session_id=f"s-{tag}", infer=False)[0]
        elif i % 4 == 2:  # a fact both processes write: must exist once
            change = memory.save(f"Shared fact number {i % 40}", user_id="shared")
        else:             # this process's own profile field, updated field by field
            change = memory.set_field(f"field_{tag.lower()}", f"V{i}", user_id="shared")
        done.append([change.operation, change.id, change.text])
    print(json.dumps(done))
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_url(tmp_path: Path) -> Iterator[str]:
    """A Chroma server of its own, on a free port, stopped after the test."""
    port = free_port()
    cli = Path(sys.executable).parent / "chroma"
    log = (tmp_path / "chroma.log").open("w")
    server = subprocess.Popen(
        [str(cli), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError((tmp_path / "chroma.log").read_text()) from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck server
            server.kill()
        log.close()


@pytest.fixture(params=["chroma_server", "postgres"])
def shared_store(request: pytest.FixtureRequest) -> dict[str, str]:
    """`Memory.open` arguments of a store several processes share."""
    if request.param == "postgres":
        return {"postgres": request.getfixturevalue("postgres_url")}
    return {"chroma_url": request.getfixturevalue("chroma_url")}


@pytest.mark.timeout(900)  # 2 x 100 writes, each embedding text: minutes on a busy 2-core machine
def test_two_processes_writing_for_one_user_lose_and_duplicate_nothing(
    shared_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the reader below must follow the writes through the revision log alone: no count check
    # that would reload its index (and hide a lost revision)
    monkeypatch.setattr(mirror, "RECHECK_S", 3600.0)
    # passive OpenMP threads: two embedding processes on shared cores do not spin against each other
    env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "ANONYMIZED_TELEMETRY": "False"}
    # a third process's read path follows the writes as they happen (its index, kept in step by
    # the user's revision log, must end up with every memory and never need a reload)
    memory = Memory.open(tmp_path / "reader", **shared_store)
    memory.save("a memory before the writers start", user_id="shared")
    memory.search("memory", user_id="shared")
    stop = threading.Event()

    def follow() -> None:
        while not stop.is_set():
            # profile fields only: a dense hit in another space would repair the index on the
            # spot and hide a revision lost from the log
            memory.search("field value", user_id="shared", kinds=["profile"])
            stop.wait(0.1)

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    procs = {
        tag: subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                json.dumps(shared_store),
                str(tmp_path / f"home{tag}"),
                tag,
                str(WRITES),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for tag in ("A", "B")
    }
    results = {}
    for tag, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        results[tag] = json.loads(out.strip().splitlines()[-1])
    assert all(len(r) == WRITES for r in results.values())
    stop.set()
    follower.join(timeout=60)

    current = memory.get_all(user_id="shared")
    index = lexical_index(memory.store, "shared")  # brought up to date from the log alone
    assert sum(index.count(space) for space in ("profile", "semantic", "episodic")) == len(current)
    assert loads(memory.store, "shared") == 1  # caught up from the log each time: no revision lost
    current = [r for r in current if r.text != "a memory before the writers start"]
    texts = Counter(r.text for r in current)
    assert [t for t, n in texts.items() if n > 1] == []  # nothing duplicated
    ids = {r.id for r in current}
    written = {c[1] for r in results.values() for c in r if c[0] in ("ADD", "SUPERSEDE", "NOOP")}
    assert written <= ids  # nothing lost
    shared = {f"Shared fact number {i % 40}" for i in range(2, WRITES, 4)}
    own = 2 * (WRITES // 4) * 2  # per process: WRITES/4 notes and WRITES/4 messages
    assert len(current) == own + len(shared) + 2
    assert shared <= set(texts)
    fields = {k: (f.value, f.version) for k, f in memory.profile(user_id="shared").items()}
    last = f"V{WRITES - 1}"
    assert fields == {"field_a": (last, WRITES // 4), "field_b": (last, WRITES // 4)}

    history = memory.export(user_id="shared")["history"]
    by_memory = Counter((h["memory_id"], h["operation"]) for h in history)
    for record in current:  # history complete: every memory has its ADD, every field its changes
        assert by_memory[(record.id, "ADD")] == 1, record.text
        if record.kind == "profile":
            assert by_memory[(record.id, "SUPERSEDE")] == WRITES // 4 - 1
    assert len(memory.export(user_id="shared")["archive"]) == 2 * (WRITES // 4 - 1)
    memory.close()


def test_a_second_process_on_an_embedded_home_in_use_gets_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home) as owner:
        owner.add("我住在杭州", user_id="u")
        code = f"from mneme import Memory\nm = Memory.open({str(home)!r})\nm.add('我不吃辣', user_id='u')\n"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
        assert out.returncode != 0
        assert "HomeLockedError" in out.stderr and f"in use by process {os.getpid()}" in out.stderr
        assert "MNEME_CHROMA_URL" in out.stderr  # it says how to share memory instead
        assert owner.add("我喜欢喝茶", user_id="u")[0].operation == "ADD"
        assert sorted(r.text for r in owner.get_all(user_id="u")) == ["住在杭州", "喜欢喝茶"]
