"""LangGraph's `PostgresStore` (pgvector) with what mneme's read and write paths rely on."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from langgraph.checkpoint.postgres import _internal as _pg_internal
from langgraph.store.base import IndexConfig
from langgraph.store.postgres import PostgresStore
from psycopg import Connection, Cursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from mneme.errors import ConfigError, InputError
from mneme.store.locks import lock_key

_OPS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"}


def _json(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"mneme: a filter value must be a finite number, got {value!r}")
    return json.dumps(value, ensure_ascii=False)


class PostgresMemoryStore(PostgresStore):
    """`PostgresStore` as mneme uses it: one pool shared by every thread of a process.

    On top of LangGraph's store:

    - every `batch` runs in one transaction, so the ops of one write (history row, record,
      expiry row, revision log) are applied together or not at all, and no thread waits on
      another's embedding (LangGraph's store serializes batches on one lock);
    - filters also take `$in` / `$nin`, and compare numbers as numbers (LangGraph compares
      `$gt`... as text);
    - `nearest()` answers keys and cosine scores only (as `ChromaStore.nearest` does), and
      `count()` / `drop_namespace()` are single statements;
    - `exclusive(name)` is a lock across processes (a Postgres advisory lock), held on the
      connection that runs every batch of the thread meanwhile.

    Vectors are scored exactly (`ann_index_config` kind `flat`): an approximate index under a
    per-user `WHERE` can return fewer rows than asked for.
    """

    def __init__(
        self,
        pool: ConnectionPool[Connection[DictRow]],
        *,
        index: IndexConfig | None = None,
    ) -> None:
        """Wrap a connection pool.

        Args:
            pool: A psycopg pool whose connections use `autocommit=True`,
                `prepare_threshold=0` and `row_factory=dict_row`.
            index: LangGraph index config (`embed`, `dims`, `fields`).
        """
        config: Any = dict(index) if index else None
        if config is not None:
            config.setdefault("ann_index_config", {"kind": "flat"})
        super().__init__(cast(Any, pool), index=config)
        self.pool = pool
        self.snapshot_dir = None
        """No folder for derived data: every process builds its own index from the store."""
        self._local = threading.local()

    # -- connections -------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Connection[DictRow]]:
        pinned: Connection[DictRow] | None = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with _pg_internal.get_connection(self.conn) as conn:
            yield conn

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        with self._connection() as conn:
            if pipeline:  # a batch: one transaction
                with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            else:  # setup: `CREATE INDEX CONCURRENTLY` cannot run in a transaction
                with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Hold the advisory lock `name` (across processes) for the duration of the block.

        The lock belongs to one connection; every batch this thread runs meanwhile uses that
        connection, so a thread never needs two at once. A process that dies releases its
        locks with its connections.
        """
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self.pool.connection() as conn:
                self._local.conn = conn
                self._local.depth = 1
                key = lock_key(name)
                try:
                    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                    try:
                        yield
                    finally:
                        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                finally:
                    self._local.conn = None
                    self._local.depth = 0
            return
        conn = cast(Connection[DictRow], self._local.conn)
        key = lock_key(name)
        self._local.depth = depth + 1
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            self._local.depth = depth

    # -- filters -------------------------------------------------------------------------------

    def _get_filter_condition(self, key: str, op: str, value: Any) -> tuple[str, list[Any]]:
        if op not in _OPS:
            raise InputError(f"mneme: unsupported filter operator {op!r} on {key!r}")
        if op in ("$in", "$nin"):
            if not isinstance(value, list | tuple) or not value:
                raise InputError(f"mneme: {op} on {key!r} needs a non-empty list")
            values = [_json(v) for v in value]
            if op == "$in":
                return "value->%s = ANY(%s::jsonb[])", [key, values]
            return "(value->%s IS NULL OR NOT (value->%s = ANY(%s::jsonb[])))", [key, key, values]
        if op == "$eq":
            return "value->%s = %s::jsonb", [key, _json(value)]
        if op == "$ne":
            return "(value->%s IS NULL OR value->%s != %s::jsonb)", [key, key, _json(value)]
        if not isinstance(value, int | float | str) or isinstance(value, bool):
            raise InputError(f"mneme: {op} on {key!r} needs a number or a string, got {value!r}")
        sql = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
        # jsonb compares numbers as numbers and strings as strings; other types never match
        return (
            f"(jsonb_typeof(value->%s) = jsonb_typeof(%s::jsonb) AND value->%s {sql} %s::jsonb)",
            [key, _json(value), key, _json(value)],
        )

    # -- what mneme's read path adds -----------------------------------------------------------

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

        The same contract as `ChromaStore.nearest`: the exact namespace only; `keys` limits
        the scoring to those items (and `filter` is then not applied).
        """
        if self.embeddings is None or limit < 1:
            return []
        if keys is not None and not keys:
            return []
        qvec = self.embeddings.embed_query(query)
        from langgraph.store.postgres.base import _namespace_to_text

        where = ["sv.prefix = %s"]
        params: list[Any] = [qvec, _namespace_to_text(tuple(namespace))]
        join = ""
        if keys is not None:
            where.append("sv.key = ANY(%s)")
            params.append(list(keys))
        elif filter:
            join = "JOIN store ON store.prefix = sv.prefix AND store.key = sv.key"
            for key, cond in filter.items():
                ops = cond.items() if isinstance(cond, dict) else [("$eq", cond)]
                for op, val in ops:
                    clause, extra = self._get_filter_condition(key, op, val)
                    where.append(clause.replace("value->", "store.value->"))
                    params.extend(extra)
        # An item has one vector per indexed field (one for mneme's records): fetch enough rows
        # and keep each key's best. No GROUP BY: it made the query 5x slower at 10,000 rows.
        per_item = max(1, int(cast(dict, self.index_config or {}).get("__estimated_num_vectors", 1)))
        params.append(limit * per_item)
        sql = f"""
            SELECT sv.key, sv.embedding <=> %s::vector AS distance
            FROM store_vectors sv {join}
            WHERE {" AND ".join(where)}
            ORDER BY distance ASC
            LIMIT %s
        """
        # the query vector is bound first (SELECT), then the WHERE params, then the limit
        with self._cursor(pipeline=True) as cur:
            cur.execute(sql, params)
            rows = cur.fetchall()
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for row in rows:
            distance = row["distance"]
            key = str(row["key"])
            if distance is None or not math.isfinite(float(distance)) or key in seen:
                continue  # a zero vector has no direction; a key's later rows score lower
            seen.add(key)
            out.append((key, 1.0 - float(distance)))
        return out[:limit]

    def count(self, namespace: tuple[str, ...]) -> int:
        """Number of items in one namespace."""
        from langgraph.store.postgres.base import _namespace_to_text

        with self._cursor(pipeline=True) as cur:
            cur.execute("SELECT count(*) AS n FROM store WHERE prefix = %s", (_namespace_to_text(namespace),))
            row = cur.fetchone()
        return int(row["n"]) if row else 0

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Delete a whole namespace at once (its vectors go with it)."""
        from langgraph.store.postgres.base import _namespace_to_text

        with self._cursor(pipeline=True) as cur:
            cur.execute("DELETE FROM store WHERE prefix = %s", (_namespace_to_text(namespace),))


SETTING = "MNEME_POSTGRES_URL / --postgres"
"""How a user names the Postgres (for error messages)."""
POOL_SIZE = 24
"""Connections per process: the async front's workers, the background writers and the graph."""
CONNECT_TIMEOUT_S = 5


def masked(url: str) -> str:
    """The URL with its password hidden, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unreadable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _check(url: str, dims: int) -> None:
    """Connect once, with a short timeout, and check pgvector and the vector size."""
    import psycopg

    where = f"the Postgres of {SETTING} ({masked(url)})"
    if not url.startswith(("postgresql://", "postgres://")) and "=" not in url:
        raise ConfigError(f"mneme: {SETTING} must be a postgresql:// URL, got {masked(url)!r}")
    try:
        conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except (psycopg.Error, ValueError) as exc:
        raise ConfigError(f"mneme: cannot connect to {where}: {str(exc).strip()}") from None
    with conn:
        try:
            found = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
            if found is None:
                raise ConfigError(
                    f"mneme: {where} has no pgvector extension; install pgvector there "
                    "(mneme keeps memory vectors in it)"
                )
            row = conn.execute(
                "SELECT atttypmod FROM pg_attribute "
                "WHERE attrelid = to_regclass('store_vectors') AND attname = 'embedding'"
            ).fetchone()
        except psycopg.Error as exc:
            raise ConfigError(f"mneme: cannot use {where}: {str(exc).strip()}") from None
    if row is not None and row[0] not in (None, -1) and int(row[0]) != dims:
        raise ConfigError(
            f"mneme: {where} keeps {row[0]}-dimensional vectors, but the embeddings make {dims}: "
            "use the embeddings it was created with, or another database"
        )


@contextmanager
def _setup_lock(pool: ConnectionPool[Connection[DictRow]]) -> Iterator[None]:
    """The advisory lock of the migrations, waited for by polling.

    A session blocked in `pg_advisory_lock` is an open transaction, and the migrations'
    `CREATE INDEX CONCURRENTLY` waits for every open transaction: a second process waiting
    that way would wait forever for the first one, which waits for it.
    """
    import time

    key = lock_key("setup")
    with pool.connection() as conn:
        while not conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (key,)).fetchone()["ok"]:  # type: ignore[index]
            time.sleep(0.05)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def open_postgres(url: str, index: Any) -> tuple[ConnectionPool[Connection[DictRow]], PostgresMemoryStore]:
    """Connect to a Postgres and set up the store and checkpoint tables (once, whoever starts first).

    Args:
        url: `postgresql://user:password@host:port/database`.
        index: The store's index config (`embed`, `dims`, `fields`).

    Returns:
        The connection pool and the store over it.

    Raises:
        ConfigError: if it cannot be reached, has no pgvector, or holds vectors of another size;
            the message names the setting.
    """
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    _check(url, int(index["dims"]))
    pool: ConnectionPool[Connection[DictRow]] = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=ConnectionPool.check_connection,
        open=False,
        name="mneme",
    )
    try:
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 2)
        store = PostgresMemoryStore(pool, index=index)
        with _setup_lock(pool):  # several processes starting at once migrate once
            store.setup()
            PostgresSaver(cast(Any, pool)).setup()
    except (psycopg.Error, OSError) as exc:
        pool.close()
        raise ConfigError(
            f"mneme: cannot set up the Postgres of {SETTING} ({masked(url)}): {str(exc).strip()}"
        ) from None
    except BaseException:
        pool.close()
        raise
    return pool, store


def postgres_saver(pool: ConnectionPool[Connection[DictRow]]) -> Any:
    """LangGraph's `PostgresSaver` over the pool (its tables were set up by `open_postgres`)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    return PostgresSaver(cast(Any, pool))


__all__ = ["PostgresMemoryStore", "lock_key", "masked", "open_postgres", "postgres_saver"]
