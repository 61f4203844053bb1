"""The pending queue: extraction jobs kept in the store until they succeed, never dropped.

A job is what one `Memory.add` call (or one graph turn) asked to remember. It is persisted
before any work starts when extraction is deferred, and whenever the LLM extractor fails
(after its retry); `Memory.retry_pending` and the background worker run due jobs again, with
a growing delay between attempts. A job's id is derived from the user, the session, the
message ids and the contents, so submitting the same turn twice keeps one job, and since the
writes themselves are idempotent, running a job twice (a crash after writing, before the job
was marked done) changes nothing.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from langgraph.store.base import BaseStore, SearchItem
from pydantic import BaseModel, Field

from mneme.memory.record import PENDING, label_user, namespace, now_iso

log = logging.getLogger("mneme.extract")

LIST_LIMIT = 1_000_000
FIRST_DELAY_S = 30.0
"""Delay before the first retry of a failed job; it doubles at each failure..."""
MAX_DELAY_S = 3600.0
"""...up to this."""


class PendingJob(BaseModel):
    """One extraction waiting to run (deferred) or to run again (failed)."""

    id: str
    user_id: str
    messages: list[dict[str, Any]]
    """The user's messages: `{"role", "content", "id"}`."""
    before: list[str] = Field(default_factory=list)
    """What the user said just before these messages in the thread: only read, for whom a
    pronoun stands for; nothing is extracted from it."""
    session_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_id: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    """The `Context` settings that shape the write (redaction, TTLs, extractor)."""
    model: str | None = None
    """The chat model by name (a model object given in code is not persisted; a retry after a
    restart uses the default model then)."""
    attempts: int = 0
    last_error: str | None = None
    created_at: str = Field(default_factory=now_iso)
    next_at: str = Field(default_factory=now_iso)
    """Not run again before this time."""

    @staticmethod
    def job_id(user_id: str, session_id: str | None, messages: list[dict[str, Any]]) -> str:
        """The id of the job for these messages (the same on every retry)."""
        h = hashlib.sha256()
        for part in [user_id, session_id or ""]:
            h.update(part.encode() + b"\x1f")
        for m in messages:
            h.update(f"{m.get('id') or ''}\x1e{m.get('content', '')}\x1f".encode())
        return h.hexdigest()[:32]

    def due(self, now: datetime) -> bool:
        """Whether the job may run at `now`."""
        try:
            at = datetime.fromisoformat(self.next_at)
        except ValueError:
            return True
        return at <= now


class PendingQueue:
    """Jobs of each user in `("memory_pending", user)`, through any LangGraph store."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    def put(self, job: PendingJob) -> None:
        """Persist a job (a job with the same id is replaced)."""
        self.store.put(namespace(PENDING, job.user_id), job.id, job.model_dump(mode="json"), index=False)

    def get(self, user_id: str, job_id: str) -> PendingJob | None:
        """One job, or None."""
        item = self.store.get(namespace(PENDING, user_id), job_id)
        return PendingJob.model_validate(item.value) if item else None

    def jobs(self, user_id: str | None = None, *, due_at: datetime | None = None) -> list[PendingJob]:
        """Jobs of a user (of every user if None), oldest first; only those due at `due_at` if given."""
        users = [user_id] if user_id is not None else self.users()
        out: list[PendingJob] = []
        for user in users:
            items = cast("list[SearchItem]", self.store.search(namespace(PENDING, user), limit=LIST_LIMIT))
            for item in items:
                try:
                    job = PendingJob.model_validate(item.value)
                except ValueError:
                    log.error("mneme: unreadable pending job %s of %s kept as is", item.key, user)
                    continue
                if due_at is None or job.due(due_at):
                    out.append(job)
        out.sort(key=lambda j: j.created_at)
        return out

    def users(self) -> list[str]:
        """Users that have pending jobs."""
        spaces = self.store.list_namespaces(prefix=(PENDING,), max_depth=2, limit=LIST_LIMIT)
        return sorted({label_user(ns[1]) for ns in spaces if len(ns) >= 2})

    def done(self, job: PendingJob) -> None:
        """Remove a job that succeeded."""
        self.store.delete(namespace(PENDING, job.user_id), job.id)

    def failed(self, job: PendingJob, error: str, now: datetime | None = None) -> PendingJob:
        """Record a failed attempt: the job stays, and is due again after a growing delay."""
        now = now or datetime.now(UTC)
        attempts = job.attempts + 1
        delay = min(FIRST_DELAY_S * 2 ** (attempts - 1), MAX_DELAY_S)
        job = job.model_copy(
            update={
                "attempts": attempts,
                "last_error": error[:2000],
                "next_at": (now + timedelta(seconds=delay)).isoformat(),
            }
        )
        self.put(job)
        log.error(
            "mneme: extraction for user %r failed (attempt %d, retry after %.0f s): %s",
            job.user_id,
            attempts,
            delay,
            error,
        )
        return job
