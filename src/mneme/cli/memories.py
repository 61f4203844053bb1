"""`mneme memories ...`: list, search, show, profile, add, edit, delete, history, export and import."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from mneme.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    HomeOpt,
    JsonOpt,
    UserOpt,
    app,
    console,
    emit,
    err,
    fail,
    guarded,
    progress,
    short_time,
)
from mneme.errors import InputError

if TYPE_CHECKING:
    from mneme.memory.api import Memory

memories_app = typer.Typer(
    help="See, search, correct, delete, export and import what is remembered.", no_args_is_help=True
)
app.add_typer(memories_app, name="memories")

KindOpt = Annotated[
    list[str] | None,
    typer.Option("--kind", "-k", help="Only this kind: profile, semantic, episodic (repeatable)."),
]
IMPORT_CHUNK = 200
"""Records loaded per step of `memories import` (one progress step each)."""


def _open(home: Path | None) -> Memory:
    from mneme.memory.api import Memory

    return Memory.open(home)


def _kinds(kind: list[str] | None) -> Any:
    from mneme.memory.repo import KINDS

    if not kind:
        return None
    bad = [k for k in kind if k not in KINDS]
    if bad:
        raise InputError(f"mneme: unknown kind {bad[0]!r}; use one of {', '.join(KINDS)}")
    return kind


def _source(src: dict[str, Any]) -> str:
    parts = [str(src.get("actor") or "?")]
    if src.get("speaker"):
        parts.append(str(src["speaker"]))
    if src.get("thread_id"):
        parts.append(f"thread {src['thread_id']}")
    return " · ".join(parts)


def _change_line(change: dict[str, Any]) -> str:
    op, text = change["operation"], change.get("text") or ""
    if change.get("old_text") and change["old_text"] != text:
        text = f"{change['old_text']} → {text}"
    reason = f"  [dim]({escape(change['reason'])})[/]" if change.get("reason") else ""
    ident = f"  [dim]{change['id']}[/]" if change.get("id") else ""
    return f"{op:<9} {escape(text)}{reason}{ident}"


def _print_changes(changes: list[dict[str, Any]]) -> None:
    for c in changes:
        console.print(_change_line(c), highlight=False)


@memories_app.command("list")
def memories_list(
    user: UserOpt, kind: KindOpt = None, home: HomeOpt = None, as_json: JsonOpt = False
) -> None:
    """List a user's current memories, oldest first."""

    def run() -> None:
        kinds = _kinds(kind)
        with _open(home) as mem:
            rows = [r.model_dump(mode="json") for r in mem.get_all(user_id=user, kinds=kinds)]

        def show(rows: list[dict[str, Any]]) -> None:
            if not rows:
                console.print(f"{user}: no memories")
                return
            table = Table(title=f"memories of {user} ({len(rows)})", title_justify="left")
            table.add_column("id", no_wrap=True)
            for col in ("kind", "text", "source", "updated"):
                table.add_column(col, overflow="fold")
            for r in rows:
                table.add_row(
                    r["id"],
                    r["kind"],
                    escape(r["text"]),
                    escape(_source(r["source"])),
                    short_time(r["updated_at"]),
                )
            console.print(table)

        emit(rows, as_json, show)

    guarded(run)


@memories_app.command("search")
def memories_search(
    query: str,
    user: UserOpt,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many hits.")] = 5,
    kind: KindOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search a user's memories by meaning (any language), best first."""

    def run() -> None:
        kinds = _kinds(kind)
        with _open(home) as mem:
            hits = [
                h.model_dump(mode="json") for h in mem.search(query, user_id=user, limit=limit, kinds=kinds)
            ]

        def show(rows: list[dict[str, Any]]) -> None:
            if not rows:
                console.print(f"nothing found for {query!r}")
            for h in rows:
                console.print(
                    f"{h['score']:.3f}  ({h['kind']}) {escape(h['text'])}  [dim]{h['id']}[/]", highlight=False
                )

        emit(hits, as_json, show)

    guarded(run)


@memories_app.command("show")
def memories_show(memory_id: str, user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Show one memory with all its fields."""

    def run() -> None:
        with _open(home) as mem:
            record = mem.get(memory_id, user_id=user).model_dump(mode="json")

        def show(r: dict[str, Any]) -> None:
            table = Table(show_header=False, box=None)
            table.add_column(style="bold")
            table.add_column(overflow="fold")
            for field in (
                "id",
                "kind",
                "text",
                "subject",
                "value",
                "importance",
                "confidence",
                "confirmed",
                "sensitivity",
                "version",
                "created_at",
                "updated_at",
                "valid_from",
                "expires_at",
            ):
                if r.get(field) is not None:
                    table.add_row(field, escape(str(r[field])))
            table.add_row("source", escape(_source(r["source"])))
            if r.get("metadata"):
                table.add_row("metadata", escape(json.dumps(r["metadata"], ensure_ascii=False)))
            console.print(table)

        emit(record, as_json, show)

    guarded(run)


@memories_app.command("add")
def memories_add(
    text: str,
    user: UserOpt,
    kind: Annotated[str, typer.Option("--kind", "-k", help="profile, semantic or episodic.")] = "semantic",
    infer: Annotated[
        bool, typer.Option("--infer", help="Extract memories from the text as from a user message.")
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a text for a user (as given, or extracted with --infer)."""

    def run() -> None:
        _kinds([kind])
        with _open(home) as mem:
            changes = mem.add(text, user_id=user) if infer else [mem.save(text, user_id=user, kind=kind)]  # type: ignore[arg-type]
        emit([c.model_dump(mode="json") for c in changes], as_json, _print_changes)

    guarded(run)


@memories_app.command("edit")
def memories_edit(
    memory_id: str, text: str, user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False
) -> None:
    """Correct a memory's text (the old text stays in its history)."""

    def run() -> None:
        with _open(home) as mem:
            change = mem.update(memory_id, text, user_id=user)
        emit(change.model_dump(mode="json"), as_json, lambda c: _print_changes([c]))

    guarded(run)


@memories_app.command("delete")
def memories_delete(
    user: UserOpt,
    memory_id: Annotated[str | None, typer.Argument(help="The memory to forget.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Forget every memory of the user.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --all.")] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget one memory (its text is scrubbed from history too), or --all of a user's."""

    def run() -> None:
        if all_ == (memory_id is not None):
            fail("give a memory id, or --all (not both)", EXIT_USAGE)
        if all_ and not yes:
            if not sys.stdin.isatty():
                fail(f"--all forgets every memory of {user}: add --yes to confirm", EXIT_USAGE)
            typer.confirm(f"Forget every memory of {user}?", abort=True, err=True)
        with _open(home) as mem:
            if all_:
                count = mem.delete_all(user_id=user)
                emit(
                    {"deleted": count},
                    as_json,
                    lambda d: console.print(f"forgot {d['deleted']} memories of {user}"),
                )
                return
            assert memory_id is not None
            change = mem.delete(memory_id, user_id=user)
        emit(change.model_dump(mode="json"), as_json, lambda c: _print_changes([c]))

    guarded(run)


@memories_app.command("history")
def memories_history(memory_id: str, user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Every change of one memory, oldest first (also of deleted or superseded ones)."""

    def run() -> None:
        with _open(home) as mem:
            rows = [h.model_dump(mode="json") for h in mem.history(memory_id, user_id=user)]

        def show(rows: list[dict[str, Any]]) -> None:
            table = Table(title=f"history of {memory_id}", title_justify="left")
            for col in ("at", "operation", "by", "change", "reason"):
                table.add_column(col, overflow="fold")
            for h in rows:
                old, new = h.get("old_text"), h.get("new_text")
                change = f"{old} → {new}" if old and new and old != new else (new or old or "")
                table.add_row(
                    short_time(h["at"]),
                    h["operation"],
                    h["actor"],
                    escape(change),
                    escape(h.get("reason") or ""),
                )
            console.print(table)

        emit(rows, as_json, show)

    guarded(run)


@memories_app.command("profile")
def memories_profile(user: UserOpt, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """What mneme believes about a user, by aspect: hard limits first, with former values.

    Correct a memory with `mneme memories edit ID "new text" --user U`, forget it with `mneme memories delete ID --user U` (the old text stays in its history).
    """

    def run() -> None:
        with _open(home) as mem:
            view = mem.user_model(user_id=user).model_dump(mode="json")
        emit(view, as_json, _print_profile)

    guarded(run)


def _print_profile(view: dict[str, Any]) -> None:
    def line(text: str) -> None:
        console.print(text, highlight=False, soft_wrap=True)

    if not view["aspects"]:
        line(f"{escape(view['user_id'])}: nothing known yet (no memory is about an aspect of them)")
        return
    line(f"[bold]what mneme believes about {escape(view['user_id'])}[/] ({view['total']} memories)")
    for group in view["aspects"]:
        flags = [
            group["area"],
            "hard limit" if group["constraint"] else "",
            "one value" if group["single"] else "",
        ]
        line(
            f"[bold]{escape(group['aspect'])}[/] · {escape(group['label'])} · {escape(group['label_zh'])}"
            f"  [dim]({', '.join(f for f in flags if f)})[/]"
        )
        if group["conflicting"]:
            line("  [yellow]more than one current value: one is probably stale[/]")
        for m in group["memories"]:
            line(f"  {'[red]![/]' if m['constraint'] else '·'} {escape(m['text'])}")
            said = "" if m["confirmed"] else " · inferred"
            line(
                f"      [dim]id {m['id']} · since {short_time(m['since'])} · v{m['version']} · "
                f"by {escape(_source(m['source']))}{said}[/]"
            )
            for e in m["earlier"]:
                how = "edited from" if e["change"] == "edited" else "before"
                line(f"      {how}: {escape(e['text'])}  [dim](until {short_time(e['until'])})[/]")
    line(
        '[dim]correct: mneme memories edit ID "text" --user U · forget: mneme memories delete ID --user U[/]'
    )


@memories_app.command("export")
def memories_export(
    user: UserOpt,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Export everything kept about a user as JSON (what `memories import` loads back)."""

    def run() -> None:
        with _open(home) as mem:
            data = mem.export(user_id=user)
        text = json.dumps(data, ensure_ascii=False, indent=2)
        if output is None:
            typer.echo(text)
            return
        output.write_text(text + "\n", encoding="utf-8")
        err.print(f"exported {len(data['memories'])} memories of {user} to {output}", highlight=False)

    guarded(run)


@memories_app.command("import")
def memories_import(
    file: Annotated[Path, typer.Argument(help="An export file (`-` reads stdin).")],
    user: UserOpt,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load an export into a user (ids are kept: importing twice changes nothing).

    The whole file is checked first: a malformed row anywhere means nothing is written.
    """

    def run() -> None:
        data = _read_export(file)
        chunks = _chunks(data)
        changes: list[dict[str, Any]] = []
        with _open(home) as mem:
            for chunk in chunks:  # every part is checked before the first one is written
                mem.check_import(chunk, user_id=user)
            show = not as_json and sys.stderr.isatty()
            for chunk in progress(chunks, len(chunks), f"importing into {user}", show=show):
                changes += [c.model_dump(mode="json") for c in mem.import_data(chunk, user_id=user)]

        def render(rows: list[dict[str, Any]]) -> None:
            new = sum(1 for c in rows if c["operation"] == "IMPORT")
            console.print(f"imported {new} memories into {user} ({len(rows) - new} were already there)")

        emit(changes, as_json, render)

    guarded(run)


def _read_export(file: Path) -> dict[str, Any]:
    try:
        if str(file) == "-":
            raw = sys.stdin.read()
        elif not file.is_file():
            fail(f"no such file: {file}", EXIT_NOT_FOUND)
        else:
            raw = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"mneme: {file} is not UTF-8 text (byte {exc.start})") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"mneme: {file} is not JSON ({exc.msg}, line {exc.lineno})") from exc
    except RecursionError as exc:
        raise InputError(f"mneme: {file} is nested too deeply to be a mneme export") from exc
    if not isinstance(data, dict):
        raise InputError(f"mneme: {file} is not a mneme export")
    return data


def _chunks(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Split an export into parts that `import_data` loads one after another."""
    head = {k: v for k, v in data.items() if k not in ("memories", "archive", "history", "sessions")}
    parts: list[dict[str, Any]] = []
    for field in ("memories", "archive", "history"):
        rows = data.get(field) or []
        if not isinstance(rows, list):
            raise InputError(f"mneme: the export's {field!r} is not a list")
        for i in range(0, len(rows), IMPORT_CHUNK):
            parts.append({**head, field: rows[i : i + IMPORT_CHUNK]})
    parts.append({**head, "sessions": data.get("sessions") or []})
    return parts
