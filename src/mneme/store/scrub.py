"""What a delete leaves in an embedded Chroma folder, removed from its files.

Deleting a record in Chroma (1.5) removes it from the live tables, but its text stays on disk:

- in the write-ahead queue `embeddings_queue` of `chroma.sqlite3`, whose rows keep every
  upserted document and metadata until the vector index is persisted;
- in SQLite's free pages and in the free space of live pages (Chroma's connection does not
  overwrite deleted content), and in the full-text index until its segments are merged;
- in the HNSW files of a vector segment, which Chroma writes from an uninitialized buffer when it
  creates a collection (seen holding other records' JSON, of any user, in `length.bin`), and in
  the folder of a deleted collection, which stays behind.

`scrub` clears all of it: the queue rows of the forgotten keys that the metadata segment has
already applied lose their metadata (a restart replays only their vectors), the full-text index
is merged, the database is rebuilt (`VACUUM`), unused HNSW slots are zeroed and orphan folders
removed. It needs the folder to itself: the store holds its `Gate` exclusively while it runs.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("mneme.scrub")

DB_FILE = "chroma.sqlite3"
ZEROED_MARK = "mneme-derived/hnsw-zeroed"
"""Written once every HNSW folder of a home has had its unused slots zeroed."""
_HEADER = struct.Struct("<i6Q iI 3Q d Q")
"""hnswlib's `header.bin` (Chroma's persistent version 1): version, offsetLevel0, max_elements,
cur_element_count, size_data_per_element, label_offset, offsetData, maxlevel, enterpoint,
maxM, maxM0, M, mult, ef_construction."""
_CHUNK = 500


class Gate:
    """A readers-writer lock: store calls share it, a scrub takes it alone (writers first)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0
        self._owner: int | None = None
        self._held = threading.local()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the gate with other readers (re-entrant, also inside an exclusive hold)."""
        depth = getattr(self._held, "depth", 0)
        if depth or self._owner == threading.get_ident():
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        with self._cond:
            while self._writing or self._waiting:
                self._cond.wait()
            self._readers += 1
        self._held.depth = 1
        try:
            yield
        finally:
            self._held.depth = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    def held_here(self) -> bool:
        """Whether the calling thread holds the gate now (shared or alone)."""
        return bool(getattr(self._held, "depth", 0)) or self._owner == threading.get_ident()

    @contextlib.contextmanager
    def exclusive_now(self) -> Iterator[bool]:
        """Hold the gate alone if no one holds it now; yields whether it is held (never waits)."""
        with self._cond:
            if self._writing or self._readers or self._waiting:
                free = False
            else:
                free = self._writing = True
                self._owner = threading.get_ident()
        try:
            yield free
        finally:
            if free:
                self._release()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the gate alone: wait for the readers in progress, keep new ones out."""
        with self._cond:
            self._waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writing = True
            self._owner = threading.get_ident()
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        """Let the readers and the next writer in after an exclusive hold."""
        with self._cond:
            self._writing = False
            self._owner = None
            self._cond.notify_all()


@dataclass
class ScrubReport:
    """What one scrub did."""

    queue_rows: int = 0
    """Queue rows whose metadata was cleared."""
    zeroed: int = 0
    """HNSW folders whose unused slots were zeroed."""
    orphans: int = 0
    """Folders of deleted collections removed."""
    seconds: float = 0.0


def _connect(folder: Path) -> sqlite3.Connection:
    con = sqlite3.connect(folder / DB_FILE, timeout=60, isolation_level=None)
    con.execute("PRAGMA secure_delete=ON")  # what this connection frees is overwritten
    return con


def _segments(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT id FROM segments")}


def vector_folders(folder: Path, collection_ids: Iterable[str]) -> list[Path]:
    """The HNSW folders of some collections."""
    ids = list(collection_ids)
    if not ids or not (folder / DB_FILE).exists():
        return []
    con = sqlite3.connect(f"file:{folder / DB_FILE}?mode=ro", uri=True, timeout=60)
    try:
        marks = ",".join("?" * len(ids))
        rows = con.execute(
            f"SELECT id FROM segments WHERE scope = 'VECTOR' AND collection IN ({marks})", ids
        ).fetchall()
    finally:
        con.close()
    return [folder / row[0] for row in rows if (folder / row[0]).is_dir()]


def zero_unused(segment: Path) -> bool:
    """Overwrite the slots of an HNSW folder's files past its element count with zeros.

    Chroma writes `length.bin` and `data_level0.bin` for the whole capacity of the index, the
    slots not in use coming from uninitialized memory; hnswlib never reads past the element
    count, so zeros there change nothing but what the files show.

    Returns:
        Whether anything was overwritten.
    """
    header = segment / "header.bin"
    try:
        raw = header.read_bytes()
        if len(raw) != _HEADER.size:
            return False
        version, _, max_elements, count, per_element, *_ = _HEADER.unpack(raw)
    except (OSError, struct.error):
        return False
    if version != 1 or not 0 <= count <= max_elements or per_element <= 0:
        return False
    changed = False
    for name, width in (("length.bin", 4), ("data_level0.bin", per_element)):
        path = segment / name
        try:
            size = path.stat().st_size
            start = count * width
            if size <= start:
                continue
            with path.open("r+b") as f:
                f.seek(start)
                tail = f.read(size - start)
                if tail.count(0) != len(tail):
                    f.seek(start)
                    f.write(bytes(len(tail)))
                    changed = True
        except OSError as exc:
            log.warning("mneme: could not zero the unused slots of %s: %s", path, exc)
    return changed


def remove_orphans(folder: Path, segments: set[str]) -> int:
    """Remove the HNSW folders of collections Chroma deleted (it leaves them behind)."""
    removed = 0
    for path in folder.iterdir():
        if path.is_dir() and len(path.name) == 36 and path.name.count("-") == 4 and path.name not in segments:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def clear_queue(con: sqlite3.Connection, keys: Iterable[str]) -> int:
    """Clear the metadata (documents included) of applied queue rows of some record keys.

    Only rows that the collection's metadata segment has applied are touched: replaying the
    queue at the next start then only gives the vector index the vectors it may still need.
    """
    keys = list(dict.fromkeys(keys))
    done = 0
    for i in range(0, len(keys), _CHUNK):
        part = keys[i : i + _CHUNK]
        marks = ",".join("?" * len(part))
        cur = con.execute(
            f"""
            UPDATE embeddings_queue SET metadata = NULL
            WHERE metadata IS NOT NULL AND id IN ({marks}) AND seq_id <= COALESCE((
                SELECT m.seq_id FROM segments s JOIN max_seq_id m ON m.segment_id = s.id
                WHERE s.scope = 'METADATA' AND embeddings_queue.topic LIKE '%/' || s.collection
            ), -1)
            """,
            part,
        )
        done += cur.rowcount
    return done


def trim_queue(folder: Path, collections: Mapping[str, int]) -> dict[str, int]:
    """Clear the metadata of the queue rows that some collections' metadata segments have applied.

    Chroma (1.5) reads a collection's retained queue rows back on every later write to it, and
    never removes them: after eleven 10,000-character records, each one-row write to that
    collection took 110-130 ms instead of 12 (`docs/benchmarks.md`, "Fairness"), with
    the process's interpreter lock held. Clearing what the metadata segment already holds
    brings it back to about 16 ms; the rows keep their vectors for the vector index's replay.

    Args:
        folder: The folder of a `chromadb.PersistentClient`.
        collections: Collection ids, each with the highest queue row already trimmed (0: none).

    Returns:
        Each collection's new highest trimmed row.
    """
    done: dict[str, int] = {}
    con = _connect(folder)
    try:
        for collection, after in collections.items():
            row = con.execute(
                """
                SELECT m.seq_id FROM segments s JOIN max_seq_id m ON m.segment_id = s.id
                WHERE s.scope = 'METADATA' AND s.collection = ?
                """,
                (collection,),
            ).fetchone()
            if row is None or row[0] is None or int(row[0]) <= after:
                done[collection] = after
                continue
            con.execute(
                """
                UPDATE embeddings_queue SET metadata = NULL
                WHERE seq_id > ? AND seq_id <= ? AND metadata IS NOT NULL AND topic LIKE '%/' || ?
                """,
                (after, int(row[0]), collection),
            )
            done[collection] = int(row[0])
    finally:
        con.close()
    return done


def scrub(folder: Path, keys: Iterable[str] = ()) -> ScrubReport:
    """Remove from an embedded Chroma folder's files what deleted records left there.

    Args:
        folder: The folder of a `chromadb.PersistentClient`.
        keys: Keys of the records just deleted or rewritten without their text (their old
            queue rows still hold it).

    Returns:
        What was done. Call it with no other operation on the folder in progress.
    """
    t0 = time.perf_counter()
    report = ScrubReport()
    if not (folder / DB_FILE).exists():
        return report
    con = _connect(folder)
    try:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "embeddings_queue" in tables:
            report.queue_rows = clear_queue(con, keys)
        if "embedding_fulltext_search" in tables:  # merge the segments: deleted documents' terms go
            con.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
        con.execute("VACUUM")  # no free page and no free space in a page keeps old content
        if str(con.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        segments = _segments(con)
    finally:
        con.close()
    report.orphans = remove_orphans(folder, segments)
    for name in segments:
        if (folder / name).is_dir() and zero_unused(folder / name):
            report.zeroed += 1
    report.seconds = time.perf_counter() - t0
    return report


def zero_all_once(folder: Path) -> int:
    """Zero the unused HNSW slots of every collection of a folder, once (before Chroma opens it).

    A folder written before mneme zeroed new collections may hold other records' text there.

    Returns:
        How many folders were changed (0 when it was already done).
    """
    mark = folder / ZEROED_MARK
    if mark.exists() or not (folder / DB_FILE).exists():
        return 0
    con = sqlite3.connect(f"file:{folder / DB_FILE}?mode=ro", uri=True, timeout=60)
    try:
        segments = _segments(con)
    except sqlite3.Error:
        return 0
    finally:
        con.close()
    changed = sum(1 for name in segments if (folder / name).is_dir() and zero_unused(folder / name))
    changed += remove_orphans(folder, segments)
    with contextlib.suppress(OSError):
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text("1\n")
    return changed


def scrub_sqlite(path: Path, conn: sqlite3.Connection | None = None) -> None:
    """Rebuild a SQLite database (a checkpointer's) so that no deleted row stays in its file or WAL.

    Args:
        path: The database file.
        conn: A connection to use (the checkpointer's own, so that its lock is respected).
    """
    own = conn is None
    con = conn or sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        con.execute("PRAGMA secure_delete=ON")
        if con.in_transaction:
            con.commit()
        con.execute("VACUUM")
        if str(con.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        if own:
            con.close()


__all__ = [
    "Gate",
    "ScrubReport",
    "remove_orphans",
    "scrub",
    "scrub_sqlite",
    "vector_folders",
    "zero_all_once",
    "zero_unused",
]
