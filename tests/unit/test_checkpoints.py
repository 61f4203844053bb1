"""mneme's SQLite checkpointer: short versions, and threads written by `SqliteSaver` go on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore

from mneme.checkpoints import CompactSqliteSaver
from mneme.graph import build_graph

CTX = {"user_id": "ann", "model": "offline"}
CFG = {"configurable": {"thread_id": "t"}}


def _say(graph, text: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    out = graph.invoke({"messages": [{"role": "user", "content": text}]}, CFG, context=CTX)
    return [(m.type, m.content) for m in out["messages"]]


def test_a_thread_written_by_sqlitesaver_goes_on_with_short_versions(
    tmp_path: Path, mem_store: InMemoryStore
) -> None:
    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False)
    old = SqliteSaver(conn)
    old.setup()
    _say(build_graph(model="offline", checkpointer=old, store=mem_store), "I live in Lyon")
    before = old.get_tuple(CFG)
    assert before is not None and all(len(v) > 40 for v in before.checkpoint["channel_versions"].values())

    new = CompactSqliteSaver(conn)
    graph = build_graph(model="offline", checkpointer=new, store=mem_store)
    said = _say(graph, "I have a cat named Tom")
    assert [t for t, _ in said] == ["human", "ai", "human", "ai"]  # every node ran on the old thread
    assert said[2] == ("human", "I have a cat named Tom")
    after = new.get_tuple(CFG)
    assert after is not None
    versions = after.checkpoint["channel_versions"]
    assert len(versions["messages"]) == 12 and len(max(versions.values())) == 12  # the newest sort last
    assert int(versions["messages"]) > int(before.checkpoint["channel_versions"]["messages"].split(".")[0])
    assert [t for t, _ in _say(graph, "thanks")] == ["human", "ai"] * 3
    conn.close()
