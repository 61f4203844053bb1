"""Deferred extraction: the reply never waits, jobs are persisted first, retried, never duplicated."""

from __future__ import annotations

import json
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from mneme.context import Context
from mneme.memory.api import Memory
from mneme.memory.pipeline import Pipeline
from mneme.memory.queue import PendingQueue
from mneme.memory.worker import BackgroundWorker, worker
from mneme.nodes import make_extract_memories
from mneme.state import State
from mneme.store.chroma import ChromaStore
from tests.fakes import ScriptedChatModel

DEFERRED = Context(user_id="u", extraction="deferred", extractor="llm")


class SlowModel(ScriptedChatModel):
    """A scripted model that takes its time, like a real one."""

    delay: float = 1.5

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super()._generate(*args, **kwargs)


def reply(text: str) -> str:
    return json.dumps({"memories": [{"op": "add", "text": text}]}, ensure_ascii=False)


def turn(text: str, mid: str) -> State:
    return State(messages=[HumanMessage(content=text, id=mid), AIMessage(content="好的")], turn_start=mid)


def test_the_reply_does_not_wait_for_extraction(chroma_store: ChromaStore) -> None:
    model = SlowModel(messages=iter([AIMessage(content=reply("喜欢靠窗的座位"))]))
    node = make_extract_memories(model)
    started = time.perf_counter()
    out = node(turn("我喜欢靠窗的座位", "h1"), runtime=Runtime(context=DEFERRED, store=chroma_store))
    assert time.perf_counter() - started < model.delay / 2
    [write] = out["writes"]
    assert write["operation"] == "DEFERRED"
    memory = Memory(chroma_store)
    assert [j.id for j in memory.pending(user_id="u")] == [write["id"]]  # persisted before the work
    assert worker().flush(timeout=30)
    assert [r.text for r in memory.get_all(user_id="u")] == ["喜欢靠窗的座位"]
    assert memory.pending(user_id="u") == []


def test_the_same_turn_deferred_twice_is_one_job_and_one_memory(chroma_store: ChromaStore) -> None:
    model = ScriptedChatModel.script(reply("不吃辣"), reply("不吃辣"))
    node = make_extract_memories(model)
    runtime = Runtime(context=DEFERRED, store=chroma_store)
    first = node(turn("我不吃辣", "h7"), runtime=runtime)
    second = node(turn("我不吃辣", "h7"), runtime=runtime)
    assert first["writes"][0]["id"] == second["writes"][0]["id"]
    assert worker().flush(timeout=30)
    memory = Memory(chroma_store)
    assert [r.text for r in memory.get_all(user_id="u")] == ["不吃辣"]
    assert [h["operation"] for h in memory.export(user_id="u")["history"]] == ["ADD"]


def test_a_job_left_by_a_crash_is_run_by_the_next_worker(chroma_store: ChromaStore) -> None:
    # a process persisted a job, then died before its worker ran it
    dead = Pipeline(chroma_store, Context(), "offline")
    job = dead.job("u", [{"role": "user", "content": "我住在杭州", "id": "m1"}], session_id="s")
    dead.queue.put(job)
    # a new process submits another turn: its worker drains what was left first
    fresh = BackgroundWorker()
    other = dead.job("u", [{"role": "user", "content": "我不吃辣", "id": "m2"}], session_id="s")
    PendingQueue(chroma_store).put(other)
    fresh.submit(chroma_store, other, context=Context(), model="offline")
    assert fresh.flush(timeout=30)
    memory = Memory(chroma_store)
    assert sorted(r.text for r in memory.get_all(user_id="u")) == ["不吃辣", "住在杭州"]
    assert memory.pending(user_id="u") == [] and fresh.failures == 0
    # running a finished job again (a crash after the writes, before `done`) duplicates nothing
    assert [c.operation for c in dead.run(job)] == ["NOOP"]


def test_a_failing_job_stays_queued_with_its_error_and_a_later_retry(chroma_store: ChromaStore) -> None:
    node = make_extract_memories(ScriptedChatModel.script("oops", "oops"))
    node(
        turn("Actually I now prefer tea over coffee", "h3"),
        runtime=Runtime(context=DEFERRED, store=chroma_store),
    )
    assert worker().flush(timeout=30)
    memory = Memory(chroma_store)
    [job] = memory.pending(user_id="u")
    assert job.attempts == 1 and "no JSON object" in (job.last_error or "")
    assert job.next_at > job.created_at
    # the offline rules wrote what they could meanwhile
    assert [r.text for r in memory.get_all(user_id="u")] == ["Prefers tea over coffee"]
    fixed = Memory(
        chroma_store,
        model=ScriptedChatModel.script(reply("Prefers tea over coffee")),
        context=Context(extractor="llm"),
    )
    assert [c.operation for c in fixed.retry_pending(force=True)] == ["NOOP"]
    assert fixed.pending() == []


def test_a_group_turn_is_deferred_per_speaker(chroma_store: ChromaStore) -> None:
    lines = [{"sender": "alice", "content": "我不吃辣"}, {"sender": "bob", "content": "我住在上海"}]
    message = HumanMessage(content="...", id="g1", additional_kwargs={"group_messages": lines})
    ctx = Context(user_id="room", extraction="deferred")
    out = make_extract_memories("offline")(
        State(messages=[message], turn_start="g1"), runtime=Runtime(context=ctx, store=chroma_store)
    )
    assert len(out["writes"]) == 2
    assert worker().flush(timeout=30)
    memory = Memory(chroma_store)
    assert [r.text for r in memory.get_all(user_id="alice")] == ["不吃辣"]
    assert [r.text for r in memory.get_all(user_id="bob")] == ["住在上海"]
    assert memory.get_all(user_id="alice")[0].metadata == {"group": True}


def test_a_deferred_turn_keeps_what_was_said_before_it_for_its_pronouns(chroma_store: ChromaStore) -> None:
    node = make_extract_memories("offline")
    context = Context(user_id="u", extraction="deferred", extractor="rules")
    state = State(
        messages=[
            HumanMessage(content="我老公在阿里工作", id="h1"),
            AIMessage(content="好的"),
            HumanMessage(content="他上个月跳槽去腾讯了", id="h2"),
            AIMessage(content="好的"),
        ],
        turn_start="h2",
    )
    [write] = node(state, runtime=Runtime(context=context, store=chroma_store))["writes"]
    memory = Memory(chroma_store)
    [job] = memory.pending(user_id="u")
    assert job.id == write["id"] and job.before == ["我老公在阿里工作"]  # persisted with the job
    assert worker().flush(timeout=60)
    assert any("我老公" in r.text and "腾讯" in r.text for r in memory.get_all(user_id="u"))
