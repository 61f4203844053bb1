"""Loading an export: every row checked before anything is written, then one batch of writes.

`plan_import` reads the whole export into typed rows first (memories, archived versions,
history rows, sessions, pending jobs), so a malformed row, a text over the length limit or an
export over the size limit is refused with nothing written. The writes it plans go to the
store in one batch. A memory already stored with the same text is left as it is (NOOP); one
stored with another text is replaced as an edit: its old version goes to the archive and an
UPDATE history row records the change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp
from pydantic import ValidationError

from mneme.errors import InputError
from mneme.memory import expiry
from mneme.memory.queue import PendingJob
from mneme.memory.record import (
    ARCHIVE,
    PENDING,
    SESSIONS,
    HistoryEntry,
    MemoryChange,
    MemoryRecord,
    Source,
    namespace,
    normalize_text,
    now_iso,
)
from mneme.memory.redact import RedactionPolicy
from mneme.memory.repo import KINDS, Repo, kind_namespace
from mneme.memory.screen import screen_history, screen_messages, screen_records, screen_session
from mneme.memory.write import stable_id
from mneme.validate import (
    MAX_DEPTH,
    MAX_IMPORT_CHARS,
    MAX_IMPORT_ROWS,
    MAX_TEXT_CHARS,
    check_json,
    check_metadata,
    clean_name,
    clean_text,
    optional_name,
    printable,
)

EXPORT_FORMAT = "mneme-export/1"
SECTIONS = ("memories", "archive", "history", "sessions", "pending")


@dataclass
class ImportPlan:
    """What an import will write, and the changes it reports."""

    ops: list[PutOp] = field(default_factory=list)
    changes: list[MemoryChange] = field(default_factory=list)


def check_export(data: Any) -> dict[str, list[dict[str, Any]]]:
    """Check the shape and the size of an export; return its sections (a missing one is empty).

    Raises:
        InputError: if it is not a mneme export, a section is not a list of objects, or it is
            over `MAX_IMPORT_ROWS` rows or `MAX_IMPORT_CHARS` characters.
    """
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise InputError(f"mneme: not a mneme export (expected format {EXPORT_FORMAT!r})")
    sections: dict[str, list[dict[str, Any]]] = {}
    for name in SECTIONS:
        rows = data.get(name)
        if rows is None:
            rows = []
        if not isinstance(rows, list):
            raise InputError(f"mneme: the export's {name!r} must be a list, not {type(rows).__name__}")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise InputError(f"mneme: row {i} of the export's {name!r} is not an object")
        sections[name] = rows
    total = sum(len(rows) for rows in sections.values())
    if total > MAX_IMPORT_ROWS:
        raise InputError(
            f"mneme: one import may hold at most {MAX_IMPORT_ROWS:,} rows (this one has {total:,}); "
            "`mneme memories import` loads a larger export in parts"
        )
    check_json(data, "the export", limit=MAX_IMPORT_CHARS, depth=MAX_DEPTH + 4)
    return sections


def _record(raw: dict[str, Any], user_id: str, where: str) -> MemoryRecord:
    record = MemoryRecord.from_store({**raw, "user_id": user_id})
    clean_name(record.id, f"the id of {where}")
    clean_text(record.text, f"the text of {where}", limit=MAX_TEXT_CHARS)
    optional_name(record.subject, f"the subject of {where}")
    optional_name(record.agent_id, f"the agent_id of {where}")
    optional_name(record.source.thread_id, f"the session of {where}")
    check_metadata(record.metadata)
    return record


def _entry(raw: dict[str, Any], where: str) -> HistoryEntry:
    entry = HistoryEntry.model_validate(raw)
    clean_name(entry.id, f"the id of {where}")
    clean_name(entry.memory_id, f"the memory_id of {where}")
    for text in (entry.old_text, entry.new_text):
        if text is not None:
            clean_text(text, f"a text of {where}", limit=MAX_TEXT_CHARS, blank=True)
    return entry


Refuse = Callable[[str, str, list[PutOp]], MemoryChange]
"""Records a refused text (its REFUSE history row goes into the ops) and returns the change."""


def plan_import(
    data: Any,
    user_id: str,
    repo: Repo,
    policy: RedactionPolicy | None = None,
    refuse: Refuse | None = None,
) -> ImportPlan:
    """Check a whole export and plan its writes into one user; nothing is written here.

    Everything it brings is screened as the write path screens what it writes: personal data
    is masked (`policy`) in texts, values, metadata, session ids, history rows, session titles
    and recaps and pending messages, and a memory that instructs the agent is refused.

    Args:
        data: The export (what `Memory.export` returned, from any user).
        user_id: The user it is loaded into.
        repo: The store to read the user's current memories from.
        policy: The redaction policy of the memory it is loaded into (the default one if None).
        refuse: Records a refused memory; without it a refused memory is left out silently.

    Returns:
        The writes and the changes (IMPORT, NOOP or UPDATE per memory).

    Raises:
        InputError: if anything in the export is malformed or over a limit.
    """
    sections = check_export(data)
    source = Source(actor="import").model_dump(mode="json")
    origin = printable(str(data.get("user_id")), 80)
    try:
        history = [_entry(raw, f"history row {i}") for i, raw in enumerate(sections["history"])]
        archive = [
            _record(raw, user_id, f"archived version {i}") for i, raw in enumerate(sections["archive"])
        ]
        memories = [_record(raw, user_id, f"memory {i}") for i, raw in enumerate(sections["memories"])]
        jobs = [PendingJob.model_validate({**raw, "user_id": user_id}) for raw in sections["pending"]]
    except ValidationError as exc:
        raise InputError(f"mneme: the export is malformed: {printable(str(exc), 500)}") from exc
    except (ValueError, TypeError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"mneme: the export is malformed: {printable(str(exc), 500)}") from exc
    for job in jobs:
        clean_name(job.id, "the id of a pending job")
        for m in job.messages:
            clean_text(str(m.get("content") or ""), "a pending message", blank=True)
    sessions: list[tuple[str, dict[str, Any]]] = []
    for i, raw in enumerate(sections["sessions"]):
        thread = clean_name(raw.get("thread_id"), f"the thread_id of session {i}")
        sessions.append((thread, raw))

    policy = policy or RedactionPolicy()
    plan = ImportPlan()
    history = [screen_history(entry, policy) for entry in history]
    archive = [r for r, refused in screen_records(archive, policy) if not refused]
    kept: list[MemoryRecord] = []
    for record, refused in screen_records(memories, policy):
        if not refused:
            kept.append(record)
        elif refuse is not None:
            plan.changes.append(refuse(record.text, refused, plan.ops))
    memories = kept
    jobs = [job.model_copy(update={"messages": screen_messages(job.messages, policy)}) for job in jobs]
    sessions = [(thread, screen_session(value, policy)) for thread, value in sessions]
    plan.ops += [repo.history_op(user_id, entry) for entry in history]
    plan.ops += [
        PutOp(namespace(ARCHIVE, user_id), f"{r.id}@v{r.version}", r.to_store(), index=["text"])
        for r in archive
    ]
    current = _current(repo, user_id, [r.id for r in memories])
    now = now_iso()
    for record in memories:
        old = current.get(record.id)
        if old is not None and normalize_text(old.text) == normalize_text(record.text):
            plan.changes.append(
                MemoryChange(
                    operation="NOOP", id=old.id, text=old.text, reason="already stored", kind=old.kind
                )
            )
            continue
        reason = f"imported from an export of {origin!r}"
        if old is None:
            row = HistoryEntry(
                id=stable_id(record.id, "IMPORT", record.content_hash),
                memory_id=record.id,
                operation="IMPORT",
                new_text=record.text,
                actor="import",
                source=source,
                reason=reason,
            )
            change = MemoryChange(operation="IMPORT", id=record.id, text=record.text, kind=record.kind)
        else:  # the export holds another text for this memory: an edit, kept in history
            record = record.model_copy(update={"version": max(record.version, old.version + 1)})
            archived = old.model_copy(update={"invalid_at": now, "superseded_by": old.id})
            plan.ops.append(
                PutOp(
                    namespace(ARCHIVE, user_id),
                    f"{old.id}@v{old.version}",
                    archived.to_store(),
                    index=["text"],
                )
            )
            if old.kind != record.kind:
                plan.ops += repo.remove_ops(old)
            row = HistoryEntry(
                id=stable_id(record.id, "UPDATE", f"import:{old.version}:{record.content_hash}"),
                memory_id=record.id,
                operation="UPDATE",
                old_text=old.text,
                new_text=record.text,
                actor="import",
                source=source,
                reason=reason,
            )
            change = MemoryChange(
                operation="UPDATE", id=record.id, text=record.text, old_text=old.text, kind=record.kind
            )
        plan.ops.append(repo.history_op(user_id, row))
        plan.ops += [*repo.put_ops(record), expiry.index_op(record)]
        current[record.id] = record
        plan.changes.append(change)
    plan.ops += [
        PutOp(namespace(PENDING, user_id), job.id, job.model_dump(mode="json"), index=False) for job in jobs
    ]
    plan.ops += [
        PutOp(namespace(SESSIONS, user_id), thread, value, index=False) for thread, value in sessions
    ]
    return plan


def _current(repo: Repo, user_id: str, ids: list[str]) -> dict[str, MemoryRecord]:
    """The user's current records with these ids, of any kind, in one batch of lookups."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    ops = [GetOp(kind_namespace(user_id, kind), key) for key in unique for kind in KINDS]
    out: dict[str, MemoryRecord] = {}
    for op, item in zip(ops, repo.store.batch(ops), strict=True):
        if isinstance(item, Item) and op.key not in out:
            record = MemoryRecord.from_store(item.value)
            if record.user_id == user_id:
                out[op.key] = record
    return out


__all__ = ["EXPORT_FORMAT", "ImportPlan", "check_export", "plan_import"]
