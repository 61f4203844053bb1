"""A thread killed mid-turn resumes from its last checkpoint (messages are checkpointed as deltas)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from mneme.graph import build_graph
from tests.fakes import HashEmbeddings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = {"user_id": "ann", "extractor": "rules"}
CONFIG = {"configurable": {"thread_id": "t1"}}
WHOLE_THREAD = [
    ("human", "I live in Lyon"),
    ("ai", "reply one"),
    ("human", "My order number is 20240508001"),
    ("ai", "reply two"),
    ("human", "thanks"),
    ("ai", "reply three"),
]

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from langchain_core.messages import AIMessage
    from mneme.graph import build_graph
    from tests.fakes import HashEmbeddings, ScriptedChatModel

    home, marks = sys.argv[1], Path(sys.argv[2])

    class Stalling(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if (marks / "stall").exists():
                (marks / "inside-node").touch()
                time.sleep(600)  # killed here, inside the `agent` node of turn 2
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    model = Stalling.script("reply one", "reply two")
    graph = build_graph(model=model, embeddings=HashEmbeddings(), home=home)
    ctx = {"user_id": "ann", "extractor": "rules"}
    cfg = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [{"role": "user", "content": "I live in Lyon"}]}, cfg, context=ctx)
    (marks / "stall").touch()
    graph.invoke({"messages": [{"role": "user", "content": "My order number is 20240508001"}]}, cfg, context=ctx)
    """
)


def _texts(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def test_a_turn_killed_inside_a_node_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    home = _kill_inside(CHILD, tmp_path)
    from tests.fakes import ScriptedChatModel

    graph = build_graph(
        model=ScriptedChatModel.script("reply two", "reply three"), embeddings=HashEmbeddings(), home=home
    )
    state = graph.get_state(CONFIG)
    # The killed turn stopped at the agent: its message is in the checkpoint, the reply is not.
    assert state.next == ("agent",)
    assert _texts(state.values["messages"]) == [
        ("human", "I live in Lyon"),
        ("ai", "reply one"),
        ("human", "My order number is 20240508001"),
    ]
    assert state.values["turn_start"] == state.values["messages"][-1].id

    out = graph.invoke(None, CONFIG, context=CONTEXT)  # resume: the turn finishes, nothing is doubled
    assert _texts(out["messages"])[-2:] == [("human", "My order number is 20240508001"), ("ai", "reply two")]
    out = graph.invoke({"messages": [{"role": "user", "content": "thanks"}]}, CONFIG, context=CONTEXT)
    assert _texts(out["messages"]) == WHOLE_THREAD
    again = graph.get_state(CONFIG).values["messages"]
    assert [m.id for m in again] == [m.id for m in out["messages"]]  # ids are stable across reads
    assert all(isinstance(m, BaseMessage) for m in again) and isinstance(again[-1], AIMessage)


INGEST_CHILD = textwrap.dedent(
    """
    import functools, sys, time
    from pathlib import Path
    import mneme.nodes
    from tests.fakes import HashEmbeddings, ScriptedChatModel

    home, marks = sys.argv[1], Path(sys.argv[2])
    plain = mneme.nodes.ingest

    @functools.wraps(plain)
    def ingest(*args, **kwargs):
        if (marks / "stall").exists():
            (marks / "inside-node").touch()
            time.sleep(600)  # killed here: turn 2's input is checkpointed, no node has run
        return plain(*args, **kwargs)

    mneme.nodes.ingest = ingest
    from mneme.graph import build_graph

    graph = build_graph(model=ScriptedChatModel.script("reply one"), embeddings=HashEmbeddings(), home=home)
    ctx = {"user_id": "ann", "extractor": "rules"}
    cfg = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [{"role": "user", "content": "I live in Lyon"}]}, cfg, context=ctx)
    (marks / "stall").touch()
    graph.invoke({"messages": [{"role": "user", "content": "My order number is 20240508001"}]}, cfg, context=ctx)
    """
)


def _kill_inside(child_code: str, tmp_path: Path) -> Path:
    """Run a child that stalls inside a node of its second turn, then kill -9 it there."""
    home, marks = tmp_path / "home", tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    child = subprocess.Popen([sys.executable, "-c", child_code, str(home), str(marks)], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (marks / "inside-node").exists():
            assert child.poll() is None, "the child process ended before reaching the node"
            assert time.monotonic() < deadline, "the child never reached the node of turn 2"
            time.sleep(0.05)
        time.sleep(0.5)  # the checkpoints of the steps before are written in the background
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    return home


@pytest.mark.parametrize("child_code", [CHILD, INGEST_CHILD], ids=["inside-node", "before-ingest"])
def test_the_next_message_after_a_kill_first_answers_the_killed_turn(child_code: str, tmp_path: Path) -> None:
    from tests.fakes import ScriptedChatModel

    home = _kill_inside(child_code, tmp_path)
    graph = build_graph(
        model=ScriptedChatModel.script("reply two", "reply three"), embeddings=HashEmbeddings(), home=home
    )
    # No explicit resume: the user just writes again, in a new process.
    out = graph.invoke({"messages": [{"role": "user", "content": "thanks"}]}, CONFIG, context=CONTEXT)
    assert _texts(out["messages"]) == WHOLE_THREAD
