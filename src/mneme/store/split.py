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
describe and its revision log after them, as `write.py` and `revision.py` expect. A home made
before this layout keeps its plain rows in Chroma; `open` moves them over once.
"""

from __future__ import annotations

import asyncio
import sqlite3
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

ROW_ROOTS = frozenset({HISTORY, EXPIRY, PENDING, SESSIONS, REVISIONS, USAGE})
"""Namespace roots kept in SQLite: rows that are never searched by meaning."""
_META = ("mneme_layout",)
_LAYOUT_KEY = "rows"


def _rows(namespace: tuple[str, ...]) -> bool | None:
    """Whether a namespace lives in SQLite (None: an empty prefix, which spans both)."""
    if not namespace:
        return None
    return namespace[0] in ROW_ROOTS or namespace == _META


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

    supports_ttl = False

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
        rows = SqliteStore(conn)
        rows.setup()
        store = cls(vectors, rows)
        store._adopt_old_rows()
        return store

    def close(self) -> None:
        """Close the SQLite connection."""
        self.rows.conn.close()

    # -- routing -------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order: each run of consecutive ops for one side is one call to that side."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            side = _target(ops[i])
            if side is None:
                results[i] = self._both(ops[i])
                i += 1
                continue
            j = i
            while j < len(ops) and _target(ops[j]) is side:
                j += 1
            store: BaseStore = self.rows if side else self.vectors
            results[i:j] = store.batch(ops[i:j])
            i = j
        return results

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
