"""The e-commerce story of `mneme demo`: two sessions of one user, then another user."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.memory.api import Memory
from mneme.models import model_name
from mneme.state import InputState

STORY: list[tuple[str, str, str]] = [
    ("user_123", "session-1", "你好，我昨天买了一个蓝牙耳机，订单号20240508001，发货了吗？"),
    ("user_123", "session-1", "麻烦以后都发顺丰。"),
    ("user_123", "session-2", "我之前那个耳机如果退货怎么处理？"),
    ("user_456", "session-3", "我之前那个耳机如果退货怎么处理？"),
]
"""(user, thread, message) in the order they are played."""


def _memories_table(title: str, memories: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False, expand=False)
    table.add_column("#", justify="right")
    table.add_column("kind")
    table.add_column("memory")
    table.add_column("score", justify="right")
    for m in memories:
        score = "profile" if m.get("score") is None else f"{m['score']:.2f}"
        table.add_row(str(m.get("ref", "")), m["kind"], m["text"], score)
    return table


def run_demo(
    home: str | Path | None = None, *, model: str | None = None, console: Console | None = None
) -> dict[str, Any]:
    """Play the story and print every turn, the memories injected and what was stored.

    Args:
        home: Data folder; default a fresh temporary one, so every run tells the same story.
        model: Chat model; default as in `build_graph`.
        console: Where to print.

    Returns:
        The replies and stored memories, for tests.
    """
    console = console or Console()
    tmp = None
    if home is None:
        tmp = tempfile.TemporaryDirectory(prefix="mneme-demo-")
        home = tmp.name
    started = time.perf_counter()
    opened = open_home(home)
    graph = build_graph(checkpointer=opened.checkpointer(), store=opened.store, model=model)
    console.print(Panel.fit(f"mneme demo · model: {model_name(model)} · home: {home}", style="bold"))
    replies: list[str] = []
    for user, thread, text in STORY:
        console.rule(f"[bold]{user}[/] · {thread}")
        console.print(f"[cyan]user:[/] {text}")
        t0 = time.perf_counter()
        out = graph.invoke(
            InputState(messages=[HumanMessage(content=text)]),
            {"configurable": {"thread_id": thread}},
            context=Context(user_id=user),
        )
        elapsed = time.perf_counter() - t0
        if out["memories"]:
            console.print(_memories_table("memories injected", out["memories"]))
        else:
            console.print("[dim]memories injected: none[/]")
        ids = [m.id for m in out["messages"]]
        start = ids.index(out["turn_start"]) if out["turn_start"] in ids else len(ids) - 1
        for msg in out["messages"][start:]:
            for call in getattr(msg, "tool_calls", None) or []:
                console.print(f"[yellow]tool call:[/] {call['name']}({call['args']})")
        reply = str(out["messages"][-1].content)
        replies.append(reply)
        console.print(f"[green]assistant:[/] {reply}")
        for w in out.get("writes", []):
            if w["operation"] != "NOOP":
                console.print(f"[magenta]stored:[/] {w['operation']} {w['text']}")
        console.print(f"[dim]{elapsed * 1000:.0f} ms, tokens {out['token_usage'].get('total', 0)}[/]")
    memory = Memory(opened.store)
    stored: dict[str, list[str]] = {}
    console.rule("what is stored")
    for user in ("user_123", "user_456"):
        records = memory.get_all(user_id=user)
        stored[user] = [r.text for r in records]
        table = Table(title=f"long-term memory of {user}", title_justify="left")
        table.add_column("kind")
        table.add_column("memory")
        table.add_column("field")
        for r in records:
            table.add_row(
                r.kind,
                r.text,
                f"{r.subject}={r.value}" if r.subject and r.kind == "profile" else "",
            )
        console.print(table if records else f"[dim]{user}: no memories[/]")
    console.print(f"[bold]done in {time.perf_counter() - started:.1f} s[/]")
    opened.close()
    if tmp is not None:
        tmp.cleanup()
    return {"replies": replies, "stored": stored}
