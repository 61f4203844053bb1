"""Bad input gets mneme's own clear error, at every door, and changes nothing."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.errors import InputError
from mneme.graph import build_graph
from mneme.memory.api import Memory, read_message
from tests.fakes import HashEmbeddings, ScriptedChatModel
from tests.hostile import snapshot

HI = {"messages": [{"role": "user", "content": "hi"}]}
CONFIG = {"configurable": {"thread_id": "t"}}


# -- 1. Context: every field's type and allowed values ------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("budget_history", "lots", "a whole number"),
        ("budget_history", 4096.5, "a whole number"),
        ("retrieval_limit", True, "a whole number"),
        ("min_relevance", "x", "a finite number"),
        ("min_relevance", math.nan, "a finite number"),
        ("extraction", "sometimes", "one of 'inline', 'deferred', 'off'"),
        ("memory_position", "top", "one of 'system', 'user'"),
        ("redact_cn_id", "keep", "one of 'mask', 'drop'"),
        ("debug", "yes", "true or false"),
        ("user_id", 42, "a string"),
        ("model", None, "a string"),
    ],
)
def test_a_context_field_of_the_wrong_type_or_value_is_named(field: str, value: Any, allowed: str) -> None:
    with pytest.raises(InputError) as caught:
        Context(**{field: value})
    message = str(caught.value)
    assert f"context field {field} " in message
    assert allowed in message and repr(value) in message


def test_a_bad_environment_default_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEME_BUDGET_HISTORY", "lots")
    with pytest.raises(
        InputError, match=r"budget_history \(from MNEME_BUDGET_HISTORY\) must be a whole number"
    ):
        Context()
    monkeypatch.setenv("MNEME_EXTRACTION", "sometimes")
    monkeypatch.setenv("MNEME_BUDGET_HISTORY", "2048")
    with pytest.raises(InputError, match=r"extraction .* must be one of 'inline', 'deferred', 'off'"):
        Context()


def test_good_values_still_pass_and_a_whole_number_is_a_float_where_one_is_expected() -> None:
    ctx = Context(min_relevance=1, w_speaker=2, extraction="deferred", debug=True, budget_history=2048)
    assert ctx.min_relevance == 1.0 and isinstance(ctx.min_relevance, float)
    assert isinstance(ctx.w_speaker, float) and ctx.extraction == "deferred" and ctx.budget_history == 2048
    assert Context.from_any({"user_id": "u", "min_relevance": 0}).min_relevance == 0.0


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"budget_history": "lots"}, "budget_history"),
        ({"min_relevance": "x"}, "min_relevance"),
        ({"extraction": "sometimes"}, "extraction"),
    ],
)
def test_a_graph_run_with_a_bad_context_is_refused_before_it_touches_memory(
    mem_store: InMemoryStore, context: dict[str, Any], field: str
) -> None:
    g = build_graph(model=ScriptedChatModel.script("ok", "ok"), checkpointer=InMemorySaver(), store=mem_store)
    g.invoke({"messages": [{"role": "user", "content": "我不吃辣"}]}, CONFIG, context={"user_id": "u"})
    before = snapshot(mem_store)
    assert before  # a memory that retrieval would have ranked
    with pytest.raises(InputError, match=f"context field {field} must be"):
        g.invoke(HI, {"configurable": {"thread_id": "t2"}}, context={"user_id": "u", **context})
    assert snapshot(mem_store) == before


# -- 2. Messages: mneme's own short sentence, at every door -------------------------------


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"content": "hi"}], "mneme: message 0 has no role; expected one of user/assistant/system/tool"),
        (
            [{"role": "user", "content": "ok"}, {"role": "wizard", "content": "hi"}],
            "mneme: message 1 has an unknown role 'wizard'; expected one of user/assistant/system/tool",
        ),
        ([{"role": ["user"], "content": "hi"}], "mneme: message 0 has an unknown role of type list"),
        ([{"role": "user"}], "mneme: message 0 has no content"),
        ([{"role": "tool", "content": "42"}], "mneme: message 0 is a tool result without a tool_call_id"),
        ([{"role": "user", "content": 5}], "mneme: message 0 cannot be read: content: Input should be"),
    ],
)
def test_a_malformed_message_is_refused_in_mnemes_words_and_stores_nothing(
    memory: Memory, messages: list[dict[str, Any]], expected: str
) -> None:
    memory.add("我不吃辣", user_id="u")
    before = snapshot(memory.store)
    with pytest.raises(InputError) as caught:
        memory.add(messages, user_id="u")
    message = str(caught.value)
    assert message.startswith(expected)
    assert "http" not in message and "\\u000a" not in message and "\n" not in message
    assert snapshot(memory.store) == before


def test_the_accepted_role_names_and_forms_still_read() -> None:
    assert read_message({"role": "human", "content": "a"}).type == "human"
    assert read_message({"type": "ai", "content": "b"}).type == "ai"
    assert read_message({"role": "developer", "content": "c"}).type == "system"
    assert read_message({"role": "tool", "content": "d", "tool_call_id": "c1"}).type == "tool"
    assert read_message(("user", "e")).type == "human" and read_message("f").type == "human"
    with pytest.raises(InputError, match="message 3 has an unknown role 'wizard'"):
        read_message(("wizard", "g"), 3)


def test_rest_answers_a_malformed_message_with_the_same_short_422(memory: Memory) -> None:
    from mneme.server.app import create_app
    from mneme.server.auth import KeyRing
    from mneme.server.ratelimit import RateLimiter
    from tests.unit.test_fuzz import StoreBackend

    key = "bad-input-operator-key-01"
    app = create_app(StoreBackend(memory), keys=KeyRing({key: None}), rate_limit=RateLimiter(0, 1))
    with TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {key}"}) as client:
        resp = client.post("/v1/users/u/memories", json={"messages": [{"content": "hi"}]})
    assert resp.status_code == 422
    assert resp.json()["detail"] == "message 0 has no role; expected one of user/assistant/system/tool"
    assert memory.get_all(user_id="u") == []


def test_a_graph_input_with_an_unknown_role_is_an_input_error(mem_store: InMemoryStore) -> None:
    g = build_graph(model=ScriptedChatModel.script("ok"), checkpointer=InMemorySaver(), store=mem_store)
    with pytest.raises(InputError, match="message 0 has an unknown role 'wizard'"):
        g.invoke({"messages": [{"role": "wizard", "content": "hi"}]}, CONFIG, context={"user_id": "u"})
    assert g.invoke(HI, CONFIG, context={"user_id": "u"})["messages"]  # the thread still works


# -- 3. A graph run without a thread_id ---------------------------------------------------


def test_a_graph_run_without_a_thread_id_is_an_input_error(mem_store: InMemoryStore) -> None:
    g = build_graph(model=ScriptedChatModel.script("ok"), checkpointer=InMemorySaver(), store=mem_store)
    with pytest.raises(InputError, match=r"thread_id is required"):
        g.invoke(HI, context={"user_id": "u"})


# -- 4. A home folder that cannot be created ----------------------------------------------


def test_a_home_that_cannot_be_created_is_an_input_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    home = blocker / "home"
    with pytest.raises(InputError, match=f"cannot use {home} as the home folder"):
        Memory.open(home, embeddings=HashEmbeddings())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"] and blocker.read_text() == "not a folder"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_home_under_proc_is_an_input_error() -> None:
    with pytest.raises(InputError, match="cannot use /proc/nope as the home folder"):
        Memory.open(home="/proc/nope", embeddings=HashEmbeddings())


# -- 5. MCP: arguments that fail the tool's schema ----------------------------------------


def test_mcp_refuses_bad_arguments_in_one_short_line_and_saves_nothing(memory: Memory) -> None:
    from mcp import Client

    from mneme.mcp_server import build_server
    from mneme.memory.aio import AsyncMemory

    aio = AsyncMemory(memory)
    before = snapshot(memory.store)

    async def call(name: str, args: dict[str, Any]) -> str:
        async with Client(build_server(aio, "ann")) as client:
            result = await client.call_tool(name, args)
        assert result.is_error
        return str(getattr(result.content[0], "text", ""))

    async def calls() -> list[str]:
        return [
            await call("save_memory", {"text": "my cat is Mimi", "kind": "feeling"}),
            await call("search_memory", {"query": "cat", "limit": 500}),
            await call("search_memory", {}),
            await call("save_memory", {"text": "  "}),
        ]

    try:
        kind, limit, missing, empty = asyncio.run(calls())
    finally:
        aio._pool.shutdown(wait=True)
    assert (
        kind == "Error executing tool save_memory: kind: Input should be 'profile', 'semantic' or 'episodic'"
    )
    assert limit == "Error executing tool search_memory: limit: Input should be less than or equal to 50"
    assert missing == "Error executing tool search_memory: query: Field required"
    for text in (kind, limit, missing):
        assert "pydantic" not in text and "http" not in text and "feeling" not in text and "\n" not in text
    assert (
        empty == "Error executing tool save_memory: the memory text is empty"
    )  # mneme's own errors as before
    assert snapshot(memory.store) == before
