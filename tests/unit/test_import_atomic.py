"""Import is checked whole before anything is written, and a changed text is recorded as an edit.

Also: history rows that a process killed mid-write left behind are settled when read.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp

from mneme.errors import InputError, NotFoundError
from mneme.memory.api import Memory
from mneme.memory.orphans import ORPHAN_AGE_S
from mneme.memory.record import HISTORY, HistoryEntry, namespace
from mneme.store.chroma import ChromaStore
from mneme.validate import MAX_IMPORT_ROWS, MAX_TEXT_CHARS
from tests.fakes import HashEmbeddings
from tests.hostile import snapshot


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    emb = HashEmbeddings()
    return Memory(
        ChromaStore.open(str(tmp_path / "c"), index={"embed": emb, "dims": emb.dims, "fields": ["text"]})
    )


@pytest.fixture
def export(memory: Memory) -> dict[str, Any]:
    memory.save("I like green tea", user_id="ann")
    memory.save("我住在上海", user_id="ann", kind="profile", subject="city", value="上海")
    return memory.export(user_id="ann")


def spoiled(export: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(export)
    for path, value in changes.items():
        section, _, rest = path.partition("__")
        if not rest:
            data[section] = value
        else:
            index, _, field = rest.partition("__")
            data[section][int(index)][field] = value
    return data


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sessions": 5}, "'sessions' must be a list"),
        ({"memories__1__id": ""}, "the id of memory 1 is empty"),
        ({"memories__1__text": "x" * (MAX_TEXT_CHARS + 1)}, f"at most {MAX_TEXT_CHARS:,} characters"),
        ({"memories__1__text": "bad \ud800"}, "not valid Unicode"),
        ({"memories__1__importance": float("nan")}, "NaN"),
        ({"history__0__memory_id": ""}, "memory_id of history row 0 is empty"),
        ({"pending": [{"id": "j1"}]}, "malformed"),
        (
            {"memories": [{"id": f"m{i}", "text": "t"} for i in range(MAX_IMPORT_ROWS + 1)]},
            "at most 5,000 rows",
        ),
    ],
)
def test_a_bad_row_anywhere_means_nothing_is_written(
    memory: Memory, export: dict[str, Any], changes: dict[str, Any], message: str
) -> None:
    before = snapshot(memory.store)
    with pytest.raises(InputError, match=message):
        memory.import_data(spoiled(export, **changes), user_id="bob")
    assert snapshot(memory.store) == before
    assert memory.get_all(user_id="bob") == []


def test_an_import_that_changes_a_text_records_the_change(memory: Memory, export: dict[str, Any]) -> None:
    memory.import_data(export, user_id="bob")
    again = memory.import_data(export, user_id="bob")
    assert {c.operation for c in again} == {"NOOP"}  # the same export twice changes nothing

    changed = spoiled(export, memories__0__text="I like black tea")
    mid = changed["memories"][0]["id"]
    [change] = [c for c in memory.import_data(changed, user_id="bob") if c.id == mid]
    assert change.operation == "UPDATE" and change.old_text == "I like green tea"
    assert memory.get(mid, user_id="bob").text == "I like black tea"
    rows = memory.history(mid, user_id="bob")
    assert [r.operation for r in rows][-1] == "UPDATE"
    assert (rows[-1].old_text, rows[-1].new_text) == ("I like green tea", "I like black tea")
    old = memory.search("green tea", user_id="bob", include_history=True)
    assert any(not h.current and h.text == "I like green tea" for h in old)  # the old text is archived


def test_sessions_and_pending_jobs_come_in_the_same_batch(memory: Memory, export: dict[str, Any]) -> None:
    data = {
        **export,
        "sessions": [{"thread_id": "t-1", "title": "hello"}],
        "pending": [
            {"id": "job-1", "user_id": "x", "messages": [{"role": "user", "content": "I like jazz"}]}
        ],
    }
    memory.import_data(data, user_id="bob")
    assert [j.id for j in memory.pending(user_id="bob")] == ["job-1"]
    assert memory.export(user_id="bob")["sessions"][0]["thread_id"] == "t-1"


def _old(seconds: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat()


def _row(memory: Memory, entry: HistoryEntry) -> None:
    memory.store.batch(
        [PutOp(namespace(HISTORY, "ann"), entry.id, entry.model_dump(mode="json"), index=False)]
    )


def test_rows_a_killed_write_left_behind_are_settled_when_read(memory: Memory) -> None:
    kept = memory.save("I like green tea", user_id="ann")
    assert kept.id
    [added] = memory.history(kept.id, user_id="ann")
    _row(memory, added.model_copy(update={"at": _old(300)}))  # stored a while ago
    # as a process killed between the history row and the record leaves them:
    _row(memory, HistoryEntry(memory_id="never-stored", operation="ADD", new_text="ghost", at=_old(120)))
    _row(
        memory,
        HistoryEntry(
            memory_id=kept.id,
            operation="UPDATE",
            old_text="I like green tea",
            new_text="I like coffee",
            at=_old(120),
        ),
    )
    with pytest.raises(NotFoundError):  # the ADD that never happened is gone
        memory.history("never-stored", user_id="ann")
    assert [r.operation for r in memory.history(kept.id, user_id="ann")] == ["ADD"]  # so is the UPDATE
    assert memory.get(kept.id, user_id="ann").text == "I like green tea"

    doomed = memory.save("I smoke", user_id="ann")
    assert doomed.id
    [added] = memory.history(doomed.id, user_id="ann")
    _row(memory, added.model_copy(update={"at": _old(300)}))
    _row(memory, HistoryEntry(memory_id=doomed.id, operation="DELETE", old_text="[forgotten]", at=_old(120)))
    exported = memory.export(user_id="ann")  # reading the user's history finishes the cut-short delete
    assert doomed.id not in {m["id"] for m in exported["memories"]}
    with pytest.raises(NotFoundError):
        memory.get(doomed.id, user_id="ann")


def test_a_write_still_in_progress_is_never_taken_for_a_left_over(memory: Memory) -> None:
    _row(
        memory,
        HistoryEntry(memory_id="being-written", operation="ADD", new_text="soon", at=_old(ORPHAN_AGE_S / 4)),
    )
    assert [r.operation for r in memory.history("being-written", user_id="ann")] == ["ADD"]
