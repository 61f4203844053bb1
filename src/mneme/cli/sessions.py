"""`mneme sessions ...`: list, show and delete a user's conversation threads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from mneme.cli.common import HomeOpt, JsonOpt, UserOpt, app, console, emit, guarded, short_time

if TYPE_CHECKING:
    from mneme.sessions import Sessions

sessions_app = typer.Typer(help="See and delete a user's conversation threads.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


def _open(home: Path | None) -> Sessions:
    from mneme.sessions import Sessions

    return Sessions.open(home)


@sessions_app.command("list")
def sessions_list(user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """List a user's sessions, most recently used first."""

    def run() -> None:
        with _open(home) as sessions:
            rows = [s.model_dump(mode="json") for s in sessions.list(user_id=user)]

        def show(rows: list[dict[str, Any]]) -> None:
            if not rows:
                console.print(f"{user}: no sessions")
                return
            table = Table(title=f"sessions of {user} ({len(rows)})", title_justify="left")
            for col in ("thread", "title", "turns", "started", "last used"):
                table.add_column(col, overflow="fold")
            for s in rows:
                table.add_row(
                    escape(s["thread_id"]),
                    escape(s["title"]),
                    str(s["turns"]),
                    short_time(s["created_at"]),
                    short_time(s["updated_at"]),
                )
            console.print(table)

        emit(rows, as_json, show)

    guarded(run)


@sessions_app.command("show")
def sessions_show(thread_id: str, user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Show one session: its messages, running summary and task state."""

    def run() -> None:
        with _open(home) as sessions:
            detail = sessions.get(thread_id, user_id=user).model_dump(mode="json")

        def show(d: dict[str, Any]) -> None:
            console.print(
                f"[bold]{escape(d['thread_id'])}[/] · {escape(d['title'])} · {d['turns']} turns · "
                f"{short_time(d['created_at'])} – {short_time(d['updated_at'])}",
                highlight=False,
            )
            if d.get("summary"):
                console.print(f"[dim]summary:[/] {escape(d['summary'])}", highlight=False)
            if d.get("task"):
                console.print(f"[dim]task:[/] {escape(str(d['task']))}", highlight=False)
            for m in d["messages"]:
                calls = ", ".join(c["name"] for c in m.get("tool_calls") or [])
                text = m["content"] or (f"→ {calls}" if calls else "")
                who = m["role"] if not m.get("name") else f"{m['role']} ({m['name']})"
                console.print(f"[green]{escape(who)}:[/] {escape(text)}", highlight=False)

        emit(detail, as_json, show)

    guarded(run)


@sessions_app.command("delete")
def sessions_delete(
    thread_id: str,
    user: UserOpt,
    forget_episodes: Annotated[
        bool,
        typer.Option(
            "--forget-episodes", help="Also forget the episodic memories that came from this session."
        ),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a session; other sessions and long-term memories stay."""

    def run() -> None:
        with _open(home) as sessions:
            sessions.delete(thread_id, user_id=user, forget_episodes=forget_episodes)
        emit(
            {"deleted": thread_id, "forget_episodes": forget_episodes},
            as_json,
            lambda d: console.print(f"deleted session {d['deleted']} of {user}", highlight=False),
        )

    guarded(run)
