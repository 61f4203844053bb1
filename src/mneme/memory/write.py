"""The write path: guard, redact and reconcile candidates, then store them with history."""

from __future__ import annotations

import difflib
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from mneme.memory.extract import Candidate, subject_of_topic
from mneme.memory.guard import poisoning_reason
from mneme.memory.record import (
    HistoryEntry,
    MemoryChange,
    MemoryRecord,
    Operation,
    Source,
    content_hash,
    normalize_text,
    now_iso,
)
from mneme.memory.redact import RedactionPolicy, redact
from mneme.memory.repo import Repo
from mneme.memory.search import calibrator_for

_ID_NS = uuid.UUID("6d6e656d-6500-4000-8000-6d656d6f7279")

DUPLICATE_RELEVANCE = 0.9
"""Calibrated relevance (see `Calibrator`) above which a candidate may be a duplicate..."""
DUPLICATE_TEXT_RATIO = 0.8
"""...and how alike the two texts must also be, character by character."""
CORRECTION_RELEVANCE = 0.5
"""Calibrated relevance a correction needs with the memory it replaces."""
FORGET_RELEVANCE = 0.5
"""Calibrated relevance a memory needs to be deleted by a forget request."""

_locks: dict[tuple[int, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def user_lock(store: BaseStore, user_id: str) -> threading.Lock:
    """The in-process lock that serializes one user's reconcile-then-write steps."""
    with _locks_guard:
        return _locks.setdefault((id(store), user_id), threading.Lock())


def stable_id(*parts: str) -> str:
    """A deterministic id, so that retrying a write never creates a second record."""
    return uuid.uuid5(_ID_NS, "\x1f".join(parts)).hex


@dataclass
class WriteContext:
    """Who is writing, from where, under which policy."""

    user_id: str
    source: Source = field(default_factory=Source)
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    policy: RedactionPolicy = field(default_factory=RedactionPolicy)


class Writer:
    """Applies candidates to a user's memory: add, noop, supersede, delete or refuse."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self.repo = Repo(store)

    # -- public ------------------------------------------------------------------------------

    def write(self, candidates: list[Candidate], ctx: WriteContext) -> list[MemoryChange]:
        """Reconcile and store candidates for one user.

        Args:
            candidates: What an extractor proposed (or what a user asked to store).
            ctx: The user, the source, the metadata and the redaction policy.

        Returns:
            One change per candidate (and one per memory a forget request deleted).
        """
        changes: list[MemoryChange] = []
        with user_lock(self.store, ctx.user_id):
            for cand in candidates:
                changes.extend(self._one(cand, ctx))
        return changes

    def add_verbatim(self, texts: list[tuple[str, dict[str, Any]]], ctx: WriteContext) -> list[MemoryChange]:
        """Store texts as episodic memories, one each, without extraction.

        The id of each record is derived from the user, the source and the text, so adding
        the same conversation twice changes nothing.
        """
        ops: list[PutOp] = []
        changes: list[MemoryChange] = []
        with user_lock(self.store, ctx.user_id):
            for i, (text, extra) in enumerate(texts):
                red = redact(text, ctx.policy)
                if red.drop:
                    changes.append(self._refuse(ctx, text, "redaction policy drops this data", ops))
                    continue
                meta = {**ctx.metadata, **extra}
                msg_id = str(
                    extra.get("message_id")
                    or (ctx.source.message_ids[i] if i < len(ctx.source.message_ids) else i)
                )
                rid = stable_id(
                    ctx.user_id,
                    "episodic",
                    ctx.source.thread_id or "",
                    msg_id,
                    content_hash(red.text),
                )
                if self.repo.get(ctx.user_id, rid) is not None:
                    changes.append(
                        MemoryChange(operation="NOOP", id=rid, text=red.text, reason="already stored")
                    )
                    continue
                record = MemoryRecord(
                    id=rid,
                    user_id=ctx.user_id,
                    agent_id=ctx.agent_id,
                    kind="episodic",
                    text=red.text,
                    source=ctx.source.model_copy(update={"message_ids": [msg_id]}),
                    metadata=meta,
                    sensitivity=1 if red.found else 0,
                    importance=0.3,
                )
                ops += self.repo.put_ops(record)
                ops.append(self._history_op(ctx, record.id, "ADD", None, record.text, rid))
                changes.append(MemoryChange(operation="ADD", id=record.id, text=record.text))
            self.repo.apply(ops)
        return changes

    def refuse(self, text: str, reason: str, ctx: WriteContext) -> MemoryChange:
        """Record that a text was not stored (poisoning attempt, policy), without its content."""
        ops: list[PutOp] = []
        change = self._refuse(ctx, text, reason, ops)
        self.repo.apply(ops)
        return change

    def update(self, record: MemoryRecord, text: str, ctx: WriteContext) -> MemoryChange:
        """Replace a memory's text by the user's (or an admin's) explicit edit.

        The old version goes to the archive and history; the id stays the same.
        """
        red = redact(text, ctx.policy)
        if red.drop:
            raise ValueError("mneme: the redaction policy does not allow storing this text")
        with user_lock(self.store, ctx.user_id):
            new = record.model_copy(
                update={
                    "text": red.text,
                    "content_hash": content_hash(red.text),
                    "updated_at": now_iso(),
                    "version": record.version + 1,
                    "confirmed": True,
                    "sensitivity": max(record.sensitivity, 1 if red.found else 0),
                }
            )
            old = record.model_copy(update={"invalid_at": now_iso(), "superseded_by": record.id})
            ops = [
                *self.repo.archive_ops(old)[1:],  # keep the current key: it is overwritten below
                *self.repo.put_ops(new),
                self._history_op(ctx, record.id, "UPDATE", record.text, new.text),
            ]
            self.repo.apply(ops)
        return MemoryChange(operation="UPDATE", id=record.id, text=new.text, old_text=record.text)

    def delete(self, record: MemoryRecord, ctx: WriteContext, reason: str | None = None) -> MemoryChange:
        """Forget a memory: remove it, scrub its text from history, keep a DELETE row."""
        with user_lock(self.store, ctx.user_id):
            ops = self._delete_ops(record, ctx, reason)
            self.repo.apply(ops)
        return MemoryChange(operation="DELETE", id=record.id, text=record.text, reason=reason)

    # -- internals -----------------------------------------------------------------------------

    def _history_op(
        self,
        ctx: WriteContext,
        memory_id: str,
        op: Operation,
        old_text: str | None,
        new_text: str | None,
        key: str | None = None,
        reason: str | None = None,
    ) -> PutOp:
        entry = HistoryEntry(
            memory_id=memory_id,
            operation=op,
            old_text=old_text,
            new_text=new_text,
            actor=ctx.source.actor,
            source=ctx.source.model_dump(mode="json"),
            reason=reason,
        )
        if key is not None:  # idempotent rows for idempotent writes
            entry.id = stable_id(memory_id, op, key)
        return self.repo.history_op(ctx.user_id, entry)

    def _refuse(self, ctx: WriteContext, text: str, reason: str, ops: list[PutOp]) -> MemoryChange:
        rid = stable_id(ctx.user_id, "refused", content_hash(text))
        # The refused text is not kept: only that something was refused, and why.
        ops.append(self._history_op(ctx, rid, "REFUSE", None, None, key=rid, reason=reason))
        return MemoryChange(operation="REFUSE", id=None, text=text, reason=reason)

    def _delete_ops(self, record: MemoryRecord, ctx: WriteContext, reason: str | None) -> list[PutOp]:
        ops: list[PutOp] = list(self.repo.remove_ops(record))
        for item in self.repo.history_items(ctx.user_id, record.id):
            row = dict(item.value)
            row["old_text"] = "[forgotten]" if row.get("old_text") else row.get("old_text")
            row["new_text"] = "[forgotten]" if row.get("new_text") else row.get("new_text")
            ops.append(PutOp(item.namespace, item.key, row, index=False))
        for old in self.repo.archived(ctx.user_id, record.id):
            ops += [PutOp(ns, key, None) for ns, key in self._archive_keys(ctx.user_id, old.id)]
        ops.append(self._history_op(ctx, record.id, "DELETE", "[forgotten]", None, reason=reason))
        return ops

    def _archive_keys(self, user_id: str, memory_id: str) -> list[tuple[tuple[str, ...], str]]:
        from mneme.memory.record import ARCHIVE, namespace

        ns = namespace(ARCHIVE, user_id)
        items = self.store.search(ns, filter={"id": memory_id}, limit=10_000)
        return [(ns, i.key) for i in items]

    def _one(self, cand: Candidate, ctx: WriteContext) -> list[MemoryChange]:
        ops: list[PutOp] = []
        if cand.action == "forget":
            changes = self._forget(cand, ctx, ops)
            self.repo.apply(ops)
            return changes
        reason = poisoning_reason(cand.evidence or cand.text) or poisoning_reason(cand.text)
        if reason:
            change = self._refuse(ctx, cand.text, reason, ops)
            self.repo.apply(ops)
            return [change]
        red = redact(cand.text, ctx.policy)
        if red.drop:
            change = self._refuse(ctx, cand.text, "redaction policy drops this data", ops)
            self.repo.apply(ops)
            return [change]
        text = red.text
        value = cand.value
        if value is not None and red.found:
            value = redact(value, ctx.policy).text
        record = MemoryRecord(
            id=stable_id(ctx.user_id, cand.kind, cand.subject or "", content_hash(text)),
            user_id=ctx.user_id,
            agent_id=ctx.agent_id,
            kind=cand.kind,
            text=text,
            subject=cand.subject,
            value=value,
            importance=cand.importance,
            confirmed=True,
            source=ctx.source,
            metadata=dict(ctx.metadata),
            sensitivity=max(cand.sensitivity, 1 if red.found else 0),
        )
        existing = self.repo.get(ctx.user_id, record.id)
        if existing is not None:
            return [
                MemoryChange(
                    operation="NOOP",
                    id=existing.id,
                    text=existing.text,
                    reason="same memory already stored",
                )
            ]
        replaced: MemoryRecord | None = None
        if cand.subject:
            same = self.repo.find_subject(ctx.user_id, cand.kind, cand.subject)
            for old in same:
                if normalize_text(old.text) == normalize_text(text) or (
                    old.value and old.value == value and cand.kind == "profile"
                ):
                    return [
                        MemoryChange(
                            operation="NOOP",
                            id=old.id,
                            text=old.text,
                            reason="same value already stored",
                        )
                    ]
            replaced = same[0] if same else None
        else:
            similar = self.repo.search(ctx.user_id, text, kinds=[cand.kind], limit=5)
            cal = calibrator_for(self.store)
            background = cal.background(text) if cal and similar else None

            def relevance(raw: float | None) -> float:
                if raw is None:
                    return 0.0
                if cal is None or background is None:
                    return raw
                return cal.relevance(raw, background)

            for old, raw in similar:
                close_text = difflib.SequenceMatcher(
                    None, normalize_text(old.text), normalize_text(text)
                ).ratio()
                if close_text >= DUPLICATE_TEXT_RATIO and relevance(raw) >= DUPLICATE_RELEVANCE:
                    return [
                        MemoryChange(
                            operation="NOOP",
                            id=old.id,
                            text=old.text,
                            reason="a memory with the same meaning exists",
                        )
                    ]
            if cand.action == "correct":
                best = max(similar, key=lambda s: relevance(s[1]), default=None)
                if best is not None and relevance(best[1]) >= CORRECTION_RELEVANCE:
                    replaced = best[0]
        if replaced is not None:
            now = now_iso()
            old = replaced.model_copy(update={"invalid_at": now, "superseded_by": record.id})
            record.version = replaced.version + 1
            ops += self.repo.archive_ops(old)
            ops += self.repo.put_ops(record)
            ops.append(
                self._history_op(
                    ctx,
                    replaced.id,
                    "SUPERSEDE",
                    replaced.text,
                    record.text,
                    reason=f"superseded by {record.id}",
                )
            )
            ops.append(
                self._history_op(
                    ctx,
                    record.id,
                    "ADD",
                    replaced.text,
                    record.text,
                    reason=f"replaces {replaced.id}",
                )
            )
            self.repo.apply(ops)
            return [
                MemoryChange(operation="SUPERSEDE", id=record.id, text=record.text, old_text=replaced.text)
            ]
        ops += self.repo.put_ops(record)
        ops.append(self._history_op(ctx, record.id, "ADD", None, record.text, key=record.content_hash))
        self.repo.apply(ops)
        return [MemoryChange(operation="ADD", id=record.id, text=record.text)]

    def _forget(self, cand: Candidate, ctx: WriteContext, ops: list[PutOp]) -> list[MemoryChange]:
        """Delete what a forget request is about.

        That is: the memories that name the topic, the profile field it refers to, else the
        single best match if it is clearly relevant.
        """
        topic = cand.topic or cand.text
        targets: dict[str, MemoryRecord] = {}
        subject = subject_of_topic(topic)
        if subject:
            for record in self.repo.find_subject(ctx.user_id, "profile", subject):
                targets[record.id] = record
        hits = self.repo.search(ctx.user_id, topic, limit=10)
        for record, _ in hits:
            if normalize_text(topic) in normalize_text(record.text):
                targets[record.id] = record
        if not targets and hits:
            cal = calibrator_for(self.store)
            background = cal.background(topic) if cal else None
            best, raw = max(hits, key=lambda h: -1.0 if h[1] is None else h[1])
            if cal and background and raw is not None and cal.relevance(raw, background) >= FORGET_RELEVANCE:
                targets[best.id] = best
        if not targets:
            return [MemoryChange(operation="NOOP", id=None, text=topic, reason="nothing matching to forget")]
        changes = []
        for record in targets.values():
            ops += self._delete_ops(record, ctx, reason=f"user asked to forget: {topic}")
            changes.append(
                MemoryChange(operation="DELETE", id=record.id, text=record.text, reason="forget request")
            )
        return changes
