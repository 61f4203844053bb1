"""Threads run by `mneme chat` and `mneme demo` hold no object LangGraph's checkpoint serializer does not know."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from mneme.cli import app
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.state import InputState
from tests.fakes import HashEmbeddings

UNREGISTERED = "Deserializing unregistered type"


@pytest.fixture
def unregistered(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The types read back from a checkpoint that LangGraph says it will block, as they are read."""
    monkeypatch.setattr(jsonplus, "_warned_unregistered_types", set())  # it warns once a process
    caplog.set_level(logging.WARNING, logger="langgraph.checkpoint.serde.jsonplus")
    seen: list[str] = []

    def note(event: SerdeEvent) -> None:
        if event["kind"] == "msgpack_unregistered_allowed":
            seen.append(f"{event['module']}.{event['name']}")

    unregister = register_serde_event_listener(note)
    yield seen
    unregister()
    warned = [r.getMessage() for r in caplog.records if UNREGISTERED in r.getMessage()]
    assert warned == [], warned


def test_a_second_chat_turn_reads_back_no_unregistered_type(home: Path, unregistered: list[str]) -> None:
    opened = open_home(home, embeddings=HashEmbeddings())  # the chat shares it: no model to load
    try:
        out = CliRunner().invoke(
            app,
            ["chat", "--user", "ann", "--session", "s1", "--home", str(home), "--model", "offline"],
            input="我叫小安，我不吃辣\n我刚才说我叫什么？\n",
        )
        assert out.exit_code == 0, out.output
        assert UNREGISTERED not in out.output
        assert unregistered == []
        graph = build_graph(checkpointer=opened.checkpointer(), store=opened.store)
        said = [m.content for m in graph.get_state({"configurable": {"thread_id": "s1"}}).values["messages"]]
    finally:
        opened.close()
    assert said[0] == "我叫小安，我不吃辣"
    assert said[2] == "我刚才说我叫什么？"  # the second turn saw the first


def test_the_demo_reads_back_no_unregistered_type(home: Path, unregistered: list[str]) -> None:
    opened = open_home(home, embeddings=HashEmbeddings())
    try:
        out = CliRunner().invoke(app, ["demo", "--home", str(home), "--model", "offline"])
    finally:
        opened.close()
    assert out.exit_code == 0, out.output
    assert "快递偏好：以后都发顺丰" in out.output  # session-1's second turn ran on its first
    assert UNREGISTERED not in out.output
    assert unregistered == []


def test_an_input_state_object_is_checkpointed_as_plain_data(
    mem_store: InMemoryStore, unregistered: list[str]
) -> None:
    saver = InMemorySaver()
    graph = build_graph(model="offline", checkpointer=saver, store=mem_store)
    config = {"configurable": {"thread_id": "t1"}}
    for text in ("第一句", "第二句"):
        out = graph.invoke(
            InputState(messages=[HumanMessage(content=text)]), config, context=Context(user_id="ann")
        )
    assert [m.content for m in out["messages"] if m.type == "human"] == ["第一句", "第二句"]
    for saved in saver.list(config):
        assert not any(isinstance(v, InputState) for v in saved.checkpoint["channel_values"].values())
    assert unregistered == []
