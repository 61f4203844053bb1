"""`build_context` latency with 500 turns of history, and tokens sent against the full history.

A thread of 500 turns (LoCoMo dialogue lines as user and assistant messages, one turn in five
with two parallel tool calls and their results, 8 memories retrieved) is held in the state
unsummarized, the worst case for context assembly: the node must pick the newest whole turns
that fit. Timed cold (token-count cache cleared before each call: every message counted) and
warm (the usual case: earlier turns were counted in earlier turns). The ratio compares the
tokens of the request with the tokens the full history would have needed.
Run: `python -m benchmarks.build_context [--turns 500] [--runs 200]`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from benchmarks.common import locomo, locomo_turns, summary, write_result
from mneme import tokens
from mneme.context import Context
from mneme.nodes.build_context import build_context, counter_of, render, system_prompt
from mneme.state import State


def thread(turns: int) -> list[AnyMessage]:
    """`turns` user turns of real dialogue, with tool rounds now and then."""
    lines = [t["text"] for s in locomo() for t in locomo_turns(s)]
    msgs: list[AnyMessage] = []
    for i in range(turns):
        msgs.append(HumanMessage(content=lines[(2 * i) % len(lines)], id=f"h{i}"))
        if i % 5 == 0:
            calls = [
                {
                    "name": "lookup_order",
                    "args": {"order_id": f"2024{i:07d}{k}"},
                    "id": f"c{i}{k}",
                    "type": "tool_call",
                }
                for k in range(2)
            ]
            msgs.append(AIMessage(content="", tool_calls=calls, id=f"ai{i}"))
            for k, call in enumerate(calls):
                result = {
                    "order_id": call["args"]["order_id"],
                    "status": "shipped",
                    "courier": "SF",
                    "item": "headset",
                }
                msgs.append(ToolMessage(content=json.dumps(result), tool_call_id=call["id"], id=f"t{i}{k}"))
        msgs.append(AIMessage(content=lines[(2 * i + 1) % len(lines)], id=f"a{i}"))
    return msgs


def memories(n: int = 8) -> list[dict[str, Any]]:
    texts = ["不吃辣", "快递偏好：以后都发顺丰", "Lives in Berlin", "Prefers aisle seats"]
    return [
        {
            "ref": i + 1,
            "id": f"m{i}",
            "who": "",
            "kind": "semantic",
            "text": texts[i % len(texts)],
            "score": 0.7,
        }
        for i in range(n)
    ]


def run(turns: int = 500, runs: int = 200) -> dict[str, Any]:
    ctx = Context(user_id="bench", model="offline")
    counter = counter_of(ctx)
    msgs = thread(turns)
    msgs[-1:] = []  # the newest turn ends with the user's message: the state build_context sees
    msgs.append(HumanMessage(content="And what did we decide about the trip?", id="last"))
    state = State(
        messages=msgs,
        memories=memories(),
        summary="- User: order 20240508001, shipped; prefers SF Express",
        task={"intent": "order_status", "slots": {"order_id": "20240508001"}},
    )
    runtime = Runtime(context=ctx)
    cold, warm = [], []
    for _ in range(runs):
        tokens._count_cached.cache_clear()
        t0 = time.perf_counter()
        build_context(state, runtime)
        cold.append((time.perf_counter() - t0) * 1000)
    for _ in range(runs):
        t0 = time.perf_counter()
        out = build_context(state, runtime)
        warm.append((time.perf_counter() - t0) * 1000)
    request, usage = render(state, ctx, counter)
    full = counter.count_messages([SystemMessage(content=system_prompt(ctx)), *msgs])
    return {
        "turns_in_history": turns,
        "messages_in_history": len(msgs),
        "runs": runs,
        "build_context_ms_cold": summary(cold),
        "build_context_ms_warm": summary(warm),
        "request_tokens": usage["total"],
        "full_history_tokens": full,
        "ratio_full_over_sent": round(full / usage["total"], 1),
        "messages_sent": len(request),
        "usage": out["token_usage"],
        "context": {"context_window": ctx.context_window, "budget_history": ctx.budget_history},
        "token_counter": "offline (o200k_base estimate +25%)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="50 runs instead of 200")
    args = parser.parse_args()
    result = run(args.turns, 50 if args.quick else args.runs)
    path = write_result("build_context", result)
    cold, warm = result["build_context_ms_cold"], result["build_context_ms_warm"]
    print(
        f"build_context at {result['turns_in_history']} turns of history ({result['messages_in_history']} messages):"
    )
    print(
        f"  cold cache p50 {cold['p50']} ms, p95 {cold['p95']} ms; warm p50 {warm['p50']} ms, p95 {warm['p95']} ms"
    )
    print(
        f"  request {result['request_tokens']} tokens vs full history {result['full_history_tokens']}: "
        f"{result['ratio_full_over_sent']}x fewer -> {path}"
    )


if __name__ == "__main__":
    main()
