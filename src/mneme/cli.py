"""The `mneme` command line: demo, chat, and memory inspection."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mneme.errors import HomeLockedError, InputError, MnemeError, NotFoundError

app = typer.Typer(
    name="mneme",
    help="Memory for LangGraph agents: chat with memory, and see what is remembered.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_LOCKED = 4
EXIT_ERROR = 1

HomeOpt = Annotated[
    Path | None, typer.Option("--home", help="Data folder (default $MNEME_HOME or ./.mneme).")
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="offline, or provider:model (default: openai:gpt-4o-mini with OPENAI_API_KEY, else offline).",
    ),
]


def fail(message: str, code: int = EXIT_ERROR) -> None:
    """Print one clear line on stderr and exit with a meaningful code."""
    err.print(f"[red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def guarded(fn: Any) -> Any:
    """Run a command body, turning mneme's errors into one line and an exit code."""
    try:
        return fn()
    except HomeLockedError as exc:
        fail(str(exc).removeprefix("mneme: "), EXIT_LOCKED)
    except NotFoundError as exc:
        fail(str(exc).removeprefix("mneme: "), EXIT_NOT_FOUND)
    except InputError as exc:
        fail(str(exc).removeprefix("mneme: "), EXIT_USAGE)
    except MnemeError as exc:
        fail(str(exc).removeprefix("mneme: "))


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
        from mneme.state import InputState

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
                    out = graph.invoke(
                        InputState(messages=[HumanMessage(content=text)]),
                        {"configurable": {"thread_id": thread}},
                        context=Context(user_id=user),
                    )
                except InputError as exc:
                    err.print(f"[red]error:[/] {str(exc).removeprefix('mneme: ')}")
                    continue
                console.print(f"[green]assistant:[/] {out['messages'][-1].content}", highlight=False)
        finally:
            opened.close()

    guarded(run)


def _lines(interactive: bool) -> Any:
    while True:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and line == "":
            return
        yield line


memories_app = typer.Typer(help="See, search, edit and delete what is remembered.", no_args_is_help=True)
app.add_typer(memories_app, name="memories")

UserOpt = Annotated[str, typer.Option("--user", "-u", help="Whose memories.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _open(home: Path | None) -> Any:
    from mneme.memory.api import Memory

    return Memory.open(home)


def _emit(data: Any, as_json: bool, render: Any) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        render(data)


@memories_app.command("list")
def memories_list(user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """List a user's current memories."""

    def run() -> None:
        with _open(home) as mem:
            rows = [r.model_dump(mode="json") for r in mem.get_all(user_id=user)]

        def show(rows: list[dict[str, Any]]) -> None:
            from rich.table import Table

            table = Table(title=f"memories of {user} ({len(rows)})", title_justify="left")
            for col in ("id", "kind", "text", "updated"):
                table.add_column(col)
            for r in rows:
                table.add_row(r["id"], r["kind"], r["text"], r["updated_at"][:19])
            console.print(table)

        _emit(rows, as_json, show)

    guarded(run)


@memories_app.command("search")
def memories_search(
    query: str, user: UserOpt, limit: int = 5, home: HomeOpt = None, as_json: JsonOpt = False
) -> None:
    """Search a user's memories by meaning."""

    def run() -> None:
        with _open(home) as mem:
            hits = [h.model_dump(mode="json") for h in mem.search(query, user_id=user, limit=limit)]

        def show(rows: list[dict[str, Any]]) -> None:
            for h in rows:
                console.print(f"{h['score']:.3f}  ({h['kind']}) {h['text']}  [dim]{h['id']}[/]")

        _emit(hits, as_json, show)

    guarded(run)


def main() -> None:
    """Entry point of the `mneme` script."""
    app()


if __name__ == "__main__":
    main()
