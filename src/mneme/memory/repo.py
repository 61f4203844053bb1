"""Reading and writing memory records, history rows and sessions through any LangGraph store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem, SearchOp

from mneme.memory.mirror import filters_on_sets
from mneme.memory.record import (
    ARCHIVE,
    EXPIRY,
    HISTORY,
    MEMORIES,
    PENDING,
    SESSIONS,
    HistoryEntry,
    Kind,
    MemoryRecord,
    check_user,
    label_user,
    namespace,
    user_label,
)
from mneme.memory.revision import REVISIONS, USAGE, apply_logged

KINDS: tuple[Kind, ...] = ("profile", "semantic", "episodic")
LIST_LIMIT = 1_000_000
"""Listing a user's records asks the store for everything up to this count."""


def kind_namespace(user_id: str, kind: Kind) -> tuple[str, str, str]:
    """Namespace of a user's current memories of one kind: `("memories", user, kind)`.

    One namespace per kind keeps kind filters structural (no metadata scan) on every backend.
    """
    return (MEMORIES, user_label(user_id), kind)


REFUSED_INPUTS = "refused_inputs"
"""Session-record key: ids of messages another user sent to the thread (refused; LangGraph had
already stored them as the run's input), removed from the thread on the owner's next turn and
never shown as the owner's."""


def refused_inputs(session: dict[str, Any] | None) -> set[str]:
    """The ids of the refused inputs a session record notes (`REFUSED_INPUTS`)."""
    return {str(i) for i in (session or {}).get(REFUSED_INPUTS) or []}


class Repo:
    """Thin typed layer over a `BaseStore`: records, archive, history and sessions of users."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    # -- current records ------------------------------------------------------------------

    def get(self, user_id: str, memory_id: str, kinds: Sequence[Kind] | None = None) -> MemoryRecord | None:
        """The current record with this id, or None (also for another user's id).

        Args:
            user_id: Whose record.
            memory_id: Its id.
            kinds: Look only in these kinds' namespaces (one lookup instead of three).
        """
        ops = [GetOp(kind_namespace(user_id, kind), memory_id) for kind in (kinds or KINDS)]
        for item in self.store.batch(ops):  # one GetOp per kind: Item or None each
            if isinstance(item, Item):
                return self._record(user_id, item)
        return None

    def _record(self, user_id: str, item: Item) -> MemoryRecord | None:
        record = MemoryRecord.from_store(item.value)
        # Identity comes from the namespace, never from the stored value.
        if record.user_id != user_id:
            return None
        return record

    def records(self, user_id: str, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """All current records of a user (optionally of some kinds), oldest first."""
        ops = [SearchOp(kind_namespace(user_id, kind), limit=LIST_LIMIT) for kind in (kinds or KINDS)]
        out: list[MemoryRecord] = []
        for items in self.store.batch(ops):
            for item in cast("list[SearchItem]", items or []):
                rec = self._record(user_id, item)
                if rec is not None:
                    out.append(rec)
        out.sort(key=lambda r: r.created_at)
        return out

    def search(
        self,
        user_id: str,
        query: str,
        *,
        kinds: Sequence[Kind] | None = None,
        limit: int = 20,
        filters: dict[str, Any] | None = None,
        include_history: bool = False,
    ) -> list[tuple[MemoryRecord, float | None]]:
        """Similarity search in a user's namespaces; the user filter is the namespace itself.

        A filter may use `$in`; on a store that has no `$in` (LangGraph's in-memory and SQLite
        stores) each value is searched with `$eq` and the results are merged.
        """
        kinds = tuple(kinds or KINDS)
        ops = [
            SearchOp(kind_namespace(user_id, kind), filter=filters, limit=limit, query=query)
            for kind in kinds
        ]
        if include_history:
            flt = dict(filters or {})
            if len(kinds) == 1:
                flt["kind"] = kinds[0]
            elif set(kinds) != set(KINDS):
                flt["kind"] = {"$in": list(kinds)}
            ops.append(SearchOp(namespace(ARCHIVE, user_id), filter=flt or None, limit=limit, query=query))
        out: list[tuple[MemoryRecord, float | None]] = []
        for items in self._search_all(ops):
            for item in items:
                rec = self._record(user_id, item)
                if rec is not None:
                    out.append((rec, item.score if isinstance(item, SearchItem) else None))
        return out

    def _search_all(self, ops: list[SearchOp]) -> list[list[SearchItem]]:
        """Run search ops in one batch, spelling out `$in` filters for stores without them."""
        if filters_on_sets(self.store):
            return [cast("list[SearchItem]", r or []) for r in self.store.batch(ops)]
        plan: list[list[int]] = []
        flat: list[SearchOp] = []
        for op in ops:
            expanded = _spelled_out(op)
            plan.append(list(range(len(flat), len(flat) + len(expanded))))
            flat += expanded
        results = [cast("list[SearchItem]", r or []) for r in self.store.batch(flat)] if flat else []
        merged: list[list[SearchItem]] = []
        for op, idx in zip(ops, plan, strict=True):
            best: dict[str, SearchItem] = {}
            for i in idx:
                for item in results[i]:
                    if item.key not in best or (item.score or 0.0) > (best[item.key].score or 0.0):
                        best[item.key] = item
            ranked = (
                sorted(best.values(), key=lambda it: -(it.score or 0.0))
                if len(idx) > 1
                else list(best.values())
            )
            merged.append(ranked[: op.limit])
        return merged

    def find_subject(self, user_id: str, kind: Kind, subject: str) -> list[MemoryRecord]:
        """Current records of a kind that share a subject key (profile fields, orders)."""
        items = self.store.search(
            kind_namespace(user_id, kind), filter={"subject": subject}, limit=LIST_LIMIT
        )
        return [r for r in (self._record(user_id, i) for i in items) if r is not None]

    # -- writes ---------------------------------------------------------------------------

    def put_ops(self, record: MemoryRecord) -> list[PutOp]:
        """Ops that store a record as current."""
        return [
            PutOp(
                kind_namespace(record.user_id, record.kind),
                record.id,
                record.to_store(),
                index=["text"],
            )
        ]

    def archive_ops(self, old: MemoryRecord) -> list[PutOp]:
        """Ops that move a record out of the current view into the archive.

        The archive key is the memory's id and version, so archiving twice keeps one copy.
        """
        return [
            PutOp(kind_namespace(old.user_id, old.kind), old.id, None),
            PutOp(
                namespace(ARCHIVE, old.user_id), f"{old.id}@v{old.version}", old.to_store(), index=["text"]
            ),
        ]

    def remove_ops(self, record: MemoryRecord) -> list[PutOp]:
        """Ops that delete a current record."""
        return [PutOp(kind_namespace(record.user_id, record.kind), record.id, None)]

    def history_op(self, user_id: str, entry: HistoryEntry) -> PutOp:
        """Op that appends one history row."""
        return PutOp(namespace(HISTORY, user_id), entry.id, entry.model_dump(mode="json"), index=False)

    def apply(self, ops: Iterable[PutOp]) -> None:
        """Run write ops in one batch, with the user's revision log (see `revision.py`)."""
        ops = list(ops)
        if ops:
            apply_logged(self.store, ops)

    # -- archive and history ----------------------------------------------------------------

    def archived(self, user_id: str, memory_id: str | None = None) -> list[MemoryRecord]:
        """Superseded versions of a user's memories (of one memory if `memory_id`)."""
        flt = {"id": memory_id} if memory_id else None
        items = self.store.search(namespace(ARCHIVE, user_id), filter=flt, limit=LIST_LIMIT)
        return [r for r in (self._record(user_id, i) for i in items) if r is not None]

    def history(self, user_id: str, memory_id: str | None = None) -> list[HistoryEntry]:
        """History rows of a user (of one memory if `memory_id`), oldest first."""
        flt = {"memory_id": memory_id} if memory_id else None
        items = self.store.search(namespace(HISTORY, user_id), filter=flt, limit=LIST_LIMIT)
        rows = [HistoryEntry.model_validate(i.value) for i in items]
        rows.sort(key=lambda r: r.at)
        return rows

    def history_items(self, user_id: str, memory_id: str) -> list[Item]:
        """Raw history items of one memory (to scrub them when it is forgotten)."""
        return list(
            self.store.search(namespace(HISTORY, user_id), filter={"memory_id": memory_id}, limit=LIST_LIMIT)
        )

    # -- sessions -----------------------------------------------------------------------------

    def session(self, user_id: str, thread_id: str) -> dict[str, Any] | None:
        """The session record of a thread, or None."""
        item = self.store.get(namespace(SESSIONS, user_id), thread_id)
        return dict(item.value) if item else None

    def put_session(self, user_id: str, thread_id: str, value: dict[str, Any]) -> None:
        """Create or update a session record."""
        self.store.put(namespace(SESSIONS, user_id), thread_id, value, index=False)

    def sessions(self, user_id: str) -> list[dict[str, Any]]:
        """All session records of a user."""
        items = self.store.search(namespace(SESSIONS, user_id), limit=LIST_LIMIT)
        return [dict(i.value) for i in items]

    def delete_session(self, user_id: str, thread_id: str) -> None:
        """Remove a session record."""
        self.store.delete(namespace(SESSIONS, user_id), thread_id)

    # -- whole users ------------------------------------------------------------------------

    def user_namespaces(self, user_id: str) -> list[tuple[str, ...]]:
        """Every namespace holding data of a user."""
        label = user_label(user_id)
        return [
            *(kind_namespace(user_id, k) for k in KINDS),
            (ARCHIVE, label),
            (HISTORY, label),
            (EXPIRY, label),
            (PENDING, label),
            (USAGE, label),
            (REVISIONS, label),
            (SESSIONS, label),
        ]

    def drop_user(self, user_id: str, *, sessions: bool = False) -> int:
        """Delete all memories, archive and history of a user (and session records if asked).

        Returns:
            The number of current memories deleted.
        """
        count = len(self.records(user_id))
        targets = self.user_namespaces(user_id)
        if not sessions:
            targets = [ns for ns in targets if ns[0] != SESSIONS]
        drop = getattr(self.store, "drop_namespace", None)
        for ns in targets:
            if drop is not None:
                drop(ns)
                continue
            while True:
                items = self.store.search(ns, limit=1000)
                if not items:
                    break
                self.store.batch([PutOp(ns, i.key, None) for i in items])
        return count

    def users(self) -> list[str]:
        """Ids of users that have memories."""
        spaces = self.store.list_namespaces(prefix=(MEMORIES,), max_depth=2, limit=LIST_LIMIT)
        return sorted({label_user(ns[1]) for ns in spaces if len(ns) >= 2})


def _spelled_out(op: SearchOp) -> list[SearchOp]:
    """A search op whose `{"field": {"$in": [...]}}` conditions are one `$eq` op per value."""
    flt = dict(op.filter or {})
    key = next((k for k, v in flt.items() if isinstance(v, dict) and set(v) == {"$in"}), None)
    if key is None:
        return [op]
    values = list(flt.pop(key)["$in"])
    out: list[SearchOp] = []
    for value in values:
        sub = SearchOp(op.namespace_prefix, {**flt, key: {"$eq": value}}, op.limit, op.offset, op.query)
        out += _spelled_out(sub)
    return out


__all__ = ["KINDS", "Repo", "check_user", "kind_namespace"]
