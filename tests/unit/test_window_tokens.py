"""Token counting and budgeted windows that never split a tool call from its result."""

from __future__ import annotations

import os
import subprocess
import sys

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mneme.tokens import counter_for, encoding_name_for
from mneme.window import fit_messages, split_turns, window_start

COUNTER = counter_for("openai:gpt-4o-mini")


def test_counts_are_exact_for_openai_models() -> None:
    assert encoding_name_for("openai:gpt-4o-mini") == ("o200k_base", True)
    assert encoding_name_for("gpt-4") == ("cl100k_base", True)
    assert COUNTER.count("hello world") == 2
    assert counter_for("gpt-4").count("hello world") == 2


def test_other_models_get_a_conservative_estimate() -> None:
    estimate = counter_for("offline")
    assert not estimate.exact
    assert estimate.count("hello world, how are you") > COUNTER.count("hello world, how are you")


def test_encodings_load_without_network(tmp_path) -> None:
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    code = "from mneme.tokens import get_encoding; print(len(get_encoding('cl100k_base').encode('你好世界')))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 0


def _thread() -> list:
    msgs: list = []
    for i in range(6):
        msgs.append(HumanMessage(content=f"question {i} " * 20, id=f"h{i}"))
        if i % 2:
            msgs.append(
                AIMessage(
                    content="",
                    id=f"c{i}",
                    tool_calls=[
                        {
                            "name": "lookup_order",
                            "args": {"order_id": str(i)},
                            "id": f"t{i}a",
                            "type": "tool_call",
                        },
                        {
                            "name": "lookup_order",
                            "args": {"order_id": str(i + 1)},
                            "id": f"t{i}b",
                            "type": "tool_call",
                        },
                    ],
                )
            )
            msgs.append(ToolMessage(content="result " * 30, tool_call_id=f"t{i}a", id=f"r{i}a"))
            msgs.append(ToolMessage(content="result " * 30, tool_call_id=f"t{i}b", id=f"r{i}b"))
        msgs.append(AIMessage(content=f"answer {i} " * 20, id=f"a{i}"))
    return msgs


def test_turns_start_at_user_messages_and_keep_tool_pairs() -> None:
    turns = split_turns(_thread())
    assert len(turns) == 6
    assert all(isinstance(t[0], HumanMessage) for t in turns)
    for turn in turns:
        calls = {c["id"] for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in turn if isinstance(m, ToolMessage)}
        assert calls == results


def test_window_keeps_newest_whole_turns_within_budget() -> None:
    msgs = _thread()
    sizes = []
    for budget in (200, 400, 800, 5000):
        window = fit_messages(msgs, budget, COUNTER)
        assert isinstance(window[0], HumanMessage)
        assert window[-1].id == msgs[-1].id
        assert sum(COUNTER.count_message(m) for m in window) <= budget
        assert [m.id for m in window] == [m.id for m in msgs[window_start(msgs, budget, COUNTER) :]]
        sizes.append(len(window))
    assert sizes == sorted(sizes) and sizes[-1] == len(msgs)


def test_a_huge_last_message_is_shortened_with_a_marker() -> None:
    msgs = [HumanMessage(content="x " * 50_000, id="big")]
    [short] = fit_messages(msgs, 500, COUNTER)
    assert COUNTER.count_message(short) <= 500
    assert "omitted by mneme" in short.content
    assert msgs[0].content == "x " * 50_000  # the stored message is untouched
