"""The debug log (which holds what users said) goes to the home the graph or agent uses, not the cwd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from mneme.cli import app
from mneme.debuglog import DEBUG_FILE, read
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.middleware import MemoryMiddleware
from tests.fakes import HashEmbeddings, ScriptedChatModel

SAID = "我不吃辣，以后都发顺丰"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory of the run: not the home, so a log written here is misplaced."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def said_in(log: Path) -> str:
    return "\n".join(str(row) for row in read(log))


def test_the_debug_log_goes_to_the_home_given_to_build_graph(home: Path, elsewhere: Path) -> None:
    graph = build_graph(home=home, embeddings=HashEmbeddings(), model=ScriptedChatModel.script("好的"))
    graph.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": "alice", "debug": True},
    )
    assert [r["stage"] for r in read(home / DEBUG_FILE)] == ["build_context", "agent"]
    assert SAID in said_in(home / DEBUG_FILE)
    assert not (elsewhere / ".mneme").exists()


def test_the_home_given_to_build_graph_wins_over_mneme_home_even_with_its_own_store(
    tmp_path: Path, elsewhere: Path, mem_store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_HOME", str(tmp_path / "other"))
    home = tmp_path / "home7"
    graph = build_graph(
        home=home, checkpointer=InMemorySaver(), store=mem_store, model=ScriptedChatModel.script("ok")
    )
    graph.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": "alice", "debug": True},
    )
    assert SAID in said_in(home / DEBUG_FILE)
    assert not (tmp_path / "other").exists() and not (elsewhere / ".mneme").exists()


def test_an_explicit_debug_path_still_wins(home: Path, elsewhere: Path, tmp_path: Path) -> None:
    graph = build_graph(home=home, embeddings=HashEmbeddings(), model=ScriptedChatModel.script("ok"))
    chosen = tmp_path / "mine.jsonl"
    graph.invoke(
        {"messages": [{"role": "user", "content": SAID}]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": "alice", "debug": True, "debug_path": str(chosen)},
    )
    assert SAID in said_in(chosen)
    assert not (home / DEBUG_FILE).exists()


def test_the_middlewares_debug_log_goes_to_the_home_of_the_agents_store(home: Path, elsewhere: Path) -> None:
    opened = open_home(home, embeddings=HashEmbeddings())
    try:
        agent: Any = create_agent(
            ScriptedChatModel.script("好的"),
            [],
            middleware=[MemoryMiddleware()],
            store=opened.store,
            checkpointer=opened.checkpointer(),
        )
        agent.invoke(
            {"messages": [{"role": "user", "content": SAID}]},
            {"configurable": {"thread_id": "t1"}},
            context={"user_id": "alice", "debug": True},
        )
    finally:
        opened.close()
    assert [r["stage"] for r in read(home / DEBUG_FILE)] == ["build_context"]
    assert not (elsewhere / ".mneme").exists()


def test_mneme_chat_writes_its_debug_log_in_its_home(
    home: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = open_home(home, embeddings=HashEmbeddings())  # the chat shares it: no model to load
    monkeypatch.setenv("MNEME_DEBUG", "1")
    try:
        out = CliRunner().invoke(
            app, ["chat", "--user", "ann", "--session", "s1", "--home", str(home)], input=SAID + "\n"
        )
    finally:
        opened.close()
    assert out.exit_code == 0, out.output
    assert SAID in said_in(home / DEBUG_FILE)
    assert not (elsewhere / ".mneme").exists()
