"""Postgres as the back end: threads in `PostgresSaver`, memory in `PostgresStore` with pgvector.

Every test runs on a real PostgreSQL (the `pgserver` wheel, one server per session, one database
per test) with the bundled embedding model, through the same `Memory` and graph as the embedded
default.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver

from mneme import Memory, build_graph
from mneme.errors import ConfigError, InputError
from mneme.home import open_home
from mneme.memory.mirror import loads
from mneme.store.postgres import PostgresMemoryStore

pytestmark = pytest.mark.integration


def test_memory_on_postgres_reads_writes_and_forgets_like_the_embedded_default(postgres_url: str) -> None:
    with Memory.open(postgres=postgres_url) as mem:
        assert isinstance(mem.store, PostgresMemoryStore)
        mem.add("我不吃辣，我住在上海", user_id="alice")
        mem.add("I have a cat named Tofu", user_id="alice")
        mem.add("我住在北京", user_id="bob")
        for i in range(4):
            mem.add(f"we talked about hiking trip number {i}", user_id="alice", session_id="s1", infer=False)
        assert mem.search("她能吃辣吗", user_id="alice")[0].text == "不吃辣"
        assert mem.search("pets", user_id="alice")[0].text == "Has a cat named Tofu"
        # filters run on the lexical index's masks, the dense query on Postgres
        hits = mem.search("hiking", user_id="alice", session_id="s1", limit=10)
        assert hits and {h.text for h in hits} <= {
            f"we talked about hiking trip number {i}" for i in range(4)
        }
        assert all("北京" not in h.text for h in mem.search("住在哪里", user_id="alice", limit=10))
        # a correction supersedes, and the old value stays in history
        change = mem.add("我搬到杭州了", user_id="alice")
        moved = next(c for c in change if c.operation == "SUPERSEDE")
        assert moved.old_text == "住在上海" and moved.id is not None
        assert [h.operation for h in mem.history(moved.id, user_id="alice")] == ["ADD", "SUPERSEDE"]
        assert mem.search("杭州", user_id="alice", include_history=True, limit=10)
        # export and import round-trip; delete_all forgets everything of one user only
        data = mem.export(user_id="alice")
        assert mem.delete_all(user_id="alice") == len(data["memories"])
        assert mem.get_all(user_id="alice") == [] and mem.search("猫", user_id="alice") == []
        assert mem.users() == ["bob"]
        mem.import_data(data, user_id="alice")
        assert sorted(r.text for r in mem.get_all(user_id="alice")) == sorted(
            m["text"] for m in data["memories"]
        )


def test_store_filters_cover_what_the_read_path_asks_of_a_store(postgres_url: str) -> None:
    with Memory.open(postgres=postgres_url) as mem:
        store = mem.store
        ns = ("docs", "u")
        for i, text in enumerate(["red apple", "green pear", "blue sky", "yellow sun"]):
            store.put(
                ns, f"k{i}", {"id": f"k{i}", "text": text, "n": i, "tag": "even" if i % 2 == 0 else "odd"}
            )
        keys = lambda items: sorted(i.key for i in items)  # noqa: E731
        assert keys(store.search(ns, filter={"id": {"$in": ["k1", "k3"]}})) == ["k1", "k3"]
        assert keys(store.search(ns, filter={"id": {"$nin": ["k1", "k3"]}})) == ["k0", "k2"]
        assert keys(store.search(ns, filter={"n": {"$gte": 2}})) == ["k2", "k3"]  # numbers, not text
        assert keys(store.search(ns, filter={"n": {"$lt": 10}})) == ["k0", "k1", "k2", "k3"]
        assert keys(store.search(ns, query="fruit", filter={"tag": "odd"}, limit=1)) == ["k1"]
        assert store.count(ns) == 4
        assert [k for k, _ in store.nearest(ns, "an apple", 1)] == ["k0"]
        assert [k for k, _ in store.nearest(ns, "an apple", 5, keys=["k2", "k3"])] in (
            ["k2", "k3"],
            ["k3", "k2"],
        )
        with pytest.raises(InputError):
            store.search(ns, filter={"n": {"$regex": "x"}})
        with pytest.raises(InputError):
            store.search(ns, filter={"n": {"$lt": float("nan")}})
        store.drop_namespace(ns)
        assert store.count(ns) == 0


def test_a_graph_on_postgres_keeps_threads_and_memory(postgres_url: str) -> None:
    graph = build_graph(model="offline", postgres=postgres_url)
    assert isinstance(graph.checkpointer, PostgresSaver)
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [HumanMessage("我叫小王，我不吃辣")]}, config, context={"user_id": "wang"})
    out = graph.invoke({"messages": [HumanMessage("推荐一家餐厅")]}, config, context={"user_id": "wang"})
    assert [m.type for m in out["messages"]].count("human") == 2  # the thread came back from Postgres
    # a second graph (another process would do the same) sees the thread and the memory
    again = build_graph(model="offline", postgres=postgres_url)
    state = again.get_state(config)
    assert len(state.values["messages"]) == len(out["messages"])
    with Memory.open(postgres=postgres_url) as mem:
        assert "不吃辣" in {r.text for r in mem.get_all(user_id="wang")}


def test_another_process_sees_a_write_at_its_next_search(postgres_url: str) -> None:
    with Memory.open(postgres=postgres_url) as mem:
        mem.add("I play the cello every morning", user_id="u", infer=False)
        assert mem.search("cello", user_id="u")[0].text == "I play the cello every morning"
        before = loads(mem.store, "u")
        code = (
            "import sys\nfrom mneme import Memory\n"
            "m = Memory.open(postgres=sys.argv[1])\n"
            "m.add('My sister lives in Lisbon', user_id='u', infer=False)\n"
            "m.close()\n"
        )
        subprocess.run([sys.executable, "-c", code, postgres_url], check=True, timeout=300)
        hits = mem.search("Where does my sister live?", user_id="u")
        assert hits[0].text == "My sister lives in Lisbon"
        assert mem.search("Lisbon", user_id="u", kinds=["episodic"])[0].text == "My sister lives in Lisbon"
        assert loads(mem.store, "u") == before  # caught up from the revision log, not reloaded


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://mneme@127.0.0.1:9/none", "cannot connect"),
        ("not a url", "must be a postgresql:// URL"),
    ],
)
def test_an_unreachable_or_wrong_postgres_fails_at_start_naming_the_setting(url: str, says: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        Memory.open(postgres=url)
    assert says in str(raised.value) and "MNEME_POSTGRES_URL" in str(raised.value)
    assert time.monotonic() - started < 15
    with pytest.raises(ConfigError):
        build_graph(model="offline", postgres=url)


def test_the_password_never_appears_in_the_error() -> None:
    with pytest.raises(ConfigError) as raised:
        open_home(postgres="postgresql://mneme:s3cret-pw@127.0.0.1:9/none")
    assert "s3cret-pw" not in str(raised.value) and "***" in str(raised.value)


def test_choosing_both_a_chroma_server_and_a_postgres_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="choose one"):
        Memory.open(tmp_path, chroma_url="http://127.0.0.1:9", postgres="postgresql://x@127.0.0.1:9/y")


def test_mneme_serve_with_a_bad_postgres_exits_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "MNEME_API_KEY": "a-test-key-123"}
    out = subprocess.run(
        [sys.executable, "-m", "mneme.cli", "serve", "--postgres", "postgresql://mneme@127.0.0.1:9/none"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("error:") and "MNEME_POSTGRES_URL" in out.stderr
    assert "Traceback" not in out.stderr


def test_mneme_serve_with_two_workers_shares_one_postgres(postgres_url: str, tmp_path: Path) -> None:
    import json
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    key = "two-workers-key"
    env = {**os.environ, "MNEME_API_KEY": key, "HOME": str(tmp_path)}
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mneme.cli",
            "serve",
            "--postgres",
            postgres_url,
            "--workers",
            "2",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def call(path: str, body: dict[str, object] | None = None) -> dict[str, object]:
        req = urllib.request.Request(
            url + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())

    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(url + "/healthz", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline, "mneme serve --workers 2 did not start"
                time.sleep(0.3)
        for i in range(6):  # new connections: the kernel spreads them over both workers
            call("/v1/users/u/memories", {"text": f"my locker number {i} is on floor {i + 2}"})
            hits = call(f"/v1/users/u/memories?q=locker+number+{i}&limit=3")["items"]
            assert any(h["text"] == f"my locker number {i} is on floor {i + 2}" for h in hits)  # type: ignore[index, union-attr]
        listed = call("/v1/users/u/memories?limit=50")["items"]
        assert len(listed) == 6  # type: ignore[arg-type]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
