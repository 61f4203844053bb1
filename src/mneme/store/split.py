"""An embedded home's store: memories and their vectors in Chroma, every plain row in SQLite.

A write of one memory touches four namespaces: the record (with its vector), its history row,
its expiry row and the user's revision log. In Chroma each namespace is a collection and each
collection write is a transaction of its own with a sync to disk (about 9 ms on a quiet disk,
30 ms on a busy one), so three of a write's four store calls were spent on rows that have no
vector. Here only the namespaces that are searched by meaning (`memories`, `memory_archive`)
stay in Chroma; history, expiry, revision logs, use counts, pending jobs and session records go
to a SQLite database beside it (LangGraph's `SqliteStore`, WAL mode), where a batch of rows is
one transaction that costs well under a millisecond.

A batch keeps its order across the two: its history rows are written before the records they
describe and its revision log after them, as `write.py` and `revision.py` expect. Its first
SQLite transaction also journals what follows, so a process killed between the two finishes
the batch at the next open: a history row is never left without its record. A home made
before this layout keeps its plain rows in Chroma; `open` moves them over once.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
)
from langgraph.store.sqlite import SqliteStore

from mneme.memory.record import EXPIRY, HISTORY, PENDING, SESSIONS
from mneme.memory.revision import REVISIONS, USAGE
from mneme.store.chroma import ChromaStore
from mneme.store.scrub import scrub_sqlite

ROW_ROOTS = frozenset({HISTORY, EXPIRY, PENDING, SESSIONS, REVISIONS, USAGE})
"""Namespace roots kept in SQLite: rows that are never searched by meaning."""
_META = ("mneme_layout",)
_LAYOUT_KEY = "rows"
_JOURNAL = ("mneme_journal",)
"""Batches of writes to both sides that are under way (normally empty)."""


def _rows(namespace: tuple[str, ...]) -> bool | None:
    """Whether a namespace lives in SQLite (None: an empty prefix, which spans both)."""
    if not namespace:
        return None
    return namespace[0] in ROW_ROOTS or namespace in (_META, _JOURNAL)


def _dump(op: PutOp) -> dict[str, Any]:
    index = op.index if op.index is None or op.index is False else list(op.index)
    return {"ns": list(op.namespace), "key": op.key, "value": op.value, "index": index}


def _load(raw: dict[str, Any]) -> PutOp:
    index = raw.get("index")
    return PutOp(
        tuple(raw["ns"]), str(raw["key"]), raw.get("value"), index=index if index is not None else None
    )


def _target(op: Op) -> bool | None:
    if isinstance(op, GetOp | PutOp):
        return _rows(op.namespace)
    if isinstance(op, SearchOp):
        return _rows(op.namespace_prefix)
    return None  # list_namespaces: both


class SplitStore(BaseStore):
    """A `BaseStore` over a `ChromaStore` (vectors) and a `SqliteStore` (plain rows).

    What mneme's read path asks of its store beyond `BaseStore` (`nearest`, `count`,
    `drop_namespace`, `embeddings`, `snapshot_dir`) is answered by the side that holds the
    namespace.
    """

    supports_ttl = True
    """Time to live is the vector side's (every namespace a LangGraph server's users write goes
    there); mneme's own plain rows never expire by TTL."""

    def __init__(self, vectors: ChromaStore, rows: SqliteStore) -> None:
        """Join a Chroma store and a SQLite store (already set up)."""
        self.vectors = vectors
        self.rows = rows
        self.embeddings = vectors.embeddings
        self.index_config = vectors.index_config
        self.snapshot_dir = vectors.snapshot_dir
        self.url: str | None = None

    @classmethod
    def open(cls, folder: Path, *, index: Any) -> SplitStore:
        """Open (or create) the store of a home folder: `chroma/` and `memory.sqlite` in it.

        One process only, as the embedded Chroma is (the home's lock guarantees it).
        """
        vectors = ChromaStore.open(str(folder / "chroma"), index=index)
        conn = sqlite3.connect(folder / "memory.sqlite", check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # a commit survives a killed process
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA secure_delete=ON")  # forgotten text is overwritten, not left in free pages
        rows = SqliteStore(conn)
        rows.setup()
        store = cls(vectors, rows)
        store._adopt_old_rows()
        store._replay()
        return store

    def close(self) -> None:
        """Close the SQLite connection."""
        self.rows.conn.close()

    @property
    def ttl_config(self) -> Any:
        """The TTL settings (those of the vector side)."""
        return self.vectors.ttl_config

    @ttl_config.setter
    def ttl_config(self, value: Any) -> None:
        self.vectors.ttl_config = value

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> Any:
        """Start the vector side's sweeper of expired items."""
        return self.vectors.start_ttl_sweeper(sweep_interval_minutes)

    def scrub(self, keys: Iterable[str] = ()) -> Any:
        """Remove from both sides' files what deleted records left there.

        The Chroma side as `ChromaStore.scrub` does; `memory.sqlite` (history, sessions and the
        other plain rows) is rebuilt so that no deleted row stays in its file or its WAL.

        Returns:
            The Chroma side's report.
        """
        report = self.vectors.scrub(keys)
        path = Path(self.rows.conn.execute("PRAGMA database_list").fetchone()[2])
        with self.rows.lock:
            scrub_sqlite(path, self.rows.conn)
        return report

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the vector side's sweeper (True if it stopped or was not running)."""
        return self.vectors.stop_ttl_sweeper(timeout)

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many."""
        return self.vectors.sweep_ttl()

    # -- routing -------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order: each run of consecutive ops for one side is one call to that side.

        A batch of writes to both sides is journaled: the first SQLite transaction also
        records every write that follows it, and the last one removes that record, so a
        process killed in between finishes the batch when the store is next opened (a
        history row never stays without its record).
        """
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        runs: list[tuple[bool | None, int, int]] = []
        i = 0
        while i < len(ops):
            side = _target(ops[i])
            j = i + 1
            while side is not None and j < len(ops) and _target(ops[j]) is side:
                j += 1
            runs.append((side, i, j))
            i = j
        journal = self._journal(ops, runs)
        try:
            self._run(ops, runs, journal, results)
        except BaseException:
            # A batch that fails in a live process is reported to its caller, as before; its
            # journal must not replay later over what this process writes next.
            if journal is not None:
                self.rows.batch([PutOp(_JOURNAL, journal[1].key, None)])
            raise
        return results

    def _run(
        self,
        ops: list[Op],
        runs: list[tuple[bool | None, int, int]],
        journal: tuple[int, PutOp] | None,
        results: list[Result],
    ) -> None:
        for n, (side, i, j) in enumerate(runs):
            if side is None:
                results[i] = self._both(ops[i])
                continue
            extra: list[Op] = []
            if journal is not None and side:
                if n == journal[0]:
                    extra.append(journal[1])
                if n == len(runs) - 1:
                    extra.append(PutOp(_JOURNAL, journal[1].key, None))
            store: BaseStore = self.rows if side else self.vectors
            results[i:j] = store.batch([*ops[i:j], *extra])[: j - i]
        if journal is not None and runs[-1][0] is not True:
            self.rows.batch([PutOp(_JOURNAL, journal[1].key, None)])

    def _journal(self, ops: list[Op], runs: list[tuple[bool | None, int, int]]) -> tuple[int, PutOp] | None:
        """(index of the run that writes it, the journal row) for a batch of writes to both sides."""
        if not all(isinstance(op, PutOp) for op in ops) or len({side for side, _, _ in runs}) < 2:
            return None
        first_vectors = next(n for n, (side, _, _) in enumerate(runs) if side is False)
        at = first_vectors - 1 if first_vectors > 0 else -1
        start = runs[first_vectors][1]
        pending = [_dump(op) for op in ops[start:] if isinstance(op, PutOp)]
        row = PutOp(_JOURNAL, uuid.uuid4().hex, {"ops": pending}, index=False)
        if at < 0:  # the batch starts in Chroma: its journal row goes first, on its own
            self.rows.batch([row])
        return at, row

    def _replay(self) -> int:
        """Finish the batches a killed process left half-written (see `batch`); how many."""
        entries = self.rows.search(_JOURNAL, limit=100_000)
        for entry in sorted(entries, key=lambda e: e.created_at):
            ops = [_load(raw) for raw in entry.value.get("ops", [])]
            vector_ops = [op for op in ops if not _rows(op.namespace)]
            row_ops = [op for op in ops if _rows(op.namespace)]
            if vector_ops:
                self.vectors.batch(vector_ops)
            self.rows.batch([*row_ops, PutOp(_JOURNAL, entry.key, None)])
        return len(entries)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch`: runs in a worker thread so the event loop never blocks."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _both(self, op: Op) -> Result:
        if isinstance(op, ListNamespacesOp):
            wide = ListNamespacesOp(
                match_conditions=op.match_conditions,
                max_depth=op.max_depth,
                limit=op.offset + op.limit,
                offset=0,
            )
            found = {*self.vectors.batch([wide])[0], *self.rows.batch([wide])[0]}  # type: ignore[misc]
            return sorted(found)[op.offset : op.offset + op.limit]
        assert isinstance(op, SearchOp)
        wide_search = SearchOp(
            op.namespace_prefix, op.filter, op.offset + op.limit, 0, op.query, op.refresh_ttl
        )
        items = [*self.vectors.batch([wide_search])[0], *self.rows.batch([wide_search])[0]]  # type: ignore[misc]
        if op.query:
            items.sort(key=lambda it: it.score if it.score is not None else float("-inf"), reverse=True)
        return items[op.offset : op.offset + op.limit]

    # -- what the read path asks of a store ---------------------------------------------------

    def nearest(
        self, namespace: tuple[str, ...], query: str, limit: int, filter: Any = None, **kw: Any
    ) -> Any:
        """`ChromaStore.nearest` (only memories have vectors)."""
        return self.vectors.nearest(namespace, query, limit, filter, **kw)

    def count(self, namespace: tuple[str, ...]) -> int:
        """Number of items in one namespace."""
        if _rows(namespace):
            cur = self.rows.conn.execute(
                "SELECT count(*) FROM store WHERE prefix = ?", (".".join(namespace),)
            )
            return int(cur.fetchone()[0])
        return self.vectors.count(namespace)

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Delete a whole namespace at once."""
        if _rows(namespace):
            with self.rows.lock:
                self.rows.conn.execute("DELETE FROM store WHERE prefix = ?", (".".join(namespace),))
            return
        self.vectors.drop_namespace(namespace)

    # -- homes made before this layout ---------------------------------------------------------

    def _adopt_old_rows(self) -> None:
        """Move plain rows that an older mneme kept in Chroma into SQLite, once.

        The rows are copied (idempotent puts), the layout is marked, then the Chroma copies
        are dropped: a process killed half-way copies again at the next start.
        """
        done = self.rows.get(_META, _LAYOUT_KEY)
        old = [
            ns
            for root in sorted(ROW_ROOTS)
            for ns in self.vectors.list_namespaces(prefix=(root,), limit=1_000_000)
        ]
        if done is None:
            for ns in old:
                offset = 0
                while True:
                    page = self.vectors.search(ns, limit=5_000, offset=offset)
                    if not page:
                        break
                    self.rows.batch([PutOp(ns, item.key, item.value, index=False) for item in page])
                    offset += len(page)
            self.rows.put(_META, _LAYOUT_KEY, {"version": 1}, index=False)
        for ns in old:
            self.vectors.drop_namespace(ns)


__all__ = ["ROW_ROOTS", "SplitStore"]
