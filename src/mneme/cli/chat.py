"""`mneme demo` and `mneme chat`: the memory story, and a terminal chat with memory."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.markup import escape

from mneme.cli.common import HomeOpt, ModelOpt, app, console, err, guarded
from mneme.errors import InputError


@app.command()
def demo(home: HomeOpt = None, model: ModelOpt = None) -> None:
    """Play the e-commerce story: two sessions of one user, then another user."""
    from mneme.demo import run_demo

    guarded(lambda: run_demo(home, model=model, console=console))


@app.command()
def chat(
    user: Annotated[str, typer.Option("--user", "-u", help="Whose memory to use.")],
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Thread to resume (default: a new one).")
    ] = None,
    home: HomeOpt = None,
    model: ModelOpt = None,
) -> None:
    """Chat with memory in the terminal (/memories, /exit)."""

    def run() -> None:
        from langchain_core.messages import HumanMessage

        from mneme.context import Context
        from mneme.graph import build_graph
        from mneme.home import open_home
        from mneme.memory.api import Memory
        from mneme.memory.record import check_user
        from mneme.state import InputState
        from mneme.validate import clean_name, clean_text

        check_user(user)
        if session is not None:
            clean_name(session, "the session id")
        opened = open_home(home)
        graph = build_graph(checkpointer=opened.checkpointer(), store=opened.store, model=model)
        thread = session or f"chat-{uuid.uuid4().hex[:8]}"
        interactive = sys.stdin.isatty()
        if interactive:
            console.print(f"[bold]mneme chat[/] · user {user} · session {thread} · /memories, /exit")
        try:
            for line in _lines(interactive):
                text = line.strip()
                if not text:
                    continue
                if text in ("/exit", "/quit"):
                    break
                if text == "/memories":
                    for r in Memory(opened.store).get_all(user_id=user):
                        console.print(f"- ({r.kind}) {r.text}")
                    continue
                try:
                    clean_text(text, "the message")
                    out = graph.invoke(
                        InputState(messages=[HumanMessage(content=text)]),
                        {"configurable": {"thread_id": thread}},
                        context=Context(user_id=user),
                    )
                except InputError as exc:
                    err.print(f"[red]error:[/] {escape(str(exc).removeprefix('mneme: '))}")
                    continue
                console.print(
                    f"[green]assistant:[/] {escape(str(out['messages'][-1].content))}", highlight=False
                )
        finally:
            opened.close()

    guarded(run)


def _lines(interactive: bool) -> Iterator[str]:
    """Lines typed or piped in.

    Bytes that are not UTF-8 come through as lone surrogates, which the chat then refuses
    with a clear error instead of crashing.
    """
    raw = getattr(sys.stdin, "buffer", None)
    while True:
        try:
            if interactive or raw is None:
                line = input("you> ") if interactive else sys.stdin.readline()
            else:
                line = raw.readline().decode("utf-8", "surrogateescape")
        except EOFError:
            return
        except UnicodeDecodeError:
            line = "\udcff\n"
        if not interactive and line == "":
            return
        yield line
