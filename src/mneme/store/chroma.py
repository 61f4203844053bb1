"""A LangGraph `BaseStore` whose items and vectors live in Chroma (on disk or on a server)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
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
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path

from mneme.errors import InputError
from mneme.store import scrub as disk

_VALUE = "_v"  # the item's value, JSON
_CREATED = "_c"  # ISO time of creation
_UPDATED = "_u"  # ISO time of last update
_INDEXED = "_ix"  # whether the stored vector is a real embedding
_FIELD = "f_"  # prefix of top-level scalar fields copied out of the value for filtering
_OPS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"}
_NS_KIND = "mneme-namespace"
GET_PAGE = 10_000
"""Rows read per Chroma `get`: one larger read fails past ~32,000 rows (SQLite's variable limit)."""
EXACT_KEYS = 2_000
"""`nearest(keys=...)` scores at most this many items exactly (reading their vectors back)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _collection_name(prefix: str, namespace: tuple[str, ...]) -> str:
    digest = hashlib.sha256(json.dumps(list(namespace)).encode()).hexdigest()[:40]
    return f"{prefix}-{digest}"


def _flatten(value: dict[str, Any]) -> dict[str, Any]:
    """Copy the top-level scalar fields of a value into Chroma metadata for filtering."""
    out: dict[str, Any] = {}
    for key, val in value.items():
        if isinstance(val, bool | int | str) or (isinstance(val, float) and math.isfinite(val)):
            out[_FIELD + key] = val
    return out


def translate_filter(flt: dict[str, Any] | None) -> dict[str, Any] | None:
    """Translate a LangGraph store filter into a Chroma `where` clause.

    Supported: equality on top-level scalar fields, and the operators `$eq $ne $gt $gte $lt
    $lte $in $nin`. Anything else is refused rather than applied after the query.

    Args:
        flt: The filter given to `BaseStore.search`.

    Returns:
        The equivalent `where`, or None for no filter.
    """
    if not flt:
        return None
    clauses: list[dict[str, Any]] = []
    for key, cond in flt.items():
        if not isinstance(key, str) or key.startswith("$"):
            raise InputError(f"mneme: unsupported filter key {key!r}")
        field = _FIELD + key
        if isinstance(cond, dict):
            for op, operand in cond.items():
                if op not in _OPS:
                    raise InputError(f"mneme: unsupported filter operator {op!r} on {key!r}")
                if op in ("$in", "$nin"):
                    if not isinstance(operand, list | tuple) or not operand:
                        raise InputError(f"mneme: {op} on {key!r} needs a non-empty list")
                    operand = list(operand)
                elif not isinstance(operand, bool | int | float | str):
                    raise InputError(f"mneme: filter on {key!r} needs a scalar, got {operand!r}")
                clauses.append({field: {op: operand}})
        elif isinstance(cond, bool | int | float | str):
            clauses.append({field: {"$eq": cond}})
        else:
            raise InputError(f"mneme: filter on {key!r} must be a scalar or an operator dict, got {cond!r}")
    if len(clauses) == 1:
        return clauses[0]
    return {"$and": clauses}


class ChromaStore(BaseStore):
    """LangGraph store backed by Chroma: one collection per namespace.

    Keeping each namespace (for mneme, each user's memories) in its own collection means a
    search never scans another user's records, and that the common search needs no metadata
    filter at all: Chroma applies `where` filters by scanning metadata, which costs about
    30 ms at 10,000 records, while an unfiltered HNSW query costs about 3 ms.

    Values are kept as JSON in the metadata; their top-level scalar fields are copied out so
    that `filter=` runs inside Chroma. Items put with `index=False` get a zero vector and never
    appear in similarity results.
    """

    supports_ttl = False

    def __init__(
        self,
        client: ClientAPI,
        *,
        index: IndexConfig | None = None,
        prefix: str = "mneme",
    ) -> None:
        """Wrap a Chroma client.

        Args:
            client: A `chromadb.PersistentClient` or `chromadb.HttpClient`.
            index: LangGraph index config (`embed`, `dims`, `fields`); without it, search
                ignores `query` and the store keeps no vectors.
            prefix: Prefix of the collection names this store owns.
        """
        self.client = client
        self.prefix = prefix
        self.index_config = dict(index) if index else None
        self.embeddings: Embeddings | None = None
        self.dims = 1
        self.fields: list[str] = ["$"]
        if index:
            self.embeddings = ensure_embeddings(index.get("embed"))
            self.dims = int(index["dims"])
            self.fields = list(index.get("fields") or ["$"])
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, ...], Collection] = {}
        self._registry_at = 0.0
        self.snapshot_dir: Path | None = None
        """A folder for data derived from this store (the read path's index snapshots); set
        by `open` inside the store's folder, None for a Chroma server."""
        self.folder: Path | None = None
        """The folder of an embedded store (`open`), whose files `scrub` cleans; None for a server."""
        self.gate = disk.Gate()
        """Shared by every store call, held alone by `scrub` (which needs the folder to itself)."""
        self._zeroed: set[str] = set()

    @classmethod
    def open(cls, path: str, *, index: IndexConfig | None = None) -> ChromaStore:
        """Open (or create) a store in a folder, with Chroma's embedded client.

        One process only: Chroma's embedded client is not process-safe.
        """
        disk.zero_all_once(Path(path))  # a folder written before its new collections were zeroed
        client = chromadb.PersistentClient(
            path=path, settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        store = cls(client, index=index)
        store.snapshot_dir = Path(path) / "mneme-derived"
        store.folder = Path(path)
        return store

    @classmethod
    def connect(cls, url: str, *, index: IndexConfig | None = None) -> ChromaStore:
        """Connect to a Chroma server (`chroma run`) that several processes can share."""
        from urllib.parse import urlparse

        parsed = urlparse(url if "://" in url else f"http://{url}")
        client = chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=parsed.port or 8000,
            ssl=parsed.scheme == "https",
            settings=Settings(anonymized_telemetry=False),
        )
        return cls(client, index=index)

    # -- namespaces -----------------------------------------------------------------------

    def _refresh_registry(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._registry_at < 2.0:
            return
        with self._lock:
            for col in self.client.list_collections():
                meta = col.metadata or {}
                if meta.get("kind") != _NS_KIND or not col.name.startswith(self.prefix + "-"):
                    continue
                ns = tuple(json.loads(meta["ns"]))
                self._collections.setdefault(ns, col)
            self._registry_at = time.monotonic()

    def _collection(self, namespace: tuple[str, ...], *, create: bool) -> Collection | None:
        col = self._collections.get(namespace)
        if col is not None:
            return col
        with self._lock:
            col = self._collections.get(namespace)
            if col is not None:
                return col
            name = _collection_name(self.prefix, namespace)
            if create:
                col = self.client.get_or_create_collection(
                    name,
                    metadata={
                        "kind": _NS_KIND,
                        "ns": json.dumps(list(namespace)),
                        "hnsw:space": "cosine",
                    },
                    embedding_function=None,
                )
            else:
                try:
                    col = self.client.get_collection(name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (or ValueError on old clients)
                    return None
            self._collections[namespace] = col
            return col

    def _matching(self, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Collection]]:
        """Collections whose namespace starts with `prefix` (the exact one first)."""
        self._refresh_registry()
        exact = self._collection(prefix, create=False)
        out = [(prefix, exact)] if exact is not None else []
        out += [
            (ns, col)
            for ns, col in list(self._collections.items())
            if len(ns) > len(prefix) and ns[: len(prefix)] == prefix
        ]
        return out

    # -- operations -----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run a batch of get / search / put / list-namespaces operations in order."""
        with self.gate.shared():
            return self._batch(list(ops))

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

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch`: runs in a worker thread so the event loop never blocks."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _item(self, namespace: tuple[str, ...], key: str, meta: dict[str, Any]) -> Item:
        return Item(
            namespace=namespace,
            key=key,
            value=json.loads(meta[_VALUE]),
            created_at=datetime.fromisoformat(meta[_CREATED]),
            updated_at=datetime.fromisoformat(meta[_UPDATED]),
        )

    def _get_many(self, ops: list[tuple[int, GetOp]]) -> dict[int, Item | None]:
        """Several gets, one Chroma read per namespace (a read costs about the same for 1 or 50 ids)."""
        out: dict[int, Item | None] = {i: None for i, _ in ops}
        by_ns: dict[tuple[str, ...], list[tuple[int, str]]] = {}
        for i, op in ops:
            by_ns.setdefault(op.namespace, []).append((i, op.key))
        for ns, wanted in by_ns.items():
            col = self._collection(ns, create=False)
            if col is None:
                continue
            got = col.get(ids=list(dict.fromkeys(k for _, k in wanted)), include=["metadatas"])
            found = {key: dict(meta) for key, meta in zip(got["ids"], got["metadatas"] or [], strict=False)}
            for i, key in wanted:
                if key in found:
                    out[i] = self._item(ns, key, found[key])
        return out

    def _index_text(self, value: dict[str, Any], index: Sequence[str] | None) -> str | None:
        fields = list(index) if index else self.fields
        texts: list[str] = []
        for path in fields:
            texts.extend(get_text_at_path(value, path))
        text = "\n".join(t for t in texts if t)
        return text or None

    def _apply_puts(self, ops: list[PutOp]) -> None:
        # Last write wins inside one batch, as in LangGraph's own stores.
        latest: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            latest[(op.namespace, op.key)] = op
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
            if writes:
                self._upsert(ns, writes)

    def _upsert(self, namespace: tuple[str, ...], ops: list[PutOp]) -> None:
        col = self._collection(namespace, create=True)
        assert col is not None
        keys = [op.key for op in ops]
        existing = col.get(ids=keys, include=["metadatas"])
        created = {
            k: (m or {}).get(_CREATED)
            for k, m in zip(existing["ids"], existing["metadatas"] or [], strict=False)
        }
        now = _now().isoformat()
        texts: list[str | None] = []
        for op in ops:
            if not isinstance(op.value, dict):
                raise InputError(f"mneme: store values must be dicts, got {type(op.value)!r}")
            texts.append(
                None
                if op.index is False or self.embeddings is None
                else self._index_text(dict(op.value), op.index)
            )
        to_embed = [t for t in texts if t]
        vectors = iter(self.embeddings.embed_documents(to_embed) if to_embed and self.embeddings else [])
        embeddings: list[list[float]] = []
        metadatas: list[dict[str, Any]] = []
        documents: list[str] = []
        for op, text in zip(ops, texts, strict=True):
            value = dict(op.value or {})
            embeddings.append(next(vectors) if text else [0.0] * self.dims)
            meta: dict[str, Any] = {
                _VALUE: json.dumps(value, ensure_ascii=False, default=str),
                _CREATED: created.get(op.key) or now,
                _UPDATED: now,
                _INDEXED: bool(text),
            }
            meta.update(_flatten(value))
            metadatas.append(meta)
            documents.append(text or "")
        col.upsert(ids=keys, embeddings=embeddings, metadatas=metadatas, documents=documents)  # type: ignore[arg-type]
        if self.folder is not None and col.id.hex not in self._zeroed:
            # The first write of a collection creates its HNSW files from uninitialized memory
            self._zeroed.add(col.id.hex)
            for segment in disk.vector_folders(self.folder, [str(col.id)]):
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
        col = self._collection(tuple(namespace), create=False)
        if col is None:
            return []
        qvec = self.embeddings.embed_query(query)
        if keys is not None:
            if len(keys) > EXACT_KEYS:
                raise InputError(
                    f"mneme: nearest() scores at most {EXACT_KEYS} keys exactly, got {len(keys)}"
                )
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
        res = col.query(
            query_embeddings=cast(Any, [qvec]),
            n_results=limit,
            where=translate_filter(filter),
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
        return [(key, 1.0 - d) for key, d in pairs]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        where = translate_filter(op.filter)
        collections = self._matching(op.namespace_prefix)
        if not collections:
            return []
        want = op.limit + op.offset
        if op.query and self.embeddings is not None:
            qvec = self.embeddings.embed_query(op.query)
            scored: list[tuple[float, SearchItem]] = []
            for ns, col in collections:
                # No count() first: it scans the collection (~14 ms at 100k), and Chroma
                # answers a larger n_results with what there is.
                res = col.query(
                    query_embeddings=cast(Any, [qvec]),
                    n_results=max(1, want),
                    where=where,
                    include=["metadatas", "distances"],
                )
                ids = res["ids"][0]
                metas = (res["metadatas"] or [[]])[0]
                dists = (res["distances"] or [[]])[0]
                for key, meta, dist in zip(ids, metas, dists, strict=False):
                    meta = dict(meta)
                    if not meta.get(_INDEXED):
                        continue
                    item = self._item(ns, key, meta)
                    score = 1.0 - float(dist)
                    scored.append(
                        (
                            score,
                            SearchItem(
                                namespace=ns,
                                key=key,
                                value=item.value,
                                created_at=item.created_at,
                                updated_at=item.updated_at,
                                score=score,
                            ),
                        )
                    )
            scored.sort(key=lambda s: s[0], reverse=True)
            return [item for _, item in scored[op.offset : want]]
        items: list[SearchItem] = []
        single = len(collections) == 1
        for ns, col in collections:
            for key, meta in _paged_get(col, where, op.limit if single else None, op.offset if single else 0):
                item = self._item(ns, key, dict(meta))
                items.append(
                    SearchItem(
                        namespace=ns,
                        key=key,
                        value=item.value,
                        created_at=item.created_at,
                        updated_at=item.updated_at,
                    )
                )
        return items if single else items[op.offset : want]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        self._refresh_registry(force=True)
        namespaces = [ns for ns, col in self._collections.items() if col.count() > 0]
        if op.match_conditions:
            namespaces = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions)]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            namespaces = sorted(namespaces)
        return namespaces[op.offset : op.offset + op.limit]

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Delete a whole namespace at once (all its items and its collection)."""
        with self.gate.shared(), self._lock:
            col = self._collection(namespace, create=False)
            if col is None:
                return
            self.client.delete_collection(col.name)
            self._collections.pop(namespace, None)
            self._zeroed.discard(col.id.hex)

    def count(self, namespace: tuple[str, ...]) -> int:
        """Number of items in one namespace."""
        with self.gate.shared():
            col = self._collection(namespace, create=False)
            return 0 if col is None else col.count()


def _matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
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
