"""What every `mneme` command shares: the app, consoles, options, exit codes, errors, output."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mneme.errors import HomeLockedError, InputError, MnemeError, NotFoundError

app = typer.Typer(
    name="mneme",
    help="Memory for LangGraph agents: chat with memory, and see, correct, delete and serve what is remembered.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

EXIT_ERROR = 1
"""Something failed that is not the caller's input (a crash, a server that cannot start)."""
EXIT_USAGE = 2
"""Bad input: a missing option, an empty text, a malformed file (typer's usage errors too)."""
EXIT_NOT_FOUND = 3
"""The memory, session or file named does not exist (or belongs to another user)."""
EXIT_LOCKED = 4
"""The home folder is in use by another process."""

T = TypeVar("T")

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
UserOpt = Annotated[str, typer.Option("--user", "-u", help="Whose memories.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON on stdout).")]


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Print one clear line on stderr and exit with a meaningful code."""
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guarded(fn: Callable[[], T]) -> T:
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


def emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print data as JSON (for scripts) or through a human-readable renderer."""
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        render(data)


def progress(items: Iterable[T], total: int, label: str, *, show: bool = True) -> Iterator[T]:
    """Iterate with a progress bar on stderr (hidden when `show` is false)."""
    if not show:
        yield from items
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task(label, total=total)
        for item in items:
            yield item
            bar.advance(task)


def short_time(iso: str | None) -> str:
    """An ISO time as `YYYY-MM-DD HH:MM` for tables."""
    return (iso or "")[:16].replace("T", " ")


__all__ = [
    "EXIT_ERROR",
    "EXIT_LOCKED",
    "EXIT_NOT_FOUND",
    "EXIT_USAGE",
    "HomeOpt",
    "JsonOpt",
    "ModelOpt",
    "UserOpt",
    "app",
    "console",
    "emit",
    "err",
    "fail",
    "guarded",
    "progress",
    "short_time",
]
