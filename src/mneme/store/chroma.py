"""A LangGraph `BaseStore` whose items and vectors live in Chroma (on disk or on a server)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path

from mneme.errors import InputError
from mneme.store import scrub as disk

logger = logging.getLogger(__name__)

QUEUE_TRIM_CHARS = 20_000
"""Characters written to a collection after which its applied queue rows are trimmed: each
later write to it re-reads what they hold (about 0.5 ms per 1,000 characters, `scrub.trim_queue`)."""
_VALUE = "_v"  # the item's value, JSON
_CREATED = "_c"  # ISO time of creation
_UPDATED = "_u"  # ISO time of last update
_INDEXED = "_ix"  # whether the stored vector is a real embedding
_VECTORS = "_nv"  # how many vectors the item has, when more than one (the others: `_extras`)
_EXPIRES = "_exp"  # when the item expires (epoch seconds), for items with a TTL
_TTL = "_ttl"  # the item's TTL in minutes
_PARENT = "_k"  # in a vector collection: the key of the item a vector belongs to
_FIELD = "f_"  # prefix of top-level scalar fields copied out of the value for filtering
_RAW = "x_"  # prefix: a top-level field whose value Chroma cannot compare (list, dict, null, huge)
_OPS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"}
_RANGE = {"$gt", "$gte", "$lt", "$lte"}
_NS_KIND = "mneme-namespace"
_VEC_KIND = "mneme-vectors"
_LIMIT = 2**63
"""Chroma keeps integers as int64: numbers at or past this magnitude are compared in Python."""
GET_PAGE = 10_000
"""Rows read per Chroma `get`: one larger read fails past ~32,000 rows (SQLite's variable limit)."""
EXACT_KEYS = 2_000
"""`nearest(keys=...)` scores at most this many items exactly (reading their vectors back)."""
_MISSING = object()


def _now() -> datetime:
    return datetime.now(UTC)


def _collection_name(prefix: str, namespace: tuple[str, ...]) -> str:
    digest = hashlib.sha256(json.dumps(list(namespace)).encode()).hexdigest()[:40]
    return f"{prefix}-{digest}"


def _comparable(val: Any) -> bool:
    """Whether Chroma can hold and compare this scalar exactly as Python does."""
    if isinstance(val, bool | str):
        return True
    if isinstance(val, int):
        return -_LIMIT <= val < _LIMIT
    if isinstance(val, float):
        return math.isfinite(val) and abs(val) < _LIMIT
    return False


def _number(val: Any) -> bool:
    return isinstance(val, int | float) and not isinstance(val, bool)


def _row_chars(meta: Mapping[str, Any], document: str) -> int:
    """What one upserted row leaves in Chroma's queue, in characters.

    Its document and every metadata value: the value's JSON and its flattened filter fields,
    each a copy of the text it holds.
    """
    return len(document) + sum(len(v) if isinstance(v, str) else 8 for v in meta.values() if v is not None)


def _flatten(value: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level fields of a value as Chroma metadata: comparable scalars, else a marker."""
    out: dict[str, Any] = {}
    for key, val in value.items():
        if _comparable(val):
            out[_FIELD + key] = val
        else:
            out[_RAW + key] = True
    return out


def _equal(a: Any, b: Any) -> bool:
    """Equality as Chroma applies it: booleans equal only booleans, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _apply(op: str, val: Any, operand: Any) -> bool:
    """One condition on one field's value (`_MISSING` when the item lacks the field)."""
    if op == "$eq":
        return val is not _MISSING and _equal(val, operand)
    if op == "$ne":
        return val is _MISSING or not _equal(val, operand)
    if op == "$in":
        return val is not _MISSING and any(_equal(val, o) for o in operand)
    if op == "$nin":
        return val is _MISSING or not any(_equal(val, o) for o in operand)
    if _number(operand):
        if not _number(val):
            return False
    elif not (isinstance(operand, str) and isinstance(val, str)):
        return False
    if op == "$gt":
        return bool(val > operand)
    if op == "$gte":
        return bool(val >= operand)
    if op == "$lt":
        return bool(val < operand)
    return bool(val <= operand)


@dataclass
class _Check:
    """A condition evaluated in Python, on every row or only on rows whose field is raw."""

    key: str
    op: str
    operand: Any
    raw_only: bool


@dataclass
class CompiledFilter:
    """A LangGraph store filter as a Chroma `where` plus the conditions Chroma cannot decide.

    `where` admits every item that matches (and perhaps more); each row it returns is then
    checked against `checks` on its decoded value. Most filters need no check at all.
    """

    where: dict[str, Any] | None = None
    checks: list[_Check] = field(default_factory=list)

    def admits(self, meta: Mapping[str, Any], value: Mapping[str, Any]) -> bool:
        """Whether a row that `where` returned matches the filter."""
        for check in self.checks:
            if check.raw_only and not meta.get(_RAW + check.key):
                continue  # Chroma decided this one on the comparable value
            if not _apply(check.op, value.get(check.key, _MISSING), check.operand):
                return False
        return True


def _any_of(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _all_of(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _by_type(values: Sequence[Any]) -> list[list[Any]]:
    """Chroma's `$in` takes values of one type: group them (bool, int, float, str)."""
    groups: dict[type, list[Any]] = {}
    for v in values:
        groups.setdefault(type(v), []).append(v)
    return list(groups.values())


def _condition(key: str, op: str, operand: Any) -> tuple[dict[str, Any] | None, _Check | None]:
    """The `where` clause (a superset) and the Python check of one condition on one field."""
    f, raw = _FIELD + key, {_RAW + key: True}
    if op in ("$eq", "$ne"):
        if isinstance(operand, list):
            operand = list(operand)
        elif not isinstance(operand, bool | int | float | str):
            raise InputError(f"mneme: filter on {key!r} needs a scalar or a list, got {operand!r}")
        if _comparable(operand):
            return {f: {op: operand}}, None
        if op == "$eq":  # a list, or a number Chroma cannot hold: only raw fields can be equal
            return raw, _Check(key, op, operand, raw_only=False)
        return None, _Check(key, op, operand, raw_only=False)
    if op in ("$in", "$nin"):
        if not isinstance(operand, list | tuple) or not operand:
            raise InputError(f"mneme: {op} on {key!r} needs a non-empty list")
        if not all(isinstance(o, bool | int | float | str) for o in operand):
            raise InputError(f"mneme: {op} on {key!r} needs a list of scalars, got {operand!r}")
        operand = list(operand)
        plain = [o for o in operand if _comparable(o)]
        odd = len(plain) < len(operand)
        if op == "$in":
            clauses: list[dict[str, Any]] = [{f: {"$in": g}} for g in _by_type(plain)]
            if odd:
                clauses.append(raw)
            return _any_of(clauses), (_Check(key, op, operand, raw_only=True) if odd else None)
        if odd:
            return None, _Check(key, op, operand, raw_only=False)
        return _all_of([{f: {"$nin": g}} for g in _by_type(plain)]), None
    # $gt $gte $lt $lte
    if isinstance(operand, str):
        return None, _Check(key, op, operand, raw_only=False)
    if not _number(operand):
        raise InputError(f"mneme: {op} on {key!r} needs a number, got {operand!r}")
    check = _Check(key, op, operand, raw_only=True)
    if _comparable(operand):
        return {"$or": [{f: {op: operand}}, raw]}, check
    # inf, nan or a huge number: every comparable value lies strictly inside (-2**63, 2**63),
    # so such an operand either admits all of them or none.
    above = op in ("$lt", "$lte")
    if not math.isnan(operand) and (operand > 0) == above:
        return {"$or": [{f: {"$gte": -float(_LIMIT)}}, raw]}, check
    return raw, check


def compile_filter(flt: dict[str, Any] | None) -> CompiledFilter:
    """Translate a LangGraph store filter into a Chroma `where` and the checks left to Python.

    Supported: equality on top-level fields (scalars, and lists compared whole), and the
    operators `$eq $ne $gt $gte $lt $lte $in $nin`. Values Chroma cannot hold or compare
    (lists, huge integers, infinities, NaN) are compared in Python, so every filter gives
    the answer Python would; anything else is refused rather than guessed.

    Args:
        flt: The filter given to `BaseStore.search`.

    Returns:
        The compiled filter (no `where` and no checks for no filter).
    """
    out = CompiledFilter()
    if not flt:
        return out
    clauses: list[dict[str, Any]] = []
    for key, cond in flt.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise InputError(f"mneme: unsupported filter key {key!r}")
        if isinstance(cond, dict):
            if not cond:
                raise InputError(f"mneme: empty condition on {key!r}")
            conds = list(cond.items())
        else:
            conds = [("$eq", cond)]
        for op, operand in conds:
            if op not in _OPS:
                raise InputError(f"mneme: unsupported filter operator {op!r} on {key!r}")
            clause, check = _condition(key, op, operand)
            if clause is not None:
                clauses.append(clause)
            if check is not None:
                out.checks.append(check)
    out.where = _all_of(clauses)
    return out


def _with(where: dict[str, Any] | None, clause: dict[str, Any]) -> dict[str, Any]:
    return clause if where is None else {"$and": [where, clause]}


def _cosine(q: np.ndarray, mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    out = np.zeros(len(mat), dtype=np.float64)
    ok = norms > 0
    out[ok] = (mat[ok] @ q) / norms[ok]
    return out


def _op_key(op: Op) -> str:
    return repr(op)


def _normalized(op: Op) -> Op:
    """The op with tuple namespaces (LangGraph's API also takes lists)."""
    if isinstance(op, GetOp | PutOp) and not isinstance(op.namespace, tuple):
        return op._replace(namespace=tuple(op.namespace))
    if isinstance(op, SearchOp) and not isinstance(op.namespace_prefix, tuple):
        return op._replace(namespace_prefix=tuple(op.namespace_prefix))
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        conds = tuple(
            MatchCondition(c.match_type, (c.path,) if isinstance(c.path, str) else tuple(c.path))
            for c in op.match_conditions
        )
        return op._replace(match_conditions=conds)
    return op


@dataclass
class _Row:
    """One item read back, with what a search needs to rank, filter and return it."""

    ns: tuple[str, ...]
    key: str
    meta: dict[str, Any]
    score: float | None = None
    _value: Any = None

    @property
    def value(self) -> dict[str, Any]:
        if self._value is None:
            self._value = json.loads(self.meta[_VALUE])
        return cast("dict[str, Any]", self._value)

    def search_item(self) -> SearchItem:
        return SearchItem(
            namespace=self.ns,
            key=self.key,
            value=self.value,
            created_at=datetime.fromisoformat(self.meta[_CREATED]),
            updated_at=datetime.fromisoformat(self.meta[_UPDATED]),
            score=self.score,
        )


class ChromaStore(BaseStore):
    """LangGraph store backed by Chroma: one collection per namespace.

    Keeping each namespace (for mneme, each user's memories) in its own collection means a
    search never scans another user's records, and that the common search needs no metadata
    filter at all: Chroma applies `where` filters by scanning metadata, which costs about
    30 ms at 10,000 records, while an unfiltered HNSW query costs about 3 ms.

    Values are kept as JSON in the metadata; their top-level scalar fields are copied out so
    that `filter=` runs inside Chroma. An item gets one vector per text its index fields give
    (the first in the namespace's collection, any others in a companion collection made
    when first needed) and a query scores it by its best one, as LangGraph's stores do.
    Items put with `index=False` hold a zero vector: a query ranks them after every scored
    item, with `score=None`. Items put with a `ttl` expire; `sweep_ttl` (or the sweeper
    thread) deletes them, and reads refresh them when asked to.

    Concurrent single operations from one event loop (`aget`, `aput`, ...) are run as one
    batch in a worker thread, as LangGraph's own async stores batch them: their reads see
    the store as it was before the batch's writes, and the last write to a key wins.
    """

    supports_ttl = True

    def __init__(
        self,
        client: ClientAPI,
        *,
        index: IndexConfig | None = None,
        prefix: str = "mneme",
        ttl: TTLConfig | None = None,
    ) -> None:
        """Wrap a Chroma client.

        Args:
            client: A `chromadb.PersistentClient` or `chromadb.HttpClient`.
            index: LangGraph index config (`embed`, `dims`, `fields`); without it, search
                ignores `query` and the store keeps no vectors.
            prefix: Prefix of the collection names this store owns.
            ttl: LangGraph TTL config (`default_ttl` minutes, `refresh_on_read`,
                `sweep_interval_minutes`, `omit_expired`); without it items never expire
                unless a put gives them a `ttl`.
        """
        self.client = client
        self.prefix = prefix
        self.index_config = dict(index) if index else None
        self.ttl_config = ttl
        self.embeddings: Embeddings | None = None
        self.dims = 1
        self.fields: list[str] = ["$"]
        if index:
            self.embeddings = ensure_embeddings(index.get("embed"))
            self.dims = int(index["dims"])
            self.fields = list(index.get("fields") or ["$"])
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, ...], Collection] = {}
        self._extras: dict[tuple[str, ...], Collection] = {}
        self._ttl_namespaces: set[tuple[str, ...]] = set()
        self._registry_at = 0.0
        self._pending: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, list[tuple[Op, asyncio.Future[Any]]]
        ]
        self._pending = weakref.WeakKeyDictionary()
        self._pending_lock = threading.Lock()  # loops in other threads may share this store
        self._running: set[asyncio.Task[None]] = set()
        self._sweeper: threading.Thread | None = None
        self._sweep_stop = threading.Event()
        self.snapshot_dir: Path | None = None
        """A folder for data derived from this store (the read path's index snapshots); set
        by `open` inside the store's folder, None for a Chroma server."""
        self.url: str | None = None
        """The Chroma server's URL (`connect`), which other processes may share; None if embedded."""
        self.folder: Path | None = None
        """The folder of an embedded store (`open`), whose files `scrub` cleans; None for a server."""
        self.gate = disk.Gate()
        """Shared by every store call, held alone by `scrub` (which needs the folder to itself)."""
        self._zeroed: set[str] = set()
        self._queued: dict[str, int] = {}
        """Characters written per collection since its queue rows were last trimmed."""
        self._due: dict[str, int] = {}
        """Collections written past `QUEUE_TRIM_CHARS`, each with its highest queue row trimmed."""
        self._trimmed: dict[str, int] = {}
        """The highest queue row trimmed per collection (`scrub.trim_queue`)."""

    @classmethod
    def open(
        cls, path: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> ChromaStore:
        """Open (or create) a store in a folder, with Chroma's embedded client.

        One process only: Chroma's embedded client is not process-safe.
        """
        disk.zero_all_once(Path(path))  # a folder written before its new collections were zeroed
        client = chromadb.PersistentClient(
            path=path, settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        store = cls(client, index=index, ttl=ttl)
        store.snapshot_dir = Path(path) / "mneme-derived"
        store.folder = Path(path)
        return store

    @classmethod
    def connect(
        cls, url: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> ChromaStore:
        """Connect to a Chroma server (`chroma run`) that several processes can share."""
        from urllib.parse import urlparse

        parsed = urlparse(url if "://" in url else f"http://{url}")
        client = chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=parsed.port or 8000,
            ssl=parsed.scheme == "https",
            settings=Settings(anonymized_telemetry=False),
        )
        store = cls(client, index=index, ttl=ttl)
        store.url = url
        return store

    def close(self) -> None:
        """Stop the TTL sweeper and release the Chroma client."""
        self._stop_sweeper(None)
        close = getattr(self.client, "close", None)
        try:
            if close is not None:
                close()
        except Exception:  # pragma: no cover - a client that cannot close has nothing to release
            logger.debug("chroma client close failed", exc_info=True)

    # -- namespaces -----------------------------------------------------------------------

    def _refresh_registry(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._registry_at < 2.0:
            return
        with self._lock:
            for col in self.client.list_collections():
                meta = col.metadata or {}
                if not col.name.startswith(self.prefix + "-") or "ns" not in meta:
                    continue
                ns = tuple(json.loads(meta["ns"]))
                if meta.get("kind") == _NS_KIND:
                    self._collections.setdefault(ns, col)
                    if meta.get("ttl"):
                        self._ttl_namespaces.add(ns)
                elif meta.get("kind") == _VEC_KIND:
                    self._extras.setdefault(ns, col)
            self._registry_at = time.monotonic()

    def _collection(self, namespace: tuple[str, ...], *, create: bool) -> Collection | None:
        col = self._collections.get(namespace)
        if col is not None:
            return col
        with self._lock:
            col = self._collections.get(namespace)
            if col is not None:
                return col
            col = self._open_collection(_collection_name(self.prefix, namespace), namespace, _NS_KIND, create)
            if col is not None:
                self._collections[namespace] = col
                if (col.metadata or {}).get("ttl"):
                    self._ttl_namespaces.add(namespace)
            return col

    def _vector_collection(self, namespace: tuple[str, ...], *, create: bool) -> Collection | None:
        """The companion collection of a namespace's second and later vectors per item."""
        col = self._extras.get(namespace)
        if col is not None or not create:
            return col
        with self._lock:
            col = self._extras.get(namespace)
            if col is None:
                name = _collection_name(self.prefix, namespace) + "-v"
                col = self._open_collection(name, namespace, _VEC_KIND, True)
                assert col is not None
                self._extras[namespace] = col
            return col

    def _open_collection(
        self, name: str, namespace: tuple[str, ...], kind: str, create: bool
    ) -> Collection | None:
        if create:
            return self.client.get_or_create_collection(
                name,
                metadata={"kind": kind, "ns": json.dumps(list(namespace)), "hnsw:space": "cosine"},
                embedding_function=None,
            )
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception:  # chromadb raises NotFoundError (or ValueError on old clients)
            return None

    def _mark_ttl(self, namespace: tuple[str, ...], col: Collection) -> None:
        """Flag a collection as holding items with a TTL, so that sweeps look only there."""
        if namespace in self._ttl_namespaces:
            return
        meta = {k: v for k, v in (col.metadata or {}).items() if not k.startswith("hnsw:")}
        col.modify(metadata={**meta, "ttl": True})
        self._ttl_namespaces.add(namespace)

    def _matching(self, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Collection]]:
        """Collections whose namespace starts with `prefix`, in namespace order."""
        self._refresh_registry()
        exact = self._collection(prefix, create=False)
        out = [(prefix, exact)] if exact is not None else []
        out += [
            (ns, col)
            for ns, col in list(self._collections.items())
            if len(ns) > len(prefix) and ns[: len(prefix)] == prefix
        ]
        return sorted(out, key=lambda p: p[0])

    # -- operations -----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run a batch of get / search / put / list-namespaces operations in order."""
        with self.gate.shared():
            results = self._batch([_normalized(op) for op in ops])
        self._trim_if_due()
        return results

    def _wrote(self, collection: Collection, chars: int) -> None:
        """Count what a write left in Chroma's queue (embedded store only)."""
        if self.folder is not None:
            with self._lock:
                key = str(collection.id)
                self._queued[key] = self._queued.get(key, 0) + chars
                if self._queued[key] >= QUEUE_TRIM_CHARS:
                    self._due[key] = self._trimmed.get(key, 0)

    def _trim_if_due(self) -> None:
        """Trim the queue rows of the collections written past `QUEUE_TRIM_CHARS` (embedded only).

        Runs between calls, only when no other call is in progress (it never makes a search
        wait behind a long write), with the gate held alone for the few milliseconds of one
        UPDATE; a collection not trimmed now is tried again after the next write.
        """
        if not self._due or self.folder is None or self.gate.held_here():
            return
        with self._lock:
            due = dict(self._due)
        try:
            with self.gate.exclusive_now() as alone:
                if not alone:
                    return
                done = disk.trim_queue(self.folder, due)
        except sqlite3.Error:  # a busy or read-only database: the next write tries again
            logger.debug("queue trim failed", exc_info=True)
            return
        with self._lock:
            self._trimmed.update(done)
            for key in done:
                self._queued[key] = 0
                self._due.pop(key, None)

    def _batch(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        puts: list[tuple[int, PutOp]] = []
        gets: dict[int, Item | None] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                puts.append((i, op))
                continue
            if puts:  # keep read-after-write order within one batch
                self._apply_puts([p for _, p in puts])
                puts = []
            if isinstance(op, GetOp):
                if i not in gets:  # this get and the gets right after it, one read per namespace
                    run = []
                    for j in range(i, len(ops)):
                        if not isinstance(ops[j], GetOp):
                            break
                        run.append(j)
                    gets.update(self._get_many([(j, cast(GetOp, ops[j])) for j in run]))
                results[i] = gets.pop(i)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:  # pragma: no cover - LangGraph adds no other op types today
                raise InputError(f"mneme: unsupported store operation {type(op).__name__}")
        if puts:
            self._apply_puts([p for _, p in puts])
        return results

    def _batch_together(self, ops: list[Op]) -> list[Result]:
        """Concurrent single operations as one batch: reads first (equal ones once), then writes."""
        with self.gate.shared():  # as `batch`: a scrub or a queue trim never runs beside it
            results = self._together([_normalized(op) for op in ops])
        self._trim_if_due()
        return results

    def _together(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        results_of = self._get_many([(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)])
        for i, got in results_of.items():
            results[i] = got
        memo: dict[str, list[Any]] = {}
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp | ListNamespacesOp):
                key = _op_key(op)
                if key not in memo:
                    memo[key] = self._search(op) if isinstance(op, SearchOp) else self._list_namespaces(op)
                results[i] = list(memo[key])
        puts = [op for op in ops if isinstance(op, PutOp)]
        if puts:
            self._apply_puts(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch` in a worker thread; concurrent single operations share one batch."""
        ops = list(ops)
        if len(ops) != 1:
            return await asyncio.to_thread(self.batch, ops)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        with self._pending_lock:
            queue = self._pending.get(loop)
            if queue is None:
                queue = self._pending[loop] = []
                loop.call_soon(self._flush, loop)
            queue.append((ops[0], fut))
        return [await fut]

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._pending_lock:
            queue = self._pending.pop(loop, None)
        if queue:
            task = loop.create_task(self._run_together(queue))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run_together(self, queue: list[tuple[Op, asyncio.Future[Any]]]) -> None:
        live = [(op, fut) for op, fut in queue if not fut.done()]
        if not live:
            return
        try:
            if len(live) == 1:
                results = await asyncio.to_thread(self.batch, [live[0][0]])
            else:
                results = await asyncio.to_thread(self._batch_together, [op for op, _ in live])
        except Exception:
            # One bad operation must not fail the others: run each on its own.
            for op, fut in live:
                try:
                    [result] = await asyncio.to_thread(self.batch, [op])
                except Exception as exc:
                    if not fut.done():
                        fut.set_exception(exc)
                else:
                    if not fut.done():
                        fut.set_result(result)
            return
        for (_, fut), result in zip(live, results, strict=True):
            if not fut.done():
                fut.set_result(result)

    # -- reads ----------------------------------------------------------------------------

    def _expired(self, meta: Mapping[str, Any], now: float) -> bool:
        exp = meta.get(_EXPIRES)
        return exp is not None and float(exp) <= now and bool((self.ttl_config or {}).get("omit_expired"))

    def _refresh(self, col: Collection, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Push back the expiry of items read with `refresh_ttl`."""
        now = time.time()
        ids, metas = [], []
        for key, meta in rows:
            ttl = meta.get(_TTL)
            if ttl is not None:
                ids.append(key)
                metas.append({_EXPIRES: now + float(ttl) * 60})
        if ids:
            col.update(ids=ids, metadatas=cast(Any, metas))

    def _get_many(self, ops: list[tuple[int, GetOp]]) -> dict[int, Item | None]:
        """Several gets, one Chroma read per namespace (a read costs about the same for 1 or 50 ids)."""
        out: dict[int, Item | None] = {i: None for i, _ in ops}
        by_ns: dict[tuple[str, ...], list[tuple[int, GetOp]]] = {}
        for i, op in ops:
            by_ns.setdefault(tuple(op.namespace), []).append((i, op))
        now = time.time()
        for ns, wanted in by_ns.items():
            col = self._collection(ns, create=False)
            if col is None:
                continue
            got = col.get(ids=list(dict.fromkeys(op.key for _, op in wanted)), include=["metadatas"])
            found = {
                key: dict(meta)
                for key, meta in zip(got["ids"], got["metadatas"] or [], strict=False)
                if not self._expired(meta, now)
            }
            refresh: dict[str, dict[str, Any]] = {}
            for i, op in wanted:
                if op.key in found:
                    row = _Row(ns, op.key, found[op.key])
                    item = row.search_item()
                    out[i] = Item(
                        namespace=ns,
                        key=op.key,
                        value=item.value,
                        created_at=item.created_at,
                        updated_at=item.updated_at,
                    )
                    if op.refresh_ttl:
                        refresh[op.key] = found[op.key]
            if refresh:
                self._refresh(col, refresh.items())
        return out

    def _search(self, op: SearchOp) -> list[SearchItem]:
        flt = compile_filter(op.filter)
        collections = self._matching(tuple(op.namespace_prefix))
        if not collections or op.limit <= 0:
            return []
        if op.query and self.embeddings is not None:
            rows = self._query(collections, op.query, flt, op.offset, op.limit)
        elif flt.checks or (self.ttl_config or {}).get("omit_expired"):
            rows = self._scan(collections, flt, op.offset, op.limit)
        else:
            rows = self._page(collections, flt.where, op.offset, op.limit)
        if op.refresh_ttl:
            by_ns: dict[tuple[str, ...], list[_Row]] = {}
            for row in rows:
                if row.meta.get(_TTL) is not None:
                    by_ns.setdefault(row.ns, []).append(row)
            for ns, group in by_ns.items():
                col = self._collection(ns, create=False)
                if col is not None:
                    self._refresh(col, [(r.key, r.meta) for r in group])
        return [row.search_item() for row in rows]

    def _page(
        self, collections: list[tuple[tuple[str, ...], Collection]], where: Any, offset: int, limit: int
    ) -> list[_Row]:
        """No query, no check in Python: read only the page asked for, namespace by namespace."""
        out: list[_Row] = []
        skip = max(0, offset)
        for ns, col in collections:
            need = limit - len(out)
            if need <= 0:
                break
            if skip and len(collections) > 1:
                n = col.count() if where is None else len(col.get(where=where, include=[])["ids"])
                if n <= skip:
                    skip -= n
                    continue
            out += [_Row(ns, key, dict(meta)) for key, meta in _paged_get(col, where, need, skip)]
            skip = 0
        return out

    def _scan(
        self,
        collections: list[tuple[tuple[str, ...], Collection]],
        flt: CompiledFilter,
        offset: int,
        limit: int,
    ) -> list[_Row]:
        """No query, with conditions left to Python: read pages until the page asked for is full."""
        out: list[_Row] = []
        skip = max(0, offset)
        page = min(GET_PAGE, max(100, 2 * (offset + limit)))
        now = time.time()
        for ns, col in collections:
            pos = 0
            while True:
                got = col.get(where=flt.where, include=["metadatas"], limit=page, offset=pos)
                for key, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                    row = _Row(ns, key, dict(meta))
                    if self._expired(row.meta, now) or (flt.checks and not flt.admits(row.meta, row.value)):
                        continue
                    if skip:
                        skip -= 1
                        continue
                    out.append(row)
                    if len(out) >= limit:
                        return out
                if len(got["ids"]) < page:
                    break
                pos += page
        return out

    def _query(
        self,
        collections: list[tuple[tuple[str, ...], Collection]],
        query: str,
        flt: CompiledFilter,
        offset: int,
        limit: int,
    ) -> list[_Row]:
        """Scored items best first, then (once every scored one is known) the unindexed ones.

        Each collection answers its `k` nearest vectors; the merged ranking is exact down to
        the worst score of any collection that had more to give, so `k` grows until the page
        is full of items above that line or every collection is exhausted.
        """
        assert self.embeddings is not None
        qvec = np.asarray(self.embeddings.embed_query(query), dtype=np.float64)
        want = offset + limit
        k = max(want, 1)
        now = time.time()
        while True:
            scored: dict[tuple[tuple[str, ...], str], _Row] = {}
            unscored: list[_Row] = []
            line = -math.inf
            complete = True
            for ns, col in collections:
                res = col.query(
                    query_embeddings=cast(Any, [qvec.tolist()]),
                    n_results=k,
                    where=flt.where,
                    include=["metadatas", "distances"],
                )
                ids = res["ids"][0]
                dists = (res["distances"] or [[]])[0]
                if len(ids) >= k:
                    complete = False
                    line = max(line, 1.0 - float(dists[-1]))
                multi: list[_Row] = []
                for key, meta, dist in zip(ids, (res["metadatas"] or [[]])[0], dists, strict=False):
                    row = _Row(ns, str(key), dict(meta))
                    if self._expired(row.meta, now) or (flt.checks and not flt.admits(row.meta, row.value)):
                        continue
                    if not row.meta.get(_INDEXED) or not math.isfinite(float(dist)):
                        unscored.append(row)
                        continue
                    row.score = 1.0 - float(dist)
                    scored[(ns, row.key)] = row
                    if int(row.meta.get(_VECTORS) or 1) > 1:
                        multi.append(row)
                extras = self._vector_collection(ns, create=False)
                if extras is not None:
                    xres = extras.query(
                        query_embeddings=cast(Any, [qvec.tolist()]),
                        n_results=k,
                        where=flt.where,
                        include=["metadatas", "distances"],
                    )
                    xdists = (xres["distances"] or [[]])[0]
                    if len(xres["ids"][0]) >= k:
                        complete = False
                        line = max(line, 1.0 - float(xdists[-1]))
                    parents = {str((m or {}).get(_PARENT)) for m in (xres["metadatas"] or [[]])[0]}
                    missing = sorted(p for p in parents if (ns, p) not in scored)
                    if missing:
                        got = col.get(ids=missing, include=["metadatas"])
                        for key, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                            row = _Row(ns, str(key), dict(meta), score=-math.inf)
                            if self._expired(row.meta, now) or (
                                flt.checks and not flt.admits(row.meta, row.value)
                            ):
                                continue
                            if int(row.meta.get(_VECTORS) or 1) > 1:
                                scored[(ns, row.key)] = row
                                multi.append(row)
                    if multi:
                        self._score_exactly(col, extras, qvec, multi)
            ranked = sorted(scored.values(), key=lambda r: cast(float, r.score), reverse=True)
            valid = [r for r in ranked if cast(float, r.score) >= line]
            if complete or len(valid) >= want:
                break
            k *= 4
        rows = valid + unscored if complete else valid
        return rows[offset:want]

    def _score_exactly(self, col: Collection, extras: Collection, qvec: np.ndarray, rows: list[_Row]) -> None:
        """Score items with several vectors by their best one (read back from both collections)."""
        ids = [r.key for r in rows]
        main = col.get(ids=ids, include=cast(Any, ["embeddings"]))
        best: dict[str, float] = {}
        vectors = main.get("embeddings")
        if vectors is not None and len(main["ids"]):
            for key, score in zip(
                main["ids"], _cosine(qvec, np.asarray(vectors, dtype=np.float64)), strict=True
            ):
                best[str(key)] = float(score)
        xids = [f"{i}:{r.key}" for r in rows for i in range(1, int(r.meta.get(_VECTORS) or 1))]
        got = extras.get(ids=xids, include=cast(Any, ["embeddings", "metadatas"]))
        xvectors = got.get("embeddings")
        if xvectors is not None and len(got["ids"]):
            scores = _cosine(qvec, np.asarray(xvectors, dtype=np.float64))
            for meta, score in zip(got["metadatas"] or [], scores, strict=False):
                parent = str((meta or {}).get(_PARENT))
                best[parent] = max(best.get(parent, -math.inf), float(score))
        for r in rows:
            r.score = best.get(r.key, r.score)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        self._refresh_registry(force=True)
        namespaces = list(self._collections)
        if op.match_conditions:
            namespaces = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions)]
        now = time.time()
        namespaces = [ns for ns in namespaces if self._holds_items(ns, now)]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            namespaces = sorted(namespaces)
        return namespaces[op.offset : op.offset + op.limit]

    def _holds_items(self, ns: tuple[str, ...], now: float) -> bool:
        col = self._collections[ns]
        n = col.count()
        if n and ns in self._ttl_namespaces and (self.ttl_config or {}).get("omit_expired"):
            n -= len(col.get(where=cast(Any, {_EXPIRES: {"$lte": now}}), include=[])["ids"])
        return n > 0

    # -- writes ---------------------------------------------------------------------------

    def _index_texts(self, value: dict[str, Any], index: Sequence[str] | None) -> list[str]:
        fields = list(index) if index else self.fields
        texts: list[str] = []
        for path in fields:
            texts.extend(t for t in get_text_at_path(value, path) if t)
        return texts

    def _apply_puts(self, ops: list[PutOp]) -> None:
        # Last write wins inside one batch, as in LangGraph's own stores.
        latest: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            latest[(tuple(op.namespace), op.key)] = op
        by_ns: dict[tuple[str, ...], list[PutOp]] = {}
        for (ns, _), op in latest.items():
            by_ns.setdefault(ns, []).append(op)
        for ns, group in by_ns.items():
            deletes = [op.key for op in group if op.value is None]
            writes = [op for op in group if op.value is not None]
            if deletes:
                col = self._collection(ns, create=False)
                if col is not None:
                    col.delete(ids=deletes)
                    extras = self._vector_collection(ns, create=False)
                    if extras is not None:
                        extras.delete(where=cast(Any, {_PARENT: {"$in": deletes}}))
            if writes:
                self._upsert(ns, writes)

    def _upsert(self, namespace: tuple[str, ...], ops: list[PutOp]) -> None:
        for op in ops:
            if not isinstance(op.value, dict):
                raise InputError(f"mneme: store values must be dicts, got {type(op.value)!r}")
        col = self._collection(namespace, create=True)
        assert col is not None
        keys = [op.key for op in ops]
        existing = col.get(ids=keys, include=["metadatas"])
        old: dict[str, dict[str, Any]] = {
            k: dict(m or {}) for k, m in zip(existing["ids"], existing["metadatas"] or [], strict=False)
        }
        texts = [
            []
            if op.index is False or self.embeddings is None
            else self._index_texts(dict(op.value or {}), op.index)
            for op in ops
        ]
        unique = list(dict.fromkeys(t for ts in texts for t in ts))
        vectors = (
            dict(zip(unique, self.embeddings.embed_documents(unique), strict=True))
            if unique and self.embeddings
            else {}
        )
        now = _now().isoformat()
        expires_from = time.time()
        embeddings: list[list[float]] = []
        metadatas: list[dict[str, Any]] = []
        documents: list[str] = []
        x_ids: list[str] = []
        x_vectors: list[list[float]] = []
        x_metas: list[dict[str, Any]] = []
        x_stale: list[str] = []
        with_ttl = False
        for op, ts in zip(ops, texts, strict=True):
            value = dict(op.value or {})
            flat = _flatten(value)
            before = old.get(op.key, {})
            meta: dict[str, Any] = {
                _VALUE: json.dumps(value, ensure_ascii=False, default=str),
                _CREATED: before.get(_CREATED) or now,
                _UPDATED: now,
                _INDEXED: bool(ts),
                **flat,
            }
            if len(ts) > 1:
                meta[_VECTORS] = len(ts)
            if op.ttl is not None:
                meta[_TTL] = float(op.ttl)
                meta[_EXPIRES] = expires_from + float(op.ttl) * 60
                with_ttl = True
            for stale in before.keys() - meta.keys():  # Chroma merges metadata: drop old fields
                meta[stale] = None
            metadatas.append(meta)
            embeddings.append(vectors[ts[0]] if ts else [0.0] * self.dims)
            documents.append(ts[0] if ts else "")
            for i, text in enumerate(ts[1:], start=1):
                x_ids.append(f"{i}:{op.key}")
                x_vectors.append(vectors[text])
                x_metas.append({_PARENT: op.key, **flat})
            x_stale += [f"{i}:{op.key}" for i in range(max(1, len(ts)), int(before.get(_VECTORS) or 1))]
        if with_ttl:
            self._mark_ttl(namespace, col)
        col.upsert(ids=keys, embeddings=embeddings, metadatas=metadatas, documents=documents)  # type: ignore[arg-type]
        self._wrote(col, sum(_row_chars(m, d) for m, d in zip(metadatas, documents, strict=True)))
        if x_stale:
            extras = self._vector_collection(namespace, create=False)
            if extras is not None:
                extras.delete(ids=x_stale)
        if x_ids:
            extras = self._vector_collection(namespace, create=True)
            assert extras is not None
            extras.upsert(ids=x_ids, embeddings=x_vectors, metadatas=x_metas)  # type: ignore[arg-type]
            self._wrote(extras, sum(_row_chars(m, "") for m in x_metas))
        if self.folder is not None:
            # The first write of a collection creates its HNSW files from uninitialized memory
            fresh = [c for c in (col, self._vector_collection(namespace, create=False)) if c is not None]
            fresh = [c for c in fresh if c.id.hex not in self._zeroed]
            self._zeroed.update(c.id.hex for c in fresh)
            for segment in disk.vector_folders(self.folder, [str(c.id) for c in fresh]) if fresh else []:
                disk.zero_unused(segment)

    def scrub(self, keys: Iterable[str] = ()) -> disk.ScrubReport | None:
        """Remove from the store's files what deleted records left there (see `mneme.store.scrub`).

        Every other call on this store waits while it runs (a `VACUUM` of `chroma.sqlite3`:
        about a second per 60 MB).

        Args:
            keys: Keys of the records just deleted, or rewritten without their text.

        Returns:
            What was done, or None for a store on a Chroma server (its files are the server's).
        """
        if self.folder is None:
            return None
        with self.gate.exclusive():
            return disk.scrub(self.folder, keys)

    # -- TTL ------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now.

        Returns:
            How many items were deleted.
        """
        return self._sweep()

    def _sweep(self) -> int:
        with self.gate.shared():
            return self._sweep_expired()

    def _sweep_expired(self) -> int:
        self._refresh_registry(force=True)
        now = time.time()
        deleted = 0
        for ns in sorted(self._ttl_namespaces):
            col = self._collection(ns, create=False)
            if col is None:
                continue
            while True:
                ids = col.get(where=cast(Any, {_EXPIRES: {"$lte": now}}), include=[], limit=GET_PAGE)["ids"]
                if not ids:
                    break
                self._apply_puts([PutOp(ns, key, None) for key in ids])
                deleted += len(ids)
                if len(ids) < GET_PAGE:
                    break
        return deleted

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items in a background thread every `sweep_interval_minutes`.

        The interval defaults to the TTL config's `sweep_interval_minutes`, else 5 minutes.
        Without a TTL config there is nothing to sweep: the returned future is already done.

        Returns:
            A future that completes when the sweeper stops (`stop_ttl_sweeper`).
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config:
            if not future.done():
                future.set_result(None)
            return future
        if self._sweeper is not None and self._sweeper.is_alive():
            future.add_done_callback(lambda f: self._sweep_stop.set() if f.cancelled() else None)
            return future
        interval = float(sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5) * 60
        self._sweep_stop.clear()

        def loop() -> None:
            while not self._sweep_stop.wait(interval):
                try:
                    swept = self._sweep()
                    if swept:
                        logger.info("mneme store: swept %d expired items", swept)
                except Exception:
                    logger.exception("mneme store: TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(target=loop, name="mneme-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread.

        Args:
            timeout: Seconds to wait for it (None: as long as it takes).

        Returns:
            True if it stopped (or was not running), False if the wait timed out.
        """
        return self._stop_sweeper(timeout)

    def _stop_sweeper(self, timeout: float | None) -> bool:
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._sweep_stop.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    # -- mneme's own reads ----------------------------------------------------------------

    def nearest(
        self,
        namespace: tuple[str, ...],
        query: str,
        limit: int,
        filter: dict[str, Any] | None = None,
        *,
        keys: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Keys and cosine scores of the `limit` nearest items of one namespace, best first.

        The same ranking as a `SearchOp` on that namespace, without reading the values back:
        a query that also returns the stored values costs about 8 ms more for 50 rows, so a
        caller that already knows most items (the lexical index) reads only the few it keeps.

        Args:
            namespace: The exact namespace (its subnamespaces are not searched).
            query: The text to embed and look up.
            limit: How many to return at most.
            filter: A `SearchOp`-style filter on the values.
            keys: Only these items (at most `EXACT_KEYS` of them), scored exactly against
                their stored vectors; `filter` is then not applied. An approximate index
                searched under a filter that lets few items through can miss some of them;
                a short list read back cannot.
        """
        with self.gate.shared():
            return self._nearest(namespace, query, limit, filter, keys=keys)

    def _nearest(
        self,
        namespace: tuple[str, ...],
        query: str,
        limit: int,
        filter: dict[str, Any] | None = None,
        *,
        keys: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        if self.embeddings is None or limit < 1:
            return []
        namespace = tuple(namespace)
        col = self._collection(namespace, create=False)
        if col is None:
            return []
        flt = compile_filter(filter)
        if keys is not None and len(keys) > EXACT_KEYS:
            raise InputError(f"mneme: nearest() scores at most {EXACT_KEYS} keys exactly, got {len(keys)}")
        if self._vector_collection(namespace, create=False) is not None or (keys is None and flt.checks):
            # Items with several vectors, or conditions left to Python: the general search.
            if keys is None:
                rows = self._query([(namespace, col)], query, flt, 0, limit)
            else:
                wanted = set(keys)
                rows = [
                    r
                    for r in self._query([(namespace, col)], query, CompiledFilter(), 0, col.count())
                    if r.key in wanted
                ]
            return [(r.key, float(r.score)) for r in rows if r.score is not None][:limit]
        qvec = self.embeddings.embed_query(query)
        if keys is not None:
            if not keys:
                return []
            got = col.get(ids=list(keys), include=cast(Any, ["embeddings"]))
            vectors = got.get("embeddings")
            if vectors is None or len(got["ids"]) == 0:
                return []
            mat = np.asarray(vectors, dtype=np.float32)
            q = np.asarray(qvec, dtype=np.float32)
            norms = np.linalg.norm(mat, axis=1) * (float(np.linalg.norm(q)) or 1.0)
            real = np.nonzero(norms > 0)[0]  # zero vectors (index=False) are never similar
            scores = (mat[real] @ q) / norms[real]
            order = np.argsort(-scores, kind="stable")[:limit]
            return [(str(got["ids"][real[i]]), float(scores[i])) for i in order]
        n = limit
        while True:
            res = col.query(
                query_embeddings=cast(Any, [qvec]),
                n_results=n,
                where=flt.where,
                include=["distances"],
            )
            pairs = [
                (str(key), float(d))
                for key, d in zip(res["ids"][0], (res["distances"] or [[]])[0], strict=False)
                if math.isfinite(float(d))
            ]
            # An item put with index=False holds a zero vector, at cosine distance exactly 1 from
            # any query: those (and only those) are checked, so the common case reads no vectors.
            suspects = [key for key, d in pairs if d >= 1.0]
            if suspects:
                got = col.get(ids=suspects, include=cast(Any, ["embeddings"]))
                vectors = got.get("embeddings")
                blank = {
                    str(k)
                    for k, v in zip(got["ids"], vectors if vectors is not None else [], strict=False)
                    if not np.any(np.asarray(v))
                }
                pairs = [(key, d) for key, d in pairs if key not in blank]
            if len(pairs) >= limit or len(res["ids"][0]) < n:
                break
            n *= 4  # blanks took places: never a short answer while more items match
        return [(key, 1.0 - d) for key, d in pairs[:limit]]

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Delete a whole namespace at once (all its items and its collection)."""
        namespace = tuple(namespace)
        with self.gate.shared(), self._lock:
            col = self._collection(namespace, create=False)
            if col is None:
                return
            self.client.delete_collection(col.name)
            self._collections.pop(namespace, None)
            extras = self._vector_collection(namespace, create=False) or self._open_collection(
                col.name + "-v", namespace, _VEC_KIND, False
            )
            if extras is not None:
                self.client.delete_collection(extras.name)
            self._extras.pop(namespace, None)
            self._ttl_namespaces.discard(namespace)
            self._zeroed.discard(col.id.hex)

    def count(self, namespace: tuple[str, ...]) -> int:
        """Number of items in one namespace."""
        with self.gate.shared():
            col = self._collection(tuple(namespace), create=False)
            return 0 if col is None else col.count()


def _matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = (cond.path,) if isinstance(cond.path, str) else tuple(cond.path)
    if len(ns) < len(path):
        return False
    pairs = (
        zip(ns, path, strict=False)
        if cond.match_type == "prefix"
        else zip(reversed(ns), reversed(path), strict=False)
    )
    return all(p == "*" or a == p for a, p in pairs)


def _paged_get(
    col: Collection, where: Any, limit: int | None, offset: int
) -> list[tuple[str, Mapping[str, Any]]]:
    """`(id, metadata)` of a collection's rows, read in pages of `GET_PAGE`.

    Chroma answers a single `get` of more than about 32,000 rows with "too many SQL
    variables"; a user with that many memories must still be listed.
    """
    out: list[tuple[str, Mapping[str, Any]]] = []
    while limit is None or len(out) < limit:
        page = GET_PAGE if limit is None else min(GET_PAGE, limit - len(out))
        got = col.get(where=where, include=["metadatas"], limit=page, offset=offset + len(out))
        out += list(zip(got["ids"], got["metadatas"] or [], strict=False))
        if len(got["ids"]) < page:
            break
    return out
