"""A real OpenAI-compatible server: llama.cpp (`xllamacpp`) serving SmolLM2-135M, nothing scripted.

A 135M model says nonsense and rambles to its token cap, so these tests assert only what must
hold whatever it says: every turn ends with a reply; a reply that fails validation is retried
once, then its job is queued, never lost; nothing unvalidated is written; no memory of one user
reaches another's requests; every request fits the budget (as the server counts it); a server
that is down or too slow gives a clear error or a queued job. The server runs greedy
(temperature 0), so the same run gives the same replies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from langchain_openai import ChatOpenAI

from mneme import models
from mneme.context import Context
from mneme.errors import ModelError
from mneme.graph import build_graph
from mneme.home import Home, open_home
from mneme.memory.api import Memory
from mneme.memory.gate import STATS
from mneme.memory.llm_extract import CUT_OFF
from mneme.memory.pipeline import rules
from mneme.middleware import MemoryMiddleware
from tests.llama_server import MODEL_NAME, LlamaServer, free_port, llama_server, missing

pytestmark = pytest.mark.integration

MODEL = f"openai:{MODEL_NAME}"
SYSTEM = "You are a helpful assistant. Answer in one or two short sentences."
TIGHT = {
    "system_prompt": SYSTEM,
    "context_window": 640,
    "budget_system": 64,
    "budget_memory": 160,
    "budget_summary": 96,
    "budget_history": 256,
    "budget_output": 64,
}
"""A small window, so that the memories and history really are cut to fit it."""
LIMIT = TIGHT["context_window"] - TIGHT["budget_output"]
EXTRACTION = "You maintain the long-term memory"
OPS = {"ADD", "SUPERSEDE", "NOOP", "DELETE", "REFUSE", "QUEUED"}
CJK = re.compile(r"[\u4e00-\u9fff]")
SEED = [
    "我对猫毛过敏",
    "我住在杭州西湖区",
    "我每天早上喝一杯美式咖啡",
    "周末我常去爬山",
    "我的生日是五月八号",
    "I play the cello in a community orchestra",
    "My sister Lena is a nurse in Munich",
    "I am learning Japanese on weekday evenings",
]


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    reason = missing()
    if reason:
        pytest.fail(reason, pytrace=False)
    with llama_server(n_predict=32) as server:  # a weak model rambles to the cap: keep it short
        yield server
    models._cache.pop(MODEL, None)  # the cached client points at this server


@pytest.fixture
def real(llama: LlamaServer, monkeypatch: pytest.MonkeyPatch) -> LlamaServer:
    """`OPENAI_BASE_URL` points at the server (as a user would set it)."""
    monkeypatch.setenv("OPENAI_BASE_URL", llama.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    return llama


@pytest.fixture
def opened(home: Path) -> Home:
    return open_home(home)


def chat_model(server: LlamaServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL_NAME, base_url=server.base_url, api_key="sk-local-test", max_retries=0, **kwargs
    )  # type: ignore[arg-type]


@dataclass
class Call:
    request: list[BaseMessage]
    reply: AIMessage | None = None
    error: BaseException | None = None

    @property
    def extraction(self) -> bool:
        return bool(self.request) and str(self.request[0].content).startswith(EXTRACTION)


@dataclass(eq=False)
class Recorder(BaseCallbackHandler):
    """Every model request of a run and what came back (LangChain callbacks)."""

    calls: list[Call] = field(default_factory=list)
    _open: dict[UUID, Call] = field(default_factory=dict)

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        call = Call(request=list(messages[0]))
        self._open[run_id] = call
        self.calls.append(call)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        message = getattr(response.generations[0][0], "message", None)
        self._open.pop(run_id).reply = message if isinstance(message, AIMessage) else None

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._open.pop(run_id).error = error

    def take(self) -> list[Call]:
        calls, self.calls = self.calls, []
        return calls


def check_turn(out: dict[str, Any], calls: list[Call], text: str, memory: Memory, user: str) -> None:
    """What must hold for one turn, whatever the model said."""
    reply = out["messages"][-1]
    assert isinstance(reply, AIMessage) and str(reply.content).strip(), "the turn ended without a reply"
    chats = [c for c in calls if not c.extraction]
    assert chats and all(c.reply is not None for c in chats)
    for c in chats:  # inside the budget, counted by the server's own tokenizer
        assert c.reply is not None and c.reply.usage_metadata is not None
        assert c.reply.usage_metadata["input_tokens"] <= LIMIT, c.reply.usage_metadata
    assert out["token_usage"]["total"] <= LIMIT
    extractions = [c for c in calls if c.extraction]
    assert len(extractions) <= 2, "one retry at most"
    if len(extractions) == 2:  # the retry carries the first reply's validation error
        assert "Your reply could not be used:" in str(extractions[1].request[-1].content)
    ops = [w["operation"] for w in out["writes"]]
    assert set(ops) <= OPS, ops
    written = {w["text"] for w in out["writes"] if w["operation"] in ("ADD", "SUPERSEDE")}
    if "QUEUED" in ops:  # the model's replies were refused: only the offline rules wrote
        assert len(extractions) == 2
        assert written <= {c.text for c in rules([text])}
        [job] = [j for j in memory.pending(user_id=user) if j.id == out["writes"][ops.index("QUEUED")]["id"]]
        assert [m["content"] for m in job.messages] == [text] and job.attempts == 1
    elif extractions:  # what was written passed validation: from the accepted reply or the rules
        accepted = extractions[-1].reply
        assert accepted is not None
        said = str(accepted.content) + " ".join(c.text for c in rules([text]))
        assert all(t in said for t in written), (written, said)
    for t in written:  # validation keeps the user's language
        assert bool(CJK.search(t)) == bool(CJK.search(text)), t


def test_the_graph_on_a_real_server(real: LlamaServer, opened: Home) -> None:
    memory = Memory(opened.store, context=Context(extractor="rules"))
    for text in SEED:  # profile fields and facts, by the offline rules
        memory.add(text, user_id="ana")
    graph = build_graph(model=MODEL, checkpointer=opened.checkpointer(), store=opened.store, tools=[])
    recorder = Recorder()
    for user, thread, text in [
        ("ana", "s1", "我不吃辣，以后都发顺丰。今晚推荐什么菜？"),
        ("ana", "s2", "What should I cook tonight, given what I can't eat?"),
        ("ben", "s3", "推荐一道菜吧，我平时喜欢什么？"),
    ]:
        out = graph.invoke(
            {"messages": [{"role": "user", "content": text}]},
            {"configurable": {"thread_id": thread}, "callbacks": [recorder]},
            context={"user_id": user, **TIGHT},
        )
        calls = recorder.take()
        check_turn(out, calls, text, memory, user)
        if user == "ana":
            assert out["memories"], "ana's profile fields at least are injected"
            if thread == "s2":  # the new session starts with the last one's recap
                assert out["recaps"] and out["recaps"][0]["thread_id"] == "s1"
        else:  # nothing of ana's reaches ben: not injected, not in any request
            assert out["memories"] == []
            ana = SEED + [r.text for r in memory.get_all(user_id="ana")]
            sent = "\n".join(str(m.content) for c in calls for m in c.request)
            assert not [t for t in ana if t in sent]


def test_memory_add_through_the_real_server(real: LlamaServer, opened: Home) -> None:
    memory = Memory(opened.store, model=MODEL)
    for text in ["我下周三要去上海出差，住在外滩附近", "My daughter Mia starts school on Monday"]:
        before = STATS.snapshot()
        changes = memory.add(text, user_id="cleo", session_id="add")
        after = STATS.snapshot()
        calls = after["llm_calls"] - before["llm_calls"]
        assert 1 <= calls <= 2
        ops = [c.operation for c in changes]
        assert set(ops) <= OPS
        if "QUEUED" in ops:
            assert calls == 2  # retried once, then queued
            [job] = [j for j in memory.pending(user_id="cleo") if j.messages[0]["content"] == text]
            assert job.last_error
        for c in changes:
            if c.operation in ("ADD", "SUPERSEDE"):
                assert bool(CJK.search(c.text)) == bool(CJK.search(text)), c.text
    other = memory.search("出差 school", user_id="dora", limit=10)
    assert other == []


def test_a_cut_off_reply_is_retried_once_then_queued_never_lost(real: LlamaServer, opened: Home) -> None:
    recorder = Recorder()
    cut = chat_model(real, max_tokens=3, callbacks=[recorder])  # every reply is cut off
    memory = Memory(opened.store, model=cut)
    text = "我下周三要去上海出差"
    changes = memory.add(text, user_id="eve", session_id="cut")
    assert changes[-1].operation == "QUEUED" and CUT_OFF in (changes[-1].reason or "")
    assert [c.text for c in changes[:-1]] == [c.text for c in rules([text])]  # the rules' part only
    first, second = recorder.take()
    assert first.error is not None and CUT_OFF in str(second.request[-1].content)
    [job] = memory.pending(user_id="eve")
    assert job.messages[0]["content"] == text and job.attempts == 1
    memory.retry_pending(user_id="eve", force=True)  # the same broken model: still queued, not dropped
    [job] = memory.pending(user_id="eve")
    assert job.attempts == 2 and job.messages[0]["content"] == text


def test_the_middleware_on_a_real_server(real: LlamaServer, opened: Home) -> None:
    chat = chat_model(real, timeout=120)
    agent = create_agent(
        chat,
        [],
        system_prompt=SYSTEM,
        middleware=[MemoryMiddleware(model=chat)],
        store=opened.store,
        checkpointer=opened.checkpointer(),
    )
    memory = Memory(opened.store, context=Context(extractor="rules"))
    recorder = Recorder()
    for user, thread, text in [
        ("fay", "m1", "I am allergic to peanuts, so no peanuts in my snacks please"),
        ("fay", "m2", "What snacks should I bring to the party?"),
        ("gus", "m3", "我能吃花生吗？"),
    ]:
        out = agent.invoke(
            {"messages": [{"role": "user", "content": text}]},
            {"configurable": {"thread_id": thread}, "callbacks": [recorder]},
            context={"user_id": user, **TIGHT},
        )
        calls = recorder.take()
        check_turn(out, calls, text, memory, user)
        sent = "\n".join(str(m.content) for c in calls for m in c.request)
        if thread == "m2":
            assert "peanuts" in sent.lower()  # fay's allergy reached her next session's request
        if user == "gus":
            assert "peanut" not in sent.lower() and out["memories"] == []


def test_a_server_that_is_down_or_slow(real: LlamaServer, opened: Home) -> None:
    down = ChatOpenAI(
        model=MODEL_NAME,
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key="sk-x",
        max_retries=0,
        timeout=5,  # type: ignore[arg-type]
    )
    slow = chat_model(real, timeout=0.05)  # no reply comes back in 50 ms
    for model, error in [(down, "ConnectionError"), (slow, "TimeoutError")]:
        graph = build_graph(model=model, checkpointer=opened.checkpointer(), store=opened.store, tools=[])
        with pytest.raises(ModelError, match=f"did not answer: [A-Za-z]*{error}"):
            graph.invoke(
                {"messages": [{"role": "user", "content": "你好"}]},
                {"configurable": {"thread_id": f"down-{error}"}},
                context={"user_id": "hal"},
            )
        memory = Memory(opened.store, model=model, context=Context(extractor="llm"))
        changes = memory.add("I moved to Lisbon in March", user_id="hal", session_id=error)
        assert changes[-1].operation == "QUEUED" and error in (changes[-1].reason or "")
        assert any(j.session_id == error for j in memory.pending(user_id="hal"))
    # With LangChain's fallback middleware, the agent still answers through the real server.
    agent = create_agent(
        down,
        [],
        system_prompt=SYSTEM,
        middleware=[MemoryMiddleware(), ModelFallbackMiddleware(chat_model(real, max_tokens=24))],
        store=opened.store,
        checkpointer=opened.checkpointer(),
    )
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "Hello!"}]},
        {"configurable": {"thread_id": "fallback"}},
        context={"user_id": "hal"},
    )
    assert isinstance(out["messages"][-1], AIMessage) and str(out["messages"][-1].content).strip()
