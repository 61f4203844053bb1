"""Forgetting is complete: after a delete, the forgotten text is in no file of the home.

A delete removes a memory from the store's live view; this module removes what stays on disk
after it. In an embedded home that is the Chroma folder (its write-ahead queue, free pages,
full-text index and HNSW files: `ChromaStore.scrub`), the user's lexical index snapshot
(`mirror.forget_snapshot`), and, when everything about a user is forgotten, the checkpoints of
the user's conversation threads (deleted, then the checkpoint database rebuilt).

A single memory is forgotten from the store; the conversation it was said in keeps the words
in its checkpoints. `Memory.delete` names that thread (`MemoryChange.threads`), and
`Sessions.delete` removes it. Over a Chroma server or Postgres, the server's files are the
server's: mneme deletes the rows, the server's own vacuum reclaims them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from mneme.memory.mirror import base_store, forget_snapshot
from mneme.store.scrub import scrub_sqlite

log = logging.getLogger("mneme.forget")


def scrub_store(store: BaseStore, user_id: str, keys: Iterable[str] = ()) -> None:
    """Remove from the store's files what the deletion of some records left there.

    Args:
        store: The memory store (any; only an embedded Chroma store has files to clean).
        user_id: Whose records were deleted (their lexical snapshot is deleted too).
        keys: The keys of the records deleted, or rewritten without their text.
    """
    base = base_store(store)
    forget_snapshot(base, user_id)
    clean = getattr(base, "scrub", None)
    if callable(clean):
        report = clean(list(keys))
        if report is not None:
            log.debug("mneme: scrubbed the store after a delete: %s", report)


def forget_threads(checkpointer: Any, threads: Iterable[str]) -> list[str]:
    """Delete conversation threads' checkpoints, and rebuild a SQLite checkpoint database.

    Args:
        checkpointer: A LangGraph checkpointer (`delete_thread`); a `SqliteSaver`'s database is
            rebuilt so that the deleted checkpoints are in neither its file nor its WAL.
        threads: The thread ids.

    Returns:
        The threads deleted.
    """
    done = []
    for thread in dict.fromkeys(threads):
        if not thread:
            continue
        checkpointer.delete_thread(thread)
        done.append(thread)
    conn = getattr(checkpointer, "conn", None)
    lock = getattr(checkpointer, "lock", None)
    if done and isinstance(conn, sqlite3.Connection) and lock is not None:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        with lock:
            scrub_sqlite(Path(path), conn)
    return done


__all__ = ["forget_threads", "scrub_store"]
