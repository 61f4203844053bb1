"""What enters whole from outside (an import): personal data masked, attempts to instruct the agent refused.

The write path screens each candidate as it is written (`Writer`); an import brings records,
history rows and session records that never went through it, so they are screened here with
the same redaction and the same guard before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mneme.memory.guard import judge_all
from mneme.memory.record import HistoryEntry, MemoryRecord, content_hash, lang_of
from mneme.memory.redact import RedactionPolicy, redact, redact_field, redact_text, redact_value

_QUOTED = re.compile(r"""\s*[:：]?\s*(['"“‘「]).*$""", re.S)


def screen_records(
    records: Sequence[MemoryRecord], policy: RedactionPolicy
) -> list[tuple[MemoryRecord, str | None]]:
    """Mask personal data in records and judge their texts.

    Args:
        records: Records as read from an export (their ids are kept).
        policy: The redaction policy of the memory they are imported into.

    Returns:
        Per record: the record to store (masked text, value, metadata and session id), and
        the reason it is refused, or None.
    """
    masked: list[MemoryRecord] = []
    for record in records:
        red = redact(record.text, policy)
        update: dict[str, Any] = {}
        if red.text != record.text:
            update |= {
                "text": red.text,
                "content_hash": content_hash(red.text),
                "lang": lang_of(red.text),
                "redacted": sorted({*record.redacted, *red.hidden}),
                "sensitivity": max(record.sensitivity, 1),
            }
        if (
            record.value is not None
            and (value := redact_field(record.value, record.text, policy)) != record.value
        ):
            update["value"] = value
        if record.metadata and (meta := redact_value(record.metadata, policy)) != record.metadata:
            update["metadata"] = meta
        thread = record.source.thread_id
        if thread and (safe := redact_text(thread, policy)) != thread:
            update["source"] = record.source.model_copy(update={"thread_id": safe})
        masked.append(record.model_copy(update=update) if update else record)
    verdicts = judge_all([r.text for r in masked])
    return [(r, v.reason) for r, v in zip(masked, verdicts, strict=True)]


def screen_history(entry: HistoryEntry, policy: RedactionPolicy) -> HistoryEntry:
    """A history row with personal data masked; a REFUSE row keeps no text of what it refused."""
    update: dict[str, Any] = {}
    for name in ("old_text", "new_text"):
        text = getattr(entry, name)
        if text and (safe := redact_text(text, policy)) != text:
            update[name] = safe
    if entry.operation == "REFUSE":
        update |= {"old_text": None, "new_text": None}
        if entry.reason:  # rows written before 0.2 quoted the refused text in their reason
            update["reason"] = _QUOTED.sub("", entry.reason) or "refused"
    elif entry.reason and (reason := redact_text(entry.reason, policy)) != entry.reason:
        update["reason"] = reason
    if entry.source and (source := redact_value(entry.source, policy)) != entry.source:
        update["source"] = source
    return entry.model_copy(update=update) if update else entry


def screen_session(session: dict[str, Any], policy: RedactionPolicy) -> dict[str, Any]:
    """A session record with personal data masked in its title and recap."""
    out = dict(session)
    for name in ("title", "recap"):
        if isinstance(out.get(name), str):
            out[name] = redact_text(out[name], policy)
    return out


def screen_messages(messages: list[dict[str, Any]], policy: RedactionPolicy) -> list[dict[str, Any]]:
    """Messages (of a pending extraction job) with personal data masked in their contents."""
    return [
        {**m, "content": redact_text(m["content"], policy)} if isinstance(m.get("content"), str) else m
        for m in messages
    ]


__all__ = ["screen_history", "screen_messages", "screen_records", "screen_session"]
