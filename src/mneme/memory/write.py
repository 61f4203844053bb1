"""The write path: guard, redact and reconcile candidates, then store them with history.

Every write is idempotent. A memory's id is derived from what it is (the user, its kind, and
its profile field or its normalized text), every history row's id from the change it records,
and every archived version's key from the memory and its version, so a retry after a crash
or a second process writing the same thing at once changes nothing that is already there.
History rows are written before the records they describe: a crash can leave a row whose
record is missing (the retry writes the record under the same row), never a change without
its row.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from mneme.errors import InputError, NotFoundError
from mneme.memory import expiry
from mneme.memory.extract import (
    CALLED_ZH,
    NAME_EN,
    NAME_ZH,
    TAKES_ALL,
    Candidate,
    earlier_value,
    field_words,
    forget_parts,
    forget_topic,
    name_text,
    names_only_a_field,
    subject_of_topic,
)
from mneme.memory.forget import scrub_store
from mneme.memory.gist import filler_only_difference, polarity, same_object
from mneme.memory.guard import field_texts, keep_lines, poisoning_reason
from mneme.memory.mirror import base_store
from mneme.memory.record import (
    ARCHIVE,
    HistoryEntry,
    Kind,
    MemoryChange,
    MemoryRecord,
    Operation,
    Source,
    content_hash,
    namespace,
    normalize_text,
    now_iso,
)
from mneme.memory.redact import (
    NEVER_IN_CLEAR,
    RedactionPolicy,
    kinds_in,
    only_markers,
    redact,
    redact_field,
    redact_text,
    redact_value,
)
from mneme.memory.repo import Repo
from mneme.memory.search import Calibrator, calibrator_for
from mneme.memory.terms import terms
from mneme.memory.usermodel.heads import item_domains, passing, supersedes
from mneme.memory.usermodel.names import holds_a_name
from mneme.memory.usermodel.refer import kin_in, pet_names
from mneme.memory.usermodel.statements import tag_aspect
from mneme.memory.usermodel.taxonomy import OTHERS_ASPECT, PET_ASPECT, taxonomy
from mneme.store.locks import exclusive

RECAP_SOURCE = "session_summary"
"""`metadata["source"]` of a session's recap memory (`recap.end_session`)."""
OUTDATED = "outdated"
"""Metadata key of a session recap that quotes a fact which has since changed (see
`Writer._outdate_session`)."""

_ID_NS = uuid.UUID("6d6e656d-6500-4000-8000-6d656d6f7279")

_PREFETCH = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mneme-prefetch")
"""Embeds verbatim texts for the store while the guard reads them (`Writer.add_verbatim`)."""

DUPLICATE_RELEVANCE = 0.5
"""Calibrated relevance (see `Calibrator`) a memory needs to be called a duplicate of a
candidate that differs from it only in filler words (`filler_only_difference`)."""
CORRECTION_RELEVANCE = 0.5
"""Calibrated relevance a correction needs with the memory it replaces."""
CONTRADICTION_RELEVANCE = 0.5
"""Calibrated relevance a memory about the same object, with the opposite polarity, needs to
be replaced without an explicit correction ("I like spicy food" -> "I don't eat spicy food")."""
REVISION_RELEVANCE = 0.3
"""Calibrated relevance a memory of a neighbouring aspect (same area of life) needs to be
superseded by a statement that revises something; one of the same aspect needs none."""
FORGET_RELEVANCE = 0.4
"""Calibrated relevance the memory a forget request's topic reads most like needs to be deleted
(0.1 deleted one more right memory of the tuning half and one wrong one, docs/benchmarks.md)..."""
FORGET_MARGIN = 0.1
"""...and how far ahead of the next memory it must be (a topic that reads like several is
ambiguous: nothing is deleted, and the reply can ask). Calibrated relevance crowds near 1, so
0.2 left "clear the boyfriend info" (0.94 against a nickname's 0.78) undone: 0.1 found 2 more of
the tuning half's 65 requests resolved by relevance, and deleted nothing wrong there."""
FORGET_AREA = 0.1
"""The relevance enough for the memory of the area of life a request names, when it names a kind
of data the user never gave (asked to forget "工作单位", the user told an occupation: 0.2)."""
FORGET_TENTATIVE = 0.5
"""The relevance a tentative forget request (worded as one, not read as one) needs: "我老是忘记
带钥匙出门" reads faintly like a home address, "Please forget that I like jazz" a lot like "Likes jazz".
It must also hold most of the request's own words (`names`), and a kind of data its words
happen to name ("我女儿把我手机里的游戏全删了") is not looked up as a profile field."""
SIMILAR_LIMIT = 5
"""How many similar current memories of each kind a candidate is compared with."""
USER_MODEL_KINDS: tuple[Kind, ...] = ("profile", "semantic")
"""The kinds a user-model memory is stored as."""
OTHERS_RELEVANCE = 0.5
"""Calibrated relevance a memory about someone else needs to be replaced by a statement about
someone else ("my brother lives in Perth", then "my brother moved to Sydney"): a family's facts
are of many people, and "my wife works at Microsoft" reads as a change of no brother's home.
Chosen on the tuning half of benchmarks/data/whose_facts.json."""


def same_person(old: str, new: str, relevance: float) -> bool:
    """Whether two facts about people (or pets) in the user's life can be about the same one.

    Both name a family member: the same one ("我老公以前每天要喝三杯咖啡", "我老公现在彻底戒了");
    both name a pet: by the same name ("我家狗豆包一直吃皇家", "我家狗豆包最近换成渴望了");
    otherwise alike enough (`OTHERS_RELEVANCE`: "my brother lives in Perth", "he moved to Sydney").
    """
    named, again = kin_in(old), kin_in(new)
    if named and again:
        return bool(named & again)
    pets, again_pets = {n.lower() for n in pet_names(old)}, {n.lower() for n in pet_names(new)}
    if pets and again_pets:
        return bool(pets & again_pets)
    return relevance >= OTHERS_RELEVANCE


SUPERSEDES_NEAR = 0.6
"""`supersedes` probability at which a statement replaces a memory of the same area of life..."""
CHANGE_NEAR = 0.5
"""...when the statement reads as a change at least this much (`change` head)."""
SUPERSEDES_SAME = 0.5
"""A statement read as a revision (`Candidate.revises`) replaces a memory of its own aspect unless
the pair reads below this: "我吃素" then "我最近开始吃肉了" reads 0.53, "我是扁平足，鞋子不合适走路就疼。"
then "我怀孕七个月了，肚子已经挺大了。" 0.47 (two conditions, both hold). 0.3 until the head learnt
from 880 written pairs (`train.pair_dataset`), which it reads better; both values chosen on the
tuning halves of the change pairs and the preference homes (docs/benchmarks.md)."""
SUPERSEDES_ASPECT = 0.8
"""`supersedes` probability at which a statement replaces a memory of its own aspect however little
it reads as a change alone: "我体重九十公斤" then "减了二十斤，现在八十公斤整" (0.93), not "我现在拄拐，
走不了太多路。" then "我有高血压，一直在吃降压药。" (0.74; 0.7 until the same retraining)."""
SUPERSEDES_FAR = 0.8
"""`supersedes` probability at which it replaces a memory of another area ("not married" then
"my wife")... (0.9 was tried: neutral on the tuning half, but it cost 3 of 36 changes of the
fresh pairs, docs/benchmarks.md)"""
FAR_CERTAINTY = 0.4
"""...and when what it is about reads as some aspect of the person at least this surely: "Ugh, I
forgot my keys at the office again" (tech at 0.17, a change at 0.99) had replaced the email..."""
FAR_UNREAD_RELEVANCE = 0.75
"""...or, read as no aspect, when it is this relevant to the memory: "减了二十斤，现在八十公斤整"
(diet at 0.19) still replaces "我体重九十公斤" (0.85), "糟糕，我又把钥匙忘在医院更衣室了" (0.69)
not the job."""
CHANGE_FAR = 0.3
"""...when it reads as a change at least this much. The four were chosen on the tuning half of
the labelled change pairs and the tuning halves' preference homes, where every replacement is
wrong (docs/benchmarks.md)."""
TENTATIVE_SUPERSEDES = 0.7
"""A clause kept only tentatively (barely read as a statement, read as a revision) replaces a memory
only at this `supersedes` probability, whatever the rules below allow: "今晚在家做饭，给我们俩出个菜单"
(a request, 0.24 memorable) replaced "我老公是四川人，无辣不欢" at 0.55. Neutral on the tuning half's
change pairs and preference homes (docs/benchmarks.md)."""
SAME_THING = 0.95
"""Calibrated relevance at which a statement read as a change (`CHANGE_NEAR`) speaks of the very
thing a memory holds ("奶茶戒了！" and "我每天喝两杯奶茶。" 0.96, "Left Deloitte for a small firm."
and "Works as a accountant at Deloitte" 0.99): it replaces that memory where the pair reads at
least `SUPERSEDES_SAME_THING`, and before any other the pair reads more surely ("在长沙待久了现在
无辣不欢" revises "不吃辣", not "我在长沙读大学")..."""
SUPERSEDES_SAME_THING = 0.45
"""...however little the clause reads as a statement (a tentative one too): the pair head alone
reads those two at 0.60 and 0.48."""
PASSING = 0.75
"""A statement the `passing` head reads at least this surely as true only for now or once (a
trip, a treat, a week off with a cold) replaces nothing and keys no field: "这周在上海出差，周五回去"
is no new home, "treated myself to a pumpkin spice latte today" no new way to take coffee. A
correction the user's words assert still replaces. Read on the user's own words (`evidence`): the
head reads a rewritten "Drinks coffee black" as passing. Chosen on the tuning half of the change
pairs: 0.75 kept 5 more additions' first memories for 3 changes missed; 0.7, 9 for 6; 0.8, 3 for 2.
"Relocated to Toronto for a job this spring." reads 0.70 (docs/benchmarks.md)."""
KEY_CERTAINTY = 0.5
"""A statement is keyed as its single-valued aspect's field (and so replaces the field's value
in place) only when the classifier is at least this sure of the aspect: a misread one would
overwrite a field it has nothing to do with."""
HIDDEN_DIGEST = "hidden_digest"
"""Metadata key: a short keyed digest of the personal data a memory's text masks. Two emails
both shown as `[email l***@example.com]` are told apart by it (a changed email is a change, not
the same memory said again); 32 bits cannot give the value back."""
DATA_SUBJECTS = {"phone": "phone", "email": "email"}
"""Profile fields that are nothing but one kind of personal data."""
DOCUMENTS = "documents"
"""The aspect of a user's ID, passport, licence and card numbers."""


def wait_quietly(future: Future[Any]) -> None:
    """Wait for work done ahead of time; its failure is left to whoever does the work again."""
    with suppress(Exception):  # the store embeds again, and raises then
        future.result()


def user_lock(store: BaseStore, user_id: str) -> AbstractContextManager[None]:
    """The lock that serializes one user's reconcile-then-write steps.

    Held by this process's threads and, where the store is shared (Postgres, a Chroma server),
    by the other processes too (`store/locks.py`): two processes adding the same fact at once
    write it once.
    """
    return exclusive(store, f"user:{user_id}")


def stable_id(*parts: str) -> str:
    """A deterministic id, so that retrying a write never creates a second record."""
    return uuid.uuid5(_ID_NS, "\x1f".join(parts)).hex


def called_by(name: MemoryRecord | None, text: str, value: str | None) -> tuple[str, str | None]:
    """What the speaker is now to be called, added to the name they gave before.

    "名字：林晓", then "以后叫我晓晓吧": 名字：林晓（叫我晓晓）, the name still 林晓. Without a name
    before (only what they were called), the new text stands alone.

    Args:
        name: The person's current name memory, if any.
        text: The new memory's text (`称呼：晓晓`, or a name with what to call them).
        value: What to call them.

    Returns:
        The text and value to store.
    """
    if name is None or not name.value or not value or name.value == value:
        return text, value
    if not name.text.startswith((NAME_ZH, NAME_EN)):
        return text, value  # what they were called before, no name
    if text.startswith((NAME_ZH, NAME_EN)):
        return text, value  # a name again, with what to call them: it says it all
    return name_text(name.value, value, zh=text.startswith(CALLED_ZH)), name.value


def field_id(user_id: str, kind: Kind, subject: str) -> str:
    """The id of a keyed memory (a profile field, an order): one id across all its values."""
    return stable_id(user_id, kind, "subject", subject)


def fact_id(user_id: str, kind: Kind, text: str) -> str:
    """The id of an unkeyed memory: derived from its normalized text."""
    return stable_id(user_id, kind, content_hash(text))


def default_ttl() -> dict[str, float | None]:
    """The default time to live per kind of a default `Context` (days)."""
    from mneme.context import Context

    ctx = Context()
    return {
        "profile": ctx.ttl_profile_days,
        "semantic": ctx.ttl_semantic_days,
        "episodic": ctx.ttl_episodic_days,
    }


WRITTEN = ("ADD", "SUPERSEDE", "UPDATE")
"""The operations that leave a memory written by the candidate."""


@dataclass
class WriteContext:
    """Who is writing, from where, under which policy."""

    user_id: str
    source: Source = field(default_factory=Source)
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    policy: RedactionPolicy = field(default_factory=RedactionPolicy)
    ttl_days: dict[str, float | None] = field(default_factory=lambda: default_ttl())
    """Default time to live per kind, in days (missing, None or 0: never expires); by default
    the `Context.ttl_*_days` defaults."""
    confirmed: bool = True
    """Whether what is written was stated by the user (False: inferred by a model or agent)."""
    from_messages: bool = False
    """Whether it was read from the user's own messages by the extractor (False: a memory given
    as is, by `save`, a memory tool or an import)."""
    fresh: frozenset[str] = frozenset()
    """Memories written earlier in this call from the same message as the candidate: never
    replaced by it (what one message says holds together: "I got married and took my husband's
    surname, so I'm Emily Brooks now" keeps the new name beside the marriage)."""

    def screened(self) -> WriteContext:
        """This context with personal data masked in its metadata values and its session id."""
        thread = self.source.thread_id
        source = self.source
        if thread and redact_text(thread, self.policy) != thread:
            source = self.source.model_copy(update={"thread_id": redact_text(thread, self.policy)})
        meta = redact_value(self.metadata, self.policy) if self.metadata else self.metadata
        if source is self.source and meta == self.metadata:
            return self
        return replace(self, source=source, metadata=meta)

    @property
    def source_key(self) -> str:
        """The source message(s) of this write, for idempotent rows."""
        return "\x1e".join([self.source.thread_id or "", *self.source.message_ids])


def as_corrected(cand: Candidate, near: list[tuple[MemoryRecord, float]]) -> Candidate:
    """A correction read as no clear aspect takes the aspect of the memory it reads most like.

    "nope, you got that wrong, I'm at KPMG" reads as a name (0.19): its words are about the
    telling, not the employer; what it corrects ("Works at Deloitte") says what it is about.
    `near` is the user's user-model memories most like it, best first (`Writer._similar`).
    """
    if not near or near[0][1] < CORRECTION_RELEVANCE or not near[0][0].aspect:
        return cand
    old = near[0][0]
    return replace(cand, aspect=old.aspect, kind=old.kind, subject=None)


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
        forgotten: list[str] = []
        ctx = ctx.screened()
        with user_lock(self.store, ctx.user_id):
            self._maybe_sweep(ctx.user_id)
            made: dict[str, int] = {}  # memory id -> the message it was written from
            for cand in candidates:
                fresh = (
                    frozenset(i for i, m in made.items() if m == cand.message)
                    if cand.message is not None
                    else None
                )
                done = self._one(cand, replace(ctx, fresh=fresh) if fresh else ctx)
                changes.extend(done)
                if cand.message is not None:
                    made.update((c.id, cand.message) for c in done if c.id and c.operation in WRITTEN)
                if cand.action == "forget" and (gone := [c.text for c in done if c.operation == "DELETE"]):
                    # the request itself names what it forgets ("forget the stuff about me not
                    # drinking"): a session title that quotes it goes too
                    forgotten += [*gone, cand.evidence or cand.text]
        if forgotten:  # after the lock: a recap quoting them is deleted through `delete`, which takes it
            self._forget_in_sessions(ctx.user_id, forgotten)
        return changes

    def add_verbatim(self, texts: list[tuple[str, dict[str, Any]]], ctx: WriteContext) -> list[MemoryChange]:
        """Store texts as episodic memories, one each, without extraction.

        The id of each record is derived from the user, the source and the text, so adding
        the same conversation twice changes nothing.
        """
        ops: list[PutOp] = []
        changes: list[MemoryChange] = []
        ctx = ctx.screened()
        redacted = [redact(text, ctx.policy) for text, _ in texts]
        prefetch = self._prefetch([red.text for red in redacted if not red.drop])
        with user_lock(self.store, ctx.user_id):
            self._maybe_sweep(ctx.user_id)
            for i, ((text, extra), red) in enumerate(zip(texts, redacted, strict=True)):
                if red.drop and only_markers(red.text):
                    changes.append(self._refuse(ctx, text, "redaction policy drops this data", ops))
                    continue
                kept, removed, lines = keep_lines(red.text)
                if removed and removed == lines:
                    reason = poisoning_reason(red.text) or "an instruction to the agent, not a memory"
                    changes.append(self._refuse(ctx, text, reason, ops))
                    continue
                red.text = kept
                meta = {**ctx.metadata, **redact_value(extra, ctx.policy)}
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
                if self.repo.get(ctx.user_id, rid, kinds=["episodic"]) is not None:
                    changes.append(
                        MemoryChange(
                            operation="NOOP", id=rid, text=red.text, reason="already stored", kind="episodic"
                        )
                    )
                    continue
                record = self._record(
                    Candidate(kind="episodic", text=red.text, importance=0.3),
                    ctx,
                    rid,
                    red.text,
                    None,
                    red.hidden,
                    sensitivity=1 if red.found else 0,
                )
                record.source = ctx.source.model_copy(update={"message_ids": [msg_id]})
                record.metadata = meta
                ops.insert(
                    0, self._history_op(ctx, record.id, "ADD", None, record.text, key=record.content_hash)
                )
                ops += self._put_ops(record)
                changes.append(MemoryChange(operation="ADD", id=record.id, text=record.text, kind="episodic"))
            if prefetch is not None:
                wait_quietly(prefetch)  # the store finds the vectors computed
            self.repo.apply(ops)
        return changes

    def _prefetch(self, texts: list[str]) -> Future[Any] | None:
        """Start embedding texts as the store will (the bundled model, whose cache keeps them).

        The guard embeds the same texts meanwhile (query side, sentence by sentence): on two
        cores the two run side by side instead of one after the other. A text the guard
        changes is embedded again by the store.
        """
        from mneme.embeddings import LocalEmbeddings

        embeddings = getattr(base_store(self.store), "embeddings", None)  # under LangGraph's wrappers
        if not isinstance(embeddings, LocalEmbeddings) or not texts:
            return None  # other embeddings keep no vectors: the store would pay for them twice
        return _PREFETCH.submit(embeddings.embed_documents, texts)

    def refuse(self, text: str, reason: str, ctx: WriteContext) -> MemoryChange:
        """Record that a text was not stored (poisoning attempt, policy), without its content."""
        ops: list[PutOp] = []
        change = self._refuse(ctx, text, reason, ops)
        self.repo.apply(ops)
        return change

    def update(self, record: MemoryRecord, text: str, ctx: WriteContext) -> MemoryChange:
        """Replace a memory's text by the user's (or an admin's) explicit edit.

        The old version goes to the archive and history; the id stays the same.

        Raises:
            InputError: if the redaction policy does not allow storing the new text, or the
                new text is an attempt to instruct the agent (a REFUSE row records it).
        """
        ctx = ctx.screened()
        red = redact(text, ctx.policy)
        if red.drop and only_markers(red.text):
            raise InputError("mneme: the redaction policy does not allow storing this text")
        reason = poisoning_reason(red.text)
        if reason:
            self.refuse(text, reason, ctx)
            raise InputError(f"mneme: the new text was refused: {reason}")
        # read the new text's labels before taking the user's lock: it embeds the text
        labels = relabelled(record.model_copy(update={"text": red.text}))
        with user_lock(self.store, ctx.user_id):
            record = self._current(record, ctx)
            now = now_iso()
            new = record.model_copy(
                update={
                    "text": red.text,
                    "content_hash": content_hash(red.text),
                    "lang": "",
                    "updated_at": now,
                    "valid_from": now,
                    "version": record.version + 1,
                    "confirmed": ctx.confirmed,
                    "sensitivity": max(record.sensitivity, 1 if red.found else 0),
                    "redacted": sorted(set(red.hidden)),
                    "source": ctx.source,
                }
            )
            new.model_post_init(None)
            new = new.model_copy(
                update={k: getattr(labels, k) for k in ("aspect", "aspects", "constraint", "domains")}
            )
            old = record.model_copy(update={"invalid_at": now, "superseded_by": record.id})
            ops = [
                self._history_op(ctx, record.id, "UPDATE", record.text, new.text, key=f"v{record.version}"),
                self._archive_op(old),
                *self._put_ops(new),
            ]
            self.repo.apply(ops)
            self._outdate_session(record)
        return MemoryChange(
            operation="UPDATE", id=record.id, text=new.text, old_text=record.text, kind=record.kind
        )

    def delete(self, record: MemoryRecord, ctx: WriteContext, reason: str | None = None) -> MemoryChange:
        """Forget a memory: remove it, scrub its text from history and from the store's files.

        A DELETE row is kept (without the text). The change names the conversation thread the
        memory came from (`threads`): its checkpoints still hold what was said.

        Raises:
            NotFoundError: if the memory is no longer current (another call deleted it).
        """
        with user_lock(self.store, ctx.user_id):
            record = self._current(record, ctx)
            ops = self._delete_ops(record, ctx, reason)
            self.repo.apply(ops)
            self._outdate_session(record)
        scrub_store(self.store, ctx.user_id, {op.key for op in ops})
        if not is_recap(record):  # a recap is what is cleaned
            self._forget_in_sessions(ctx.user_id, [record.text])
        return MemoryChange(
            operation="DELETE",
            id=record.id,
            text=record.text,
            reason=reason,
            kind=record.kind,
            threads=[record.source.thread_id] if record.source.thread_id else [],
        )

    def _forget_in_sessions(self, user_id: str, texts: list[str]) -> None:
        """Take forgotten personal data out of the user's session titles and recaps (`recap.forget_in_sessions`)."""
        from mneme.recap import forget_in_sessions  # recap writes through this module

        forget_in_sessions(self.store, user_id, texts)

    def expire(self, user_id: str, now: datetime | None = None) -> list[MemoryChange]:
        """Take a user's expired memories out of the current view (archived, EXPIRE rows).

        Args:
            user_id: Whose memories.
            now: The time to compare `expires_at` with (default: now).

        Returns:
            One EXPIRE change per memory that left the current view.
        """
        now = now or datetime.now(UTC)
        ctx = WriteContext(user_id=user_id, source=Source(actor="system"))
        changes: list[MemoryChange] = []
        ops: list[PutOp] = []
        for memory_id, kind in expiry.due(self.store, user_id, now):
            record = self.repo.get(user_id, memory_id, kinds=[kind])
            if record is None:
                ops.append(expiry.unindex_op(user_id, memory_id))
                continue
            if not expiry.is_expired(record, now):
                ops.append(expiry.index_op(record))  # its expiry moved since it was indexed
                continue
            old = record.model_copy(update={"invalid_at": now.isoformat()})
            ops.insert(
                0,
                self._history_op(
                    ctx,
                    record.id,
                    "EXPIRE",
                    record.text,
                    None,
                    key=f"v{record.version}",
                    reason=f"expired at {record.expires_at}",
                ),
            )
            ops += [
                self._archive_op(old),
                *self.repo.remove_ops(record),
                expiry.unindex_op(user_id, record.id),
            ]
            changes.append(
                MemoryChange(
                    operation="EXPIRE", id=record.id, text=record.text, reason="expired", kind=record.kind
                )
            )
        self.repo.apply(ops)
        return changes

    # -- internals -----------------------------------------------------------------------------

    def _current(self, record: MemoryRecord, ctx: WriteContext) -> MemoryRecord:
        """The record as it is now, read under the user's lock: what an edit or a delete acts on.

        A caller reads a record, then asks for a change; another call may have changed or
        deleted it in between. Acting on the fresh copy keeps one order: an update after a
        delete finds nothing (the memory never comes back), and two updates of one memory
        each get their own history row.

        Raises:
            NotFoundError: if the memory is no longer current.
        """
        fresh = self.repo.get(ctx.user_id, record.id, kinds=[record.kind])
        if fresh is None:
            raise NotFoundError(f"mneme: no memory {record.id!r} for user {ctx.user_id!r}")
        return fresh

    def _maybe_sweep(self, user_id: str) -> None:
        if expiry.should_sweep(self.store, user_id):
            self.expire(user_id)

    def _history_op(
        self,
        ctx: WriteContext,
        memory_id: str,
        op: Operation,
        old_text: str | None,
        new_text: str | None,
        key: str,
        reason: str | None = None,
    ) -> PutOp:
        entry = HistoryEntry(
            id=stable_id(memory_id, op, key),  # idempotent rows for idempotent writes
            memory_id=memory_id,
            operation=op,
            old_text=old_text,
            new_text=new_text,
            actor=ctx.source.actor,
            source=ctx.source.model_dump(mode="json"),
            reason=reason,
        )
        return self.repo.history_op(ctx.user_id, entry)

    def _archive_op(self, old: MemoryRecord) -> PutOp:
        return PutOp(namespace(ARCHIVE, old.user_id), archive_key(old), old.to_store(), index=["text"])

    def _put_ops(self, record: MemoryRecord) -> list[PutOp]:
        return [*self.repo.put_ops(record), expiry.index_op(record)]

    def _refuse(self, ctx: WriteContext, text: str, reason: str, ops: list[PutOp]) -> MemoryChange:
        rid = stable_id(ctx.user_id, "refused", content_hash(text))
        # The refused text is not kept: only that something was refused, when, and why.
        ops.insert(0, self._history_op(ctx, rid, "REFUSE", None, None, key=ctx.source_key, reason=reason))
        return MemoryChange(operation="REFUSE", id=None, text=text, reason=reason)

    def _delete_ops(self, record: MemoryRecord, ctx: WriteContext, reason: str | None) -> list[PutOp]:
        ops: list[PutOp] = [
            self._history_op(
                ctx, record.id, "DELETE", "[forgotten]", None, key=f"v{record.version}", reason=reason
            )
        ]
        for item in self.repo.history_items(ctx.user_id, record.id):
            row = dict(item.value)
            if row.get("operation") == "DELETE":
                continue
            row["old_text"] = "[forgotten]" if row.get("old_text") else row.get("old_text")
            row["new_text"] = "[forgotten]" if row.get("new_text") else row.get("new_text")
            ops.append(PutOp(item.namespace, item.key, row, index=False))
        ns = namespace(ARCHIVE, ctx.user_id)
        for item in self.store.search(ns, filter={"id": record.id}, limit=10_000):
            ops.append(PutOp(ns, item.key, None))
        ops += [*self.repo.remove_ops(record), expiry.unindex_op(ctx.user_id, record.id)]
        return ops

    def _record(
        self,
        cand: Candidate,
        ctx: WriteContext,
        rid: str,
        text: str,
        value: str | None,
        hidden: list[str],
        sensitivity: int,
    ) -> MemoryRecord:
        now = datetime.now(UTC)
        ttl = cand.ttl_days if cand.ttl_days is not None else expiry.ttl_for(cand.kind, ctx.ttl_days)
        return MemoryRecord(
            id=rid,
            user_id=ctx.user_id,
            agent_id=ctx.agent_id,
            kind=cand.kind,
            text=text,
            subject=cand.subject,
            value=value,
            importance=cand.importance,
            confirmed=ctx.confirmed and cand.confirmed,
            source=ctx.source,
            metadata=dict(ctx.metadata),
            sensitivity=sensitivity,
            redacted=sorted(set(hidden)),
            aspect=cand.aspect,
            constraint=cand.constraint,
            aspects=list(dict.fromkeys([cand.aspect, *cand.near])) if cand.aspect else [],
            domains=memory_domains(cand, text),
            created_at=now.isoformat(),
            updated_at=now.isoformat(),
            valid_from=now.isoformat(),
            expires_at=expiry.expires_at(now, ttl),
        )

    def _one(self, cand: Candidate, ctx: WriteContext) -> list[MemoryChange]:
        ops: list[PutOp] = []
        if cand.action == "forget":
            changes = self._forget(cand, ctx, ops)
            self.repo.apply(ops)
            if any(c.operation == "DELETE" for c in changes):
                scrub_store(self.store, ctx.user_id, {op.key for op in ops})  # sessions: in `write`
            return changes
        red = redact(cand.text, ctx.policy)
        evidence = redact_text(cand.evidence, ctx.policy) if cand.evidence else None
        reason = poisoning_reason(
            *(part for t in (evidence, red.text) if t for part in field_texts(cand.subject, cand.value, t))
        )
        if reason:
            change = self._refuse(ctx, cand.text, reason, ops)
            self.repo.apply(ops)
            return [change]
        dropped_field = cand.subject is not None and DATA_SUBJECTS.get(cand.subject) in red.dropped
        if red.drop and (dropped_field or only_markers(red.text)):
            change = self._refuse(ctx, cand.text, "redaction policy drops this data", ops)
            self.repo.apply(ops)
            return [change]
        text = red.text
        value = cand.value
        if value is not None and red.found:
            value = redact_field(value, cand.text, ctx.policy)
        cand = of_the_data_given(tag_aspect(replace(cand, evidence=text) if red.found else cand), red.found)
        near: list[tuple[MemoryRecord, float]] | None = None  # (a correction's, searched once)
        if cand.action == "correct" and not cand.target and cand.certainty < KEY_CERTAINTY:
            near = self._similar(text, USER_MODEL_KINDS, ctx.user_id)
            cand = as_corrected(cand, near)
        if not cand.target:  # a memory the extractor named is the one replaced, whatever the aspect
            cand = keyed_by_aspect(cand)
        keyed = cand.subject is not None
        rid = (
            field_id(ctx.user_id, cand.kind, cand.subject or "")
            if keyed
            else fact_id(ctx.user_id, cand.kind, text)
        )
        existing = self.repo.get(ctx.user_id, rid, kinds=[cand.kind])
        if keyed and "called" in cand.tags:  # "以后叫我晓晓吧" keeps the name said before
            text, value = called_by(existing, text, value)
        record = self._record(
            cand, ctx, rid, text, value, red.hidden, max(cand.sensitivity, 1 if red.found else 0)
        )
        digest = hidden_digest(ctx.user_id, red.values)
        if digest:
            record.metadata[HIDDEN_DIGEST] = digest
        aspect = taxonomy().aspect(cand.aspect)
        ruled = aspect is not None and aspect.ruled and value is None
        if aspect is not None and ruled and field_id(ctx.user_id, aspect.kind, aspect.subject) in ctx.fresh:
            # "I'm Zhang Wei, but my English name is David. Call me David.": the rules read the name
            return [
                MemoryChange(operation="NOOP", id=None, text=text, reason="the same message gave this field")
            ]
        if existing is not None and existing.id in ctx.fresh and value is None:
            # a rule of the same message gave the field its value; a classifier's reading of
            # another clause under the same aspect does not replace it
            return [self._noop(existing, "the same message already gave this field")]
        if existing is not None:
            if not other_data(existing, digest) and (
                not keyed
                or normalize_text(existing.text) == normalize_text(text)
                or (value is not None and existing.value == value and "called" not in cand.tags)
                or (polarity(existing.text) == polarity(text) and filler_only_difference(existing.text, text))
            ):
                return [self._said_again(existing, "same memory already stored")]
            return [self._supersede(existing, record, ctx, ops, in_place=True)]
        replaced: MemoryRecord | None = None
        if cand.target:
            replaced = self.repo.get(ctx.user_id, cand.target)
        elif keyed and cand.kind == "profile":
            # a field written before fields had one id each (schema 1) is found by its subject
            legacy = [
                r for r in self.repo.find_subject(ctx.user_id, "profile", cand.subject or "") if r.id != rid
            ]
            replaced = max(legacy, key=lambda r: r.updated_at, default=None)
        if replaced is None and keyed and cand.aspect:
            # the aspect's value may be held by a memory written before it was keyed (a
            # correction, or a statement read with less certainty): that one is replaced
            same = [
                (old, rel)
                for old, rel in self._similar(text, USER_MODEL_KINDS, ctx.user_id, {"aspect": cand.aspect})
                if old.id != rid
            ]
            if same:
                old, rel = max(same, key=lambda p: p[1])
                # the same value said again: two employers read alike (0.91) and are two values
                if polarity(old.text) == polarity(text) and (
                    filler_only_difference(old.text, text)
                    or (rel >= DUPLICATE_RELEVANCE and same_object(old.text, text))
                ):
                    return [self._said_again(old, "the same value is already stored")]
                replaced = old
        if replaced is None and not keyed:
            similar = (
                [(old, rel) for old, rel in near if old.kind == cand.kind]
                if near is not None and cand.kind in USER_MODEL_KINDS
                else self._similar(text, [cand.kind], ctx.user_id)
            )
            for old, rel in similar:
                if _numbers(old.text) != _numbers(text):
                    continue  # "order 1001" and "order 1002" are different facts, however alike
                same_polarity = polarity(old.text) == polarity(text)
                if same_polarity and filler_only_difference(old.text, text) and rel >= DUPLICATE_RELEVANCE:
                    return [self._said_again(old, "a memory with the same meaning exists")]
            for old, rel in similar:
                if (
                    _numbers(old.text) == _numbers(text)
                    and polarity(old.text) != polarity(text)
                    and same_object(old.text, text)
                    and rel >= CONTRADICTION_RELEVANCE
                ):
                    replaced = old
                    break
            if replaced is None and cand.action == "correct" and similar:
                best, rel = similar[0]
                # a correction about one person in the user's life corrects nothing about another
                # ("My wife is Japanese, and her parents…" is no news of the son's ADHD)
                theirs = cand.others or best.aspect == OTHERS_ASPECT
                if rel >= CORRECTION_RELEVANCE and (not theirs or same_person(best.text, text, rel)):
                    replaced = best
        if replaced is not None and replaced.id in ctx.fresh:
            replaced = None
        if ruled and (cand.change < CHANGE_FAR or not holds_a_name(text)):
            # "We call him Quill" (a pet's) replaces no name, nor does "以后别再用旧名字叫我了";
            # "just Bob is fine from now on" does
            replaced = None
        elif replaced is None and cand.aspect:
            replaced = self._revised(text, cand, ctx.user_id, on_pair=ctx.from_messages, fresh=ctx.fresh)
        if cand.tentative and replaced is None:
            return [MemoryChange(operation="NOOP", id=None, text=text, reason="an update of nothing known")]
        if replaced is not None:
            if same_value(replaced, text, digest):
                return [self._said_again(replaced, "same memory already stored")]
            return [self._supersede(replaced, record, ctx, ops, in_place=False)]
        ops.append(self._history_op(ctx, record.id, "ADD", None, record.text, key=record.content_hash))
        ops += self._put_ops(record)
        self.repo.apply(ops)
        return [MemoryChange(operation="ADD", id=record.id, text=record.text, kind=record.kind)]

    def _revised(
        self,
        text: str,
        cand: Candidate,
        user_id: str,
        *,
        on_pair: bool = True,
        fresh: frozenset[str] = frozenset(),
    ) -> MemoryRecord | None:
        """The current user-model memory a statement replaces as a change of mind, if any.

        Read on each pair (`supersedes`): the user's memories of the same area of life as the
        statement's aspects, and the ones most like it of any aspect ("I'm not married" then
        "My wife thinks I work too much"), each judged against the new statement. A memory of
        the same area needs `SUPERSEDES_NEAR` and a statement that reads as a change at
        `CHANGE_NEAR` (one of its own aspect, after a statement read as a revision, only
        `SUPERSEDES_SAME`); one of another area needs `SUPERSEDES_FAR`, `CHANGE_FAR` and to resemble
        the statement (`REVISION_RELEVANCE`: the pair head alone reads a height and a diet as a
        change, on the tuning half's preference homes). A statement that does not read as a
        change alone (`CHANGE_FAR`) is judged against its own aspect's memories only, and
        replaces one at `SUPERSEDES_ASPECT`, when it was read from the user's messages
        (`on_pair`): a memory given as is (`save`, a tool) replaces another only on a sign of
        change, never on the pair alone. The likeliest is replaced. A revision the
        user's words assert (a rule's correction, "现在更喜欢靠过道") or an LLM's `revises` falls
        back to the closest memory of the area (`closest_of_area`).
        """
        # what a statement about a family member is about (a son's allergy) is no aspect of the user's
        aspects = (cand.aspect or "", *([] if cand.others else cand.near))
        # a rule's correction ("现在更喜欢…", "actually") or an LLM's `revises`: said, not measured
        asserted = cand.action == "correct" or (cand.revises and cand.change == 0.0)
        change = 1.0 if asserted else cand.change
        tax = taxonomy()
        if change < CHANGE_FAR and cand.others and cand.aspect != PET_ASPECT:
            return None  # a wife's job and a brother's home stand side by side: they are two people
        # (a pet's new home replaces its old one when both name it: "my rabbit Thumper lives in the
        # laundry room now", `same_person`)
        if change < CHANGE_FAR:  # not read as a change: only its own aspect, read on the pair
            if not on_pair:
                return None
            area = [cand.aspect or ""]
        else:
            area = sorted({a.key for a in tax.aspects.values() for b in aspects if tax.same_area(a.key, b)})
        in_area = of_the_same_person(
            [
                (old, rel)
                for old, rel in self._similar(text, USER_MODEL_KINDS, user_id, {"aspect": {"$in": area}})
                if old.id not in fresh
            ],
            cand,
            text,
        )
        pool = {old.id: (old, True, rel) for old, rel in in_area}
        if change >= CHANGE_FAR:
            for old, rel in of_the_same_person(self._similar(text, USER_MODEL_KINDS, user_id), cand, text):
                # a brother's move replaces no home of the user's, nor the user's move his
                if old.aspect and (old.aspect == OTHERS_ASPECT) == cand.others:
                    pool.setdefault(old.id, (old, old.aspect in area, rel))
        olds = [
            entry
            for key, entry in pool.items()
            if key not in fresh and replaceable(entry[0], cand, text)  # (the far ones too)
        ]
        if not olds or (not asserted and passing([cand.evidence or text])[0] >= PASSING):
            return None  # (a trip, a treat, a week off: true for now, it replaces nothing)
        chance = supersedes([old.text for old, _, _ in olds], text)
        best: tuple[bool, bool, float, MemoryRecord] | None = None
        for (old, near, rel), p in zip(olds, chance, strict=True):
            same = old.aspect == cand.aspect
            thing = rel >= SAME_THING and change >= CHANGE_NEAR and p >= SUPERSEDES_SAME_THING
            if cand.tentative and p < TENTATIVE_SUPERSEDES and not thing:
                continue
            fits = (
                thing
                or (same and p >= SUPERSEDES_ASPECT)
                or (near and p >= SUPERSEDES_NEAR and change >= CHANGE_NEAR)
                or (same and (cand.revises or asserted) and p >= SUPERSEDES_SAME and change >= CHANGE_FAR)
                or (
                    p >= SUPERSEDES_FAR
                    and rel >= REVISION_RELEVANCE
                    and change >= CHANGE_FAR
                    and (cand.certainty >= FAR_CERTAINTY or rel >= FAR_UNREAD_RELEVANCE)
                )
            )
            # a memory of the statement's own aspect goes first: "现在能吃一点辣了" revises the
            # taste "不吃辣", not the peanut allergy said beside it, however the pair reads
            if fits and (best is None or (thing, same, p) > best[:3]):
                best = (thing, same, float(p), old)
        if best is not None:
            return best[3]
        return closest_of_area(in_area, aspects) if asserted else None

    def _said_again(self, existing: MemoryRecord, reason: str) -> MemoryChange:
        """A NOOP for a user-model memory said again unchanged: its `said_at` is refreshed.

        The memory block orders memories of one aspect by when they were last said ("不吃辣",
        "能吃一点辣了", then "不吃辣" again: the first is the latest word). Nothing else changes,
        so no history row is written.
        """
        if existing.aspect:
            self.repo.apply(self._put_ops(existing.model_copy(update={"said_at": now_iso()})))
        return self._noop(existing, reason)

    def _noop(self, existing: MemoryRecord, reason: str) -> MemoryChange:
        return MemoryChange(
            operation="NOOP", id=existing.id, text=existing.text, reason=reason, kind=existing.kind
        )

    def _similar(
        self, text: str, kinds: Sequence[Kind], user_id: str, filters: dict[str, Any] | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """A user's current memories of some kinds like `text`, with calibrated relevance, best first.

        `SIMILAR_LIMIT` of each kind, searched in one batch.
        """
        found = self.repo.search(user_id, text, kinds=kinds, limit=SIMILAR_LIMIT, filters=filters)
        if not found:
            return []
        cal: Calibrator | None = calibrator_for(self.store)
        background = cal.background(text) if cal is not None else None
        out: list[tuple[MemoryRecord, float]] = []
        for record, raw in found:
            if raw is None:
                rel = 0.0
            elif cal is None or background is None:
                rel = raw
            else:
                rel = cal.relevance(raw, background)
            out.append((record, rel))
        out.sort(key=lambda p: p[1], reverse=True)
        return out

    def _supersede(
        self, old: MemoryRecord, new: MemoryRecord, ctx: WriteContext, ops: list[PutOp], *, in_place: bool
    ) -> MemoryChange:
        """Replace `old` by `new`.

        The old version is archived with `invalid_at` and `superseded_by` and is never
        current again; a keyed memory keeps its id.
        """
        now = new.valid_from
        if in_place:
            new.id = old.id
            new.created_at = old.created_at
        new.version = old.version + 1
        archived = old.model_copy(update={"invalid_at": now, "superseded_by": new.id})
        ops.append(
            self._history_op(
                ctx,
                old.id,
                "SUPERSEDE",
                old.text,
                new.text,
                key=f"v{old.version}",
                reason="replaced by a newer value" if in_place else f"superseded by {new.id}",
            )
        )
        if not in_place:
            ops.append(
                self._history_op(
                    ctx, new.id, "ADD", old.text, new.text, key=new.content_hash, reason=f"replaces {old.id}"
                )
            )
        ops.append(self._archive_op(archived))
        if not in_place:
            ops += [*self.repo.remove_ops(old), expiry.unindex_op(ctx.user_id, old.id)]
        ops += self._put_ops(new)
        self.repo.apply(ops)
        self._outdate_session(old)
        return MemoryChange(operation="SUPERSEDE", id=new.id, text=new.text, old_text=old.text, kind=new.kind)

    def _outdate_session(self, old: MemoryRecord) -> None:
        """Mark the recap of the session a changed fact was said in as outdated.

        A recap quotes its session ("会话「我在阿里巴巴工作」"): once the fact has changed or
        been forgotten, the recap must not bring the old value back into a turn. It stays in
        the user's memories and search (what happened in that session), but `retrieve_memories`
        and the recaps of earlier sessions leave it out. A recap stored later for that session
        is marked too (`recap.end_session`).
        """
        thread = old.source.thread_id
        if old.kind == "episodic" or not thread:
            return
        session = self.repo.session(old.user_id, thread)
        if session is None:
            return
        if not session.get("outdated"):
            self.repo.put_session(old.user_id, thread, {**session, "outdated": True})
        recap_id = str(session.get("recap_memory_id") or "")
        recap = self.repo.get(old.user_id, recap_id, kinds=["episodic"]) if recap_id else None
        if recap is not None and not recap.metadata.get(OUTDATED):
            marked = recap.model_copy(update={"metadata": {**recap.metadata, OUTDATED: True}})
            self.repo.apply(self._put_ops(marked))

    def _forget(self, cand: Candidate, ctx: WriteContext, ops: list[PutOp]) -> list[MemoryChange]:
        """Delete what a forget request is about.

        That is: the memory it names (`target`); else, for each topic it names ("把猫和邮箱都
        去掉" names two, `forget_parts`), what that topic points at (`_forget_targets`); a request
        read whole that finds nothing is looked up again by what its words name (`forget_topic`).
        """
        topic = cand.topic or cand.text
        targets: dict[str, MemoryRecord] = {}
        if cand.target:  # the extractor named the memory: that one, or nothing
            if (named := self.repo.get(ctx.user_id, cand.target)) is not None:
                targets[named.id] = named
        elif people := whole_people(cand.evidence or topic):
            # "forget everything about my sister": every fact kept about her, not the likeliest one
            targets.update(
                (r.id, r) for r in self.repo.records(ctx.user_id, USER_MODEL_KINDS) if about(r, people)
            )
        if not targets and not cand.target:
            for part in forget_parts(topic):
                targets.update((r.id, r) for r in self._forget_targets(part, ctx.user_id, cand.tentative))
            words = None if cand.tentative else forget_topic(cand.evidence or topic)
            if not targets and words and words != topic:
                # a request read whole reads like a request ("forget everything about my
                # boyfriend"); what its words name reads like the memory, and must hold most of
                # them ("I want to forget I ever met that guy" names no husband)
                for part in forget_parts(words):
                    targets.update((r.id, r) for r in self._forget_targets(part, ctx.user_id, tentative=True))
        if not targets:
            return [MemoryChange(operation="NOOP", id=None, text=topic, reason="nothing matching to forget")]
        changes = []
        for record in targets.values():
            ops += self._delete_ops(record, ctx, reason="the user asked to forget it")
            changes.append(
                MemoryChange(
                    operation="DELETE",
                    id=record.id,
                    text=record.text,
                    reason="forget request",
                    kind=record.kind,
                    threads=[record.source.thread_id] if record.source.thread_id else [],
                )
            )
        return changes

    def _forget_targets(self, topic: str, user_id: str, tentative: bool = False) -> list[MemoryRecord]:
        """What one topic of a forget request points at.

        A kind of data it names ("my address", "我的邮箱"): the profile field and every memory of
        its aspect; when there is none, the memory of the same area of life it reads most like
        (the occupation for "工作"), never one of another area that happens to read alike. Else
        the memories whose text contains the topic; else the one memory that reads most like it, when it clearly stands out (`FORGET_RELEVANCE`, `FORGET_MARGIN`:
        "the dog stuff" finds "我家狗狗叫旺财" among the user's other memories), or that a
        tentative request clearly names (`FORGET_TENTATIVE`); never masked personal data.
        """
        subject = subject_of_topic(topic)
        if tentative and not names_only_a_field(topic):  # "我女儿把我手机里的游戏全删了" names no phone
            subject = None
        floor = FORGET_TENTATIVE if tentative else FORGET_RELEVANCE
        if subject is not None and earlier_value(topic):
            return []  # "please don't use my old name": not the name the user has now
        if subject is not None:
            found = []
            keyed = self.repo.get(user_id, field_id(user_id, "profile", subject), kinds=["profile"])
            if keyed is not None:
                found.append(keyed)
            aspect = taxonomy().by_subject(subject)
            if aspect is not None:
                found += [r for r in self.repo.records(user_id, USER_MODEL_KINDS) if r.aspect == aspect.key]
            if found or aspect is None:
                return found
            # "我工作单位的信息…别留着" names the employer, the user told their occupation: the
            # memory of that area of life most like the request, if clearly relevant
            near = [
                (r, rel)
                for r, rel in self._similar(topic, USER_MODEL_KINDS, user_id)
                if taxonomy().same_area(r.aspect, aspect.key) and not r.redacted
            ]
            return [near[0][0]] if near and near[0][1] >= min(floor, FORGET_AREA) else []
        hits = self._similar(topic, ["semantic", "profile", "episodic"], user_id)
        named = [r for r, _ in hits if normalize_text(topic) in normalize_text(r.text)]
        # masked personal data ("Phone: [phone ***0123]") goes only when its kind is named: "my
        # budget is private, get rid of that" reads more like a phone number than like the budget
        hits = [(r, rel) for r, rel in hits if not r.redacted]
        # a forget request is itself worded as a wish about what to keep, so it reads like the
        # user's standing wishes ("you don't need to know where I work" like "Don't share my
        # address with anyone."): one of those is what it means only when it holds its words
        hits = [(r, rel) for r, rel in hits if not taxonomy().instruction(r.aspect) or names(topic, r.text)]
        if named or not hits:
            return named
        # a session's recap quotes what was said in it ('Session "I don't drink…"'): the fact
        # itself is what a request is about (its recap goes with it, `forget_in_sessions`), so a
        # recap competes only when no fact is like the request
        facts = [(r, rel) for r, rel in hits if not is_recap(r)]
        if facts and facts[0][1] >= floor:
            hits = facts
        best, rel = hits[0]
        runner_up = hits[1][1] if len(hits) > 1 else 0.0
        if tentative and not names(topic, best.text):
            return []
        if rel < floor or rel - runner_up < FORGET_MARGIN:
            return []
        # a recap found is a session that quoted a fact ('Session "I've been learning the cello…"'):
        # the fact is what the request is about (the recap goes with it, `forget_in_sessions`)
        quoted = (
            [
                r
                for r in self.repo.records(user_id, USER_MODEL_KINDS)
                if r.source.thread_id == best.source.thread_id and names(r.text, best.text)
            ]
            if is_recap(best) and best.source.thread_id
            else []
        )
        return quoted or [best]


def replaceable(old: MemoryRecord, cand: Candidate, text: str) -> bool:
    """Whether a statement may revise a memory, whatever the pair reads like.

    A name only by a statement that holds one ("Anyway — back to the formula." replaces no
    name, `Aspect.ruled`); an instruction to the assistant only by a statement of its own
    aspect (a new job revises no "以后回复我简短点", `Aspect.instruction`); masked personal data
    only by a statement that gives data of the same kind, or none (a new phone number revises
    no ID or card number, however alike "手机换号了，新号码是…" and "驾驶证号跟身份证一样，…" read).
    """
    theirs, given = set(kinds_in(old.text)), set(kinds_in(text))
    if theirs and given and not theirs & given:
        return False
    aspect = taxonomy().aspect(old.aspect)
    if aspect is None:
        return True
    if aspect.ruled and not holds_a_name(text):
        return False
    return not aspect.instruction or old.aspect in (cand.aspect, *cand.near)


def whole_people(request: str) -> set[str]:
    """The family members a forget request asks to forget all about (`refer.kin_in`), if any.

    Only when it takes in everything (`extract.TAKES_ALL`) and names no kind of data ("我妈的工作
    的事" is about one fact, whoever's it is).
    """
    people = kin_in(request)
    if not people or not TAKES_ALL.search(request) or field_words(request.lower()):
        return set()
    return people


def about(record: MemoryRecord, people: set[str]) -> bool:
    """Whether a memory is a fact about one of these family members ("我妹妹在杭州读大学")."""
    return record.aspect == OTHERS_ASPECT and bool(kin_in(record.text) & people)


def is_recap(record: MemoryRecord) -> bool:
    """Whether a memory is a session's recap (`recap.end_session`), not something the user said."""
    return (record.metadata or {}).get("source") == RECAP_SOURCE


def names(topic: str, text: str) -> bool:
    """Whether a memory holds most of a topic's own words ("I live in Leeds" names "Lives in Leeds").

    What a request only worded as one (tentative) may delete: "删掉第二段" reads like "我在读研二"
    at 0.78 and shares no word with it.
    """
    own = set(terms(topic))
    return bool(own) and 2 * len(own & set(terms(text))) > len(own)


def hidden_digest(user_id: str, values: Sequence[str]) -> str:
    """`HIDDEN_DIGEST` of the values a redaction masked ("" when none)."""
    if not values:
        return ""
    said = "\x1f".join(sorted(normalize_text(v) for v in values))
    return hmac.new(user_id.encode("utf-8"), said.encode("utf-8"), hashlib.sha256).hexdigest()[:8]


def other_data(old: MemoryRecord, digest: str) -> bool:
    """Whether a memory masks other personal data than a new text whose masked data has `digest`.

    Both may read `[email l***@example.com]`; a memory written before digests were kept never does.
    """
    theirs = str((old.metadata or {}).get(HIDDEN_DIGEST) or "")
    return bool(theirs and digest and theirs != digest)


def same_value(old: MemoryRecord, text: str, digest: str) -> bool:
    """Whether a memory says the same as a new text: equal texts and the same masked data."""
    return normalize_text(old.text) == normalize_text(text) and not other_data(old, digest)


def of_the_same_person(
    near: list[tuple[MemoryRecord, float]], cand: Candidate, text: str
) -> list[tuple[MemoryRecord, float]]:
    """The memories (with their calibrated relevance) a statement about someone else may replace.

    The wife's new job is no news of the brother's: one person's facts, said alike, are another's
    only when they can be about the same person (`same_person`). A statement about the user keeps
    them all.
    """
    if not cand.others:
        return near
    return [(old, rel) for old, rel in near if same_person(old.text, text, rel)]


def closest_of_area(
    in_area: list[tuple[MemoryRecord, float]], aspects: tuple[str, ...]
) -> MemoryRecord | None:
    """The memory an asserted revision replaces, unmeasured (an LLM's or a rule's word).

    Of the memories of its area of life (with their calibrated relevance): one of its aspect,
    the most similar first, else one of a neighbouring aspect similar enough
    (`REVISION_RELEVANCE`), the aspects it may also be about first.
    """
    ranked = [
        (
            0
            if old.aspect == aspects[0]
            else 1 + (aspects.index(old.aspect) if old.aspect in aspects else len(aspects)),
            -rel,
            old,
        )
        for old, rel in in_area
        if old.aspect == aspects[0] or rel >= REVISION_RELEVANCE
    ]
    return min(ranked, key=lambda r: (r[0], r[1]))[2] if ranked else None


def relabelled(record: MemoryRecord) -> MemoryRecord:
    """An edited user-model memory, labelled by what its new text says.

    Its aspect, constraint and domains are read again ("不吃辣" corrected to "现在能吃辣了" is a
    taste, no longer a limit). A keyed field keeps its aspect (its id is the aspect's), as does a memory outside the user
    model or one whose new text is read with too little certainty.
    """
    if record.aspect is None or record.kind == "episodic":
        return record
    cand = tag_aspect(Candidate(kind=record.kind, text=record.text, evidence=record.text))
    if cand.aspect is None or (record.subject is not None and cand.aspect != record.aspect):
        return record
    return record.model_copy(
        update={
            "aspect": cand.aspect,
            "aspects": list(dict.fromkeys([cand.aspect, *cand.near])),
            "constraint": cand.constraint,
            "domains": item_domains(record.text),
        }
    )


def of_the_data_given(cand: Candidate, found: Sequence[str]) -> Candidate:
    """A statement read as a phone or an e-mail that gives none but an ID, a card or a passport number is of those.

    Not the other way round: a membership or library card number is often masked as a phone, and
    as the phone field the next phone number said would replace it.

    "我的身份证号是…，银行卡是…" read as a phone (there is a number in it) would otherwise be keyed
    as the phone field, replaced by the next phone number said, and deleted by "forget my phone".

    Args:
        cand: The candidate, tagged with its aspect.
        found: The kinds of personal data its text holds (`Redaction.found`).
    """
    data = DATA_SUBJECTS.get(cand.aspect or "")
    if data is None or data in found or cand.subject is not None or not set(found) & set(NEVER_IN_CLEAR):
        return cand
    documents = taxonomy().aspects[DOCUMENTS]
    return replace(
        cand, aspect=DOCUMENTS, kind=documents.kind, sensitivity=max(cand.sensitivity, documents.sensitivity)
    )


def keyed_by_aspect(cand: Candidate) -> Candidate:
    """A candidate of a single-valued aspect (home, employer, seat) keyed as that aspect's field.

    A person has one current value of such an aspect, so the new statement replaces the old
    one in place, whatever words either used.
    """
    aspect = taxonomy().aspect(cand.aspect)
    if aspect is None or not aspect.single or cand.subject is not None or cand.certainty < KEY_CERTAINTY:
        return cand
    if aspect.ruled:  # only a name the rules read replaces one ("We call him Quill" is a pet's)
        return cand
    if (
        cand.action != "correct" and passing([cand.evidence or cand.text])[0] >= PASSING
    ):  # "in Miami for two weeks"
        return cand
    return replace(cand, subject=aspect.subject, kind=aspect.kind)


def memory_domains(cand: Candidate, text: str) -> dict[str, float]:
    """The request domains a memory matters for (0..1 each, most likely first).

    The domain classifier's reading of a user-model memory; where an LLM extractor named
    domains too, half the weight is the classifier's (its reading normalized) and half is spread
    evenly over the named ones, so a domain both name leads.
    """
    read = item_domains(text) if cand.aspect else {}
    if not cand.domains:
        return read
    total = sum(read.values())
    named = set(cand.domains)
    mixed = {
        key: (0.5 * read.get(key, 0.0) / total if total else 0.0)
        + (0.5 if total else 1.0) * (key in named) / len(named)
        for key in {**read, **dict.fromkeys(cand.domains)}
    }
    return {k: round(v, 3) for k, v in sorted(mixed.items(), key=lambda kv: -kv[1])}


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+", text)


def archive_key(record: MemoryRecord) -> str:
    """The archive key of one version of a memory (the same on every retry)."""
    return f"{record.id}@v{record.version}"
