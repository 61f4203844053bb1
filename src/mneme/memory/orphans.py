"""History rows left behind by a process killed mid-write, and what reading them settles.

A write stores its history row before the records it describes (`write.py`), so a process
killed in between leaves a row whose change never happened: an ADD whose memory was never
stored, an UPDATE whose memory still holds its old text, a DELETE whose memory is still there.
Reading a memory's history (`Memory.history`) or a user's (`Memory.export`) settles them:

- a change that was never acknowledged (ADD, IMPORT, UPDATE, SUPERSEDE) is rolled back: its
  row is removed, since the memory is as it was before the call;
- a forget request (DELETE) is rolled forward: the delete is finished, since a crash must never
  bring back what a user asked to forget.

Only the last row of a memory can be left behind, and only one older than `ORPHAN_AGE_S`
counts, so a write still in progress (in this process or another one) is never mistaken for one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mneme.memory.record import HistoryEntry, MemoryRecord, normalize_text

ORPHAN_AGE_S = 60.0
"""A history row younger than this is never settled: its write may still be running."""
_ROLLED_BACK = ("ADD", "IMPORT", "UPDATE", "SUPERSEDE")


@dataclass
class Settlement:
    """What to do about the rows a killed write left behind."""

    drop: list[HistoryEntry] = field(default_factory=list)
    """Rows of changes that never happened (removed)."""
    finish_delete: list[str] = field(default_factory=list)
    """Memories whose delete was cut short (deleted now)."""

    def __bool__(self) -> bool:
        return bool(self.drop or self.finish_delete)


def _age_s(row: HistoryEntry, now: datetime) -> float:
    try:
        at = datetime.fromisoformat(row.at)
    except ValueError:
        return 0.0
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return (now - at).total_seconds()


def settle(
    rows: Iterable[HistoryEntry],
    current: dict[str, MemoryRecord],
    archived: set[str],
    now: datetime | None = None,
) -> Settlement:
    """Find the rows a killed write left behind.

    Args:
        rows: History rows (of one memory or of a whole user).
        current: The current records of the memories the rows are about, by id.
        archived: Ids of memories that have archived (superseded) versions.
        now: The time to measure the rows' age against (default: now).

    Returns:
        The rows to remove and the deletes to finish.
    """
    now = now or datetime.now(UTC)
    last: dict[str, HistoryEntry] = {}
    for row in sorted(rows, key=lambda r: r.at):
        last[row.memory_id] = row
    out = Settlement()
    for memory_id, row in last.items():
        if _age_s(row, now) < ORPHAN_AGE_S:
            continue
        record = current.get(memory_id)
        if row.operation in ("ADD", "IMPORT"):
            if record is None and memory_id not in archived:
                out.drop.append(row)
        elif row.operation in _ROLLED_BACK:
            if record is not None and normalize_text(record.text) != normalize_text(row.new_text or ""):
                out.drop.append(row)
        elif row.operation == "DELETE" and record is not None:
            out.finish_delete.append(memory_id)
    return out


__all__ = ["ORPHAN_AGE_S", "Settlement", "settle"]
