"""Processes that share a checkpointer run the turns of one thread one after the other."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from mneme.graph import build_graph
from tests.fakes import HashEmbeddings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"configurable": {"thread_id": "shared"}}

CHILD = textwrap.dedent(
    """
    import sqlite3, sys, time
    from pathlib import Path
    from mneme.checkpoints import CompactSqliteSaver
    from mneme.graph import build_graph
    from tests.fakes import HashEmbeddings, ScriptedChatModel

    kind, where, home, text, marks = sys.argv[1:6]
    marks = Path(marks)

    class Slow(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            time.sleep(1.5)  # long enough for the other process's turn to start meanwhile
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    model = Slow.script(f"reply to {text}")
    if kind == "postgres":
        graph = build_graph(model=model, embeddings=HashEmbeddings(), postgres=where)
    else:
        saver = CompactSqliteSaver(sqlite3.connect(where, check_same_thread=False, timeout=30))
        saver.setup()
        graph = build_graph(model=model, embeddings=HashEmbeddings(), checkpointer=saver, home=home)
    (marks / f"ready-{text}").touch()
    while not (marks / "go").exists():
        time.sleep(0.005)
    cfg = {"configurable": {"thread_id": "shared"}}
    graph.invoke({"messages": [{"role": "user", "content": text}]}, cfg, context={"user_id": "ann"})
    """
)


def _two_turns_at_once(kind: str, where: str, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, kind, where, str(tmp_path / f"home-{text}"), text, str(marks)],
            cwd=ROOT,
        )
        for text in ("first", "second")
    ]
    deadline = time.monotonic() + 240
    while not all((marks / f"ready-{t}").exists() for t in ("first", "second")):
        assert time.monotonic() < deadline and all(c.poll() is None for c in children)
        time.sleep(0.05)
    (marks / "go").touch()
    assert [c.wait(timeout=240) for c in children] == [0, 0]


def _assert_both_turns_kept(messages: list[object]) -> None:
    pairs = [(m.type, m.content) for m in messages]  # type: ignore[attr-defined]
    assert len(pairs) == 4, pairs  # before the lock: one turn overwrote the other
    for i in (0, 2):
        assert pairs[i][0] == "human"
        assert pairs[i + 1] == ("ai", f"reply to {pairs[i][1]}")
    assert {pairs[0][1], pairs[2][1]} == {"first", "second"}


def test_two_processes_on_one_sqlite_file_keep_both_turns_of_a_thread(tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite"
    _two_turns_at_once("sqlite", str(db), tmp_path)
    import sqlite3

    graph = build_graph(
        model="offline",
        embeddings=HashEmbeddings(),
        checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)),
        home=tmp_path / "home-reader",
    )
    _assert_both_turns_kept(graph.get_state(CONFIG).values["messages"])


def test_two_processes_on_one_postgres_keep_both_turns_of_a_thread(postgres_url: str, tmp_path: Path) -> None:
    _two_turns_at_once("postgres", postgres_url, tmp_path)
    graph = build_graph(model="offline", embeddings=HashEmbeddings(), postgres=postgres_url)
    _assert_both_turns_kept(graph.get_state(CONFIG).values["messages"])


def test_a_postgres_saver_on_one_connection_locks_on_its_own_session(postgres_url: str) -> None:
    import threading

    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from mneme.checkpoints import shared_turn_lock

    with (
        psycopg.connect(postgres_url, autocommit=True) as one,
        psycopg.connect(postgres_url, autocommit=True) as two,
    ):
        first, second = shared_turn_lock(PostgresSaver(one)), shared_turn_lock(PostgresSaver(two))
        assert first is not None and second is not None
        waited: list[float] = []

        def other_process() -> None:
            start = time.monotonic()
            with second.hold("t"):
                waited.append(time.monotonic() - start)

        with first.hold("t"):
            worker = threading.Thread(target=other_process)
            worker.start()
            time.sleep(0.5)
            assert not waited  # the other session waits for this one's turn
        worker.join(timeout=30)
        assert waited and waited[0] >= 0.4
        with second.hold("u"), first.hold("v"):  # other threads: no wait
            pass


def _advisory_pids(admin: object, key: int) -> list[int]:
    rows = admin.execute(  # type: ignore[attr-defined]
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND ((classid::bigint << 32) | objid::bigint) = (%s::bigint & x'ffffffffffffffff'::bigint)",
        (key,),
    ).fetchall()
    return [r[0] for r in rows]


def test_a_turn_lock_whose_connection_breaks_is_taken_again_or_its_loss_is_reported(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool

    from mneme.checkpoints import _key, shared_turn_lock

    def free(admin: psycopg.Connection, thread: str) -> bool:
        taken = admin.execute("SELECT pg_try_advisory_lock(%s)", (_key(thread),)).fetchone()
        assert taken is not None
        if taken[0]:
            admin.execute("SELECT pg_advisory_unlock(%s)", (_key(thread),))
        return bool(taken[0])

    def break_connection(admin: psycopg.Connection, thread: str) -> None:
        pids = _advisory_pids(admin, _key(thread))
        assert pids, "the lock is held by a session"
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            if not _advisory_pids(admin, _key(thread)):
                return
            time.sleep(0.05)

    with (
        ConnectionPool(postgres_url, kwargs={"autocommit": True}, open=True) as pool,
        psycopg.connect(postgres_url, autocommit=True) as admin,
        psycopg.connect(postgres_url, autocommit=True) as rival,
    ):
        lock = shared_turn_lock(PostgresSaver(pool))
        assert lock is not None
        # 1. broken during a turn, noticed when another turn takes its lock: taken again
        with lock.hold("a"):
            break_connection(admin, "a")
            assert free(admin, "a")  # Postgres released it with the connection
            with lock.hold("b"):
                assert not free(admin, "a")  # held again
        assert free(admin, "a") and free(admin, "b")
        assert "taken again" in caplog.text
        # 2. another process took it meanwhile: the loss is reported, the rival's lock left alone
        caplog.clear()
        with lock.hold("a"):
            break_connection(admin, "a")
            rival.execute("SELECT pg_advisory_lock(%s)", (_key("a"),))
            with lock.hold("b"):
                pass
        assert "was lost" in caplog.text
        assert not free(admin, "a")  # still the rival's
        rival.execute("SELECT pg_advisory_unlock(%s)", (_key("a"),))
        # 3. broken, and noticed only when the turn ends: reported, and later turns work
        caplog.clear()
        with lock.hold("c"):
            break_connection(admin, "c")
        assert "broke during the turn" in caplog.text
        with lock.hold("c"):
            assert not free(admin, "c")
        assert free(admin, "c")
