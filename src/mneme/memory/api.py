"""`Memory`: the long-term memory layer on its own (add, search, get, update, delete, export)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.store.base import BaseStore

from mneme.context import Context
from mneme.errors import InputError, NotFoundError
from mneme.memory.expiry import is_expired
from mneme.memory.extract import Candidate
from mneme.memory.forget import forget_threads, scrub_store
from mneme.memory.gate import STATS
from mneme.memory.lexical import check_filters
from mneme.memory.pipeline import Pipeline, write_context
from mneme.memory.queue import PendingJob
from mneme.memory.record import (
    ARCHIVE,
    HistoryEntry,
    Kind,
    MemoryChange,
    MemoryHit,
    MemoryRecord,
    ProfileField,
    Source,
    check_user,
    namespace,
    now_iso,
)
from mneme.memory.redact import RedactionPolicy, redact_text
from mneme.memory.repo import KINDS, Repo
from mneme.memory.search import SearchSettings, search
from mneme.memory.write import WriteContext, Writer, archive_key, stable_id
from mneme.tokens import message_text

EXPORT_FORMAT = "mneme-export/1"
MAX_TEXT_CHARS = 100_000
"""A single memory (or verbatim message) may not be longer than this."""

MessagesOrText = str | dict[str, Any] | BaseMessage | Sequence[str | dict[str, Any] | BaseMessage]


def to_messages(value: MessagesOrText) -> list[BaseMessage]:
    """Normalize what `add` accepts into LangChain messages (a bare string is a user message)."""
    if isinstance(value, str):
        items: list[Any] = [{"role": "user", "content": value}]
    elif isinstance(value, dict | BaseMessage):
        items = [value]
    else:
        items = [{"role": "user", "content": v} if isinstance(v, str) else v for v in value]
    try:
        messages = convert_to_messages(items)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise InputError(f"mneme: cannot read these messages: {exc}") from exc
    return messages


def policy_of(context: Context) -> RedactionPolicy:
    """The redaction policy a context asks for."""
    return RedactionPolicy.from_context(context)


class Memory:
    """Long-term memory of many users over any LangGraph store.

    Every call names the user; an id of another user's memory is simply not found.

    Example:
        >>> mem = Memory.open("./.mneme")
        >>> mem.add("我不吃辣", user_id="alice")
        >>> mem.search("她能吃辣吗", user_id="alice")
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        model: str | BaseChatModel | None = None,
        context: Context | None = None,
        owner: Any = None,
    ) -> None:
        """Use a store that is already open.

        Args:
            store: Any LangGraph `BaseStore` (mneme's Chroma store, `InMemoryStore`, ...).
            model: Model used by the LLM extractor (`offline` uses the rule-based one).
            context: Settings (redaction policy, limits); defaults to `Context()`.
            owner: Object kept alive with this memory (the home that owns the store).
        """
        self.store = store
        self.model = model
        self.context = context or Context()
        self._owner = owner
        self._repo = Repo(store)
        self._writer = Writer(store)
        self._pipe: Pipeline | None = None

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        *,
        embeddings: str | Embeddings | None = None,
        model: str | BaseChatModel | None = None,
        chroma_url: str | None = None,
    ) -> Memory:
        """Open the memory kept in a home folder (default `$MNEME_HOME` or `./.mneme`).

        Args:
            home: The data folder.
            embeddings: `"local"` (default), `"provider:model"`, or an `Embeddings`.
            model: The chat model for LLM extraction; default as in `build_graph`.
            chroma_url: Use a Chroma server instead of the embedded store (several processes
                can share it); also read from `$MNEME_CHROMA_URL`.

        Returns:
            The memory; close it (or use it as a context manager) to release the home.
        """
        from mneme.home import open_home

        h = open_home(home, embeddings=embeddings, chroma_url=chroma_url)
        return cls(h.store, model=model, owner=h)

    def close(self) -> None:
        """Release the home folder if this memory opened it."""
        close = getattr(self._owner, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------------------

    def _pipeline(self) -> Pipeline:
        if self._pipe is None:
            self._pipe = Pipeline(self.store, self.context, self.model)
        return self._pipe

    def _ctx(self, user_id: str, actor: str = "api", session_id: str | None = None) -> WriteContext:
        return write_context(self.context, user_id, Source(thread_id=session_id, actor=actor))

    def add(
        self,
        messages_or_text: MessagesOrText,
        *,
        user_id: str,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        agent_id: str | None = None,
    ) -> list[MemoryChange]:
        """Remember what a user said.

        With `infer`, the user's messages are extracted into facts: by the chat model when
        there is a real one (and the cheap gate finds the turn worth a call), else by the
        offline rules. A message that tries to instruct the agent is refused (a REFUSE row in
        history). If the model's replies fail validation twice, the messages are queued for
        a retry (`retry_pending`) and a QUEUED change is returned: nothing is dropped.

        Args:
            messages_or_text: A text (a user message), a message dict or object, or a list.
            user_id: Whose memory.
            session_id: The conversation it comes from.
            metadata: Kept with every memory written (and returned by `search`).
            infer: Extract facts (True), or store each message verbatim as one episodic
                memory (False).
            agent_id: The agent writing, if memory is scoped per agent.

        Returns:
            The changes made: ADD, NOOP, SUPERSEDE, DELETE, REFUSE or QUEUED, with ids and texts.
        """
        check_user(user_id)
        messages = to_messages(messages_or_text)
        if not messages:
            raise InputError("mneme: nothing to add")
        texts = [message_text(m) for m in messages]
        if not any(t.strip() for t in texts):
            raise InputError("mneme: the message is empty")
        if metadata is not None and not isinstance(metadata, dict):
            raise InputError("mneme: metadata must be a dict")
        if not infer:
            ctx = write_context(
                self.context,
                user_id,
                Source(thread_id=session_id, actor="api", message_ids=[m.id for m in messages if m.id]),
                metadata,
                agent_id,
            )
            rows = []
            for i, (m, text) in enumerate(zip(messages, texts, strict=True)):
                if not text.strip():
                    continue
                if len(text) > MAX_TEXT_CHARS:
                    raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
                rows.append((text, {"role": m.type, "message_id": m.id or str(i)}))
            return self._writer.add_verbatim(rows, ctx)
        said = [
            {"role": "user", "content": text, "id": m.id}
            for m, text in zip(messages, texts, strict=True)
            if m.type == "human" and text.strip()
        ]
        if not said:
            return []
        pipeline = self._pipeline()
        job = pipeline.job(user_id, said, session_id=session_id, metadata=metadata, agent_id=agent_id)
        return pipeline.run(job)

    def save(
        self,
        text: str,
        *,
        user_id: str,
        kind: Kind = "semantic",
        subject: str | None = None,
        value: str | None = None,
        importance: float = 0.6,
        metadata: dict[str, Any] | None = None,
        actor: str = "api",
        session_id: str | None = None,
        ttl_days: float | None = None,
        confirmed: bool = True,
    ) -> MemoryChange:
        """Store one memory as given (no extraction), still guarded, redacted and reconciled.

        Args:
            text: The memory, in the user's language.
            user_id: Whose memory.
            kind: `profile`, `semantic` or `episodic`.
            subject: A natural key (a profile field name): a later value of the same subject
                supersedes this one, field by field.
            value: The structured value of a keyed memory.
            importance: 0..1.
            metadata: Kept with the memory.
            actor: Who writes (`api`, `agent`, `admin`).
            session_id: The conversation it comes from.
            ttl_days: Time to live in days (None: the default of its kind; 0: never expires).
            confirmed: Whether the user stated it (False: inferred).

        Returns:
            The change made.
        """
        check_user(user_id)
        if not isinstance(text, str) or not text.strip():
            raise InputError("mneme: the memory text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
        if kind not in KINDS:
            raise InputError(f"mneme: kind must be one of {KINDS}, not {kind!r}")
        if not 0.0 <= float(importance) <= 1.0:
            raise InputError("mneme: importance must be between 0 and 1")
        if ttl_days is not None and ttl_days < 0:
            raise InputError("mneme: ttl_days cannot be negative (0 means never expire)")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise InputError("mneme: subject must be a non-empty string")
        ctx = self._ctx(user_id, actor, session_id)
        ctx.metadata = dict(metadata or {})
        ctx.confirmed = confirmed
        cand = Candidate(
            kind=kind,
            text=text.strip(),
            subject=subject.strip() if subject else None,
            value=value,
            importance=float(importance),
            evidence=text,
            ttl_days=ttl_days,
            confirmed=confirmed,
        )
        return self._writer.write([cand], ctx)[0]

    def set_field(
        self,
        subject: str,
        value: str,
        *,
        user_id: str,
        text: str | None = None,
        confirmed: bool = True,
        actor: str = "api",
        session_id: str | None = None,
    ) -> MemoryChange:
        """Set one structured profile field (`shipping_preference = SF_EXPRESS`).

        Each field is its own record with one id across its values, so updating a field never
        rewrites another one: two concurrent updates of different fields both survive. The
        previous value stays in history.

        Args:
            subject: The field's name (snake_case).
            value: Its structured value.
            user_id: Whose profile.
            text: The memory that states it (default `"<subject>: <value>"`).
            confirmed: Whether the user stated it (False: inferred).
            actor: Who writes.
            session_id: The conversation it comes from.

        Returns:
            The change (ADD, SUPERSEDE or NOOP).
        """
        if not isinstance(value, str) or not value.strip():
            raise InputError("mneme: a profile field needs a non-empty value")
        return self.save(
            text or f"{subject}: {value}",
            user_id=user_id,
            kind="profile",
            subject=subject,
            value=value.strip(),
            importance=0.8,
            actor=actor,
            session_id=session_id,
            confirmed=confirmed,
        )

    def profile(self, *, user_id: str) -> dict[str, ProfileField]:
        """A user's structured profile: each current keyed field with its value and source."""
        return {
            r.subject: ProfileField.of(r)
            for r in self.get_all(user_id=user_id, kinds=["profile"])
            if r.subject
        }

    def update(self, memory_id: str, text: str, *, user_id: str, actor: str = "api") -> MemoryChange:
        """Replace a memory's text; the old text stays in its history."""
        record = self.get(memory_id, user_id=user_id)
        if not isinstance(text, str) or not text.strip():
            raise InputError("mneme: the new text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
        try:
            return self._writer.update(record, text.strip(), self._ctx(user_id, actor))
        except ValueError as exc:
            raise InputError(str(exc)) from exc

    def delete(self, memory_id: str, *, user_id: str, actor: str = "api") -> MemoryChange:
        """Forget one memory (its text is also scrubbed from its history)."""
        record = self.get(memory_id, user_id=user_id)
        return self._writer.delete(record, self._ctx(user_id, actor), reason="deleted through the API")

    def delete_all(self, *, user_id: str, sessions: bool = True) -> int:
        """Forget everything about a user: memories, old versions, history, pending jobs and sessions.

        What is forgotten is in no file afterwards (see `mneme.memory.forget`): the store's
        files are cleaned, and the user's conversation threads are deleted with their session
        records (in a home, their checkpoints too, and the checkpoint database is rebuilt).

        Args:
            user_id: Whose memory.
            sessions: Also delete the user's conversation threads (False keeps them and their
                records: what was said there stays in their checkpoints).

        Returns:
            How many current memories were deleted.
        """
        check_user(user_id)
        threads = [str(s.get("thread_id")) for s in self._repo.sessions(user_id) if s.get("thread_id")]
        count = self._repo.drop_user(user_id, sessions=sessions)
        checkpointer = getattr(self._owner, "checkpointer", None)
        if sessions and threads and callable(checkpointer):
            forget_threads(checkpointer(), threads)
        scrub_store(self.store, user_id)
        return count

    def sweep_expired(self, *, user_id: str | None = None, now: datetime | None = None) -> list[MemoryChange]:
        """Take expired memories out of the current view now (writes also do it, once a minute).

        Args:
            user_id: One user, or None for every user.
            now: The time to compare `expires_at` with (default: now).

        Returns:
            One EXPIRE change per memory that left the current view.
        """
        users = [check_user(user_id)] if user_id is not None else self._repo.users()
        changes: list[MemoryChange] = []
        for user in users:
            changes += self._writer.expire(user, now)
        return changes

    def pending(self, *, user_id: str | None = None) -> list[PendingJob]:
        """Extraction jobs waiting for a (re)try, of one user or of all."""
        if user_id is not None:
            check_user(user_id)
        return self._pipeline().queue.jobs(user_id)

    def retry_pending(self, *, user_id: str | None = None, force: bool = False) -> list[MemoryChange]:
        """Run the pending extraction jobs that are due (all of them with `force`).

        Returns:
            The changes the jobs made (a job that fails again stays queued).
        """
        if user_id is not None:
            check_user(user_id)
        return self._pipeline().retry(user_id, force=force)

    @staticmethod
    def extraction_stats() -> dict[str, int | float]:
        """This process's extraction counters.

        Turns seen, sent to the model, model calls saved by the gate, model calls made,
        validation retries, and jobs queued after a failure.
        """
        return STATS.snapshot()

    # -- reads -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        user_id: str,
        limit: int = 5,
        kinds: Sequence[Kind] | None = None,
        include_history: bool = False,
        filters: dict[str, Any] | None = None,
        min_relevance: float = 0.0,
        session_id: str | None = None,
        max_sensitivity: int | None = None,
    ) -> list[MemoryHit]:
        """Find a user's memories by meaning and by words (hybrid retrieval, see `search.py`).

        Args:
            query: What to look for, in any language.
            user_id: Whose memories.
            limit: At most this many hits.
            kinds: Only these kinds (`profile`, `semantic`, `episodic`).
            include_history: Also return superseded versions (marked `current=False`).
            filters: Conditions on metadata keys, e.g. `{"topic": "travel"}` or
                `{"dia_id": {"$in": ["D1:3", "D1:4"]}}`, or on record attributes
                (`importance`, `confidence`, `sensitivity`, `subject`, `value`, `speaker`,
                `session_id`, ...; `metadata.<key>` always means metadata). Operators: `$eq $ne
                $gt $gte $lt $lte $in $nin`. Applied inside the query: the result is the best
                `limit` among the memories that pass, never a filtered top-k.
            min_relevance: Drop hits whose absolute relevance (0..1) is below this.
            session_id: Only memories from this conversation thread.
            max_sensitivity: Only memories at or below this sensitivity (0 ordinary,
                1 personal, 2 sensitive); default: all.

        Returns:
            Hits, best first, each with a score in 0..1.
        """
        check_user(user_id)
        if not isinstance(query, str) or not query.strip():
            raise InputError("mneme: the search query is empty")
        if not isinstance(limit, int) or limit < 1:
            raise InputError("mneme: limit must be at least 1")
        if kinds is not None:
            bad = [k for k in kinds if k not in KINDS]
            if bad:
                raise InputError(f"mneme: unknown kinds {bad}; use {KINDS}")
        check_filters(filters)
        settings = SearchSettings.from_context(
            self.context,
            limit=limit,
            kinds=tuple(kinds) if kinds else None,
            include_history=include_history,
            filters=filters,
            min_relevance=min_relevance,
            # a session id is stored with its personal data masked (`WriteContext.screened`)
            session_id=redact_text(session_id, policy_of(self.context)) if session_id else session_id,
            max_sensitivity=max_sensitivity,
        )
        return search(self.store, user_id, query.strip(), settings)

    def get(self, memory_id: str, *, user_id: str) -> MemoryRecord:
        """One current memory of a user.

        Raises:
            NotFoundError: if there is none with this id for this user.
        """
        check_user(user_id)
        if not isinstance(memory_id, str) or not memory_id:
            raise InputError("mneme: a memory id is required")
        record = self._repo.get(user_id, memory_id)
        if record is None or is_expired(record, datetime.now(UTC)):
            raise NotFoundError(f"mneme: no memory {memory_id!r} for user {user_id!r}")
        return record

    def get_all(self, *, user_id: str, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """All current memories of a user, oldest first."""
        check_user(user_id)
        now = datetime.now(UTC)
        return [r for r in self._repo.records(user_id, kinds) if not is_expired(r, now)]

    def history(self, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
        """Every change of one memory, oldest first (also for deleted or superseded ones).

        Raises:
            NotFoundError: if this user never had a memory with this id.
        """
        check_user(user_id)
        rows = self._repo.history(user_id, memory_id)
        if not rows:
            raise NotFoundError(f"mneme: no history for memory {memory_id!r} of user {user_id!r}")
        return rows

    def users(self) -> list[str]:
        """Ids of users with memories."""
        return self._repo.users()

    # -- export / import ---------------------------------------------------------------------

    def export(self, *, user_id: str) -> dict[str, Any]:
        """Everything kept about a user, as JSON-ready data that `import_data` loads back."""
        check_user(user_id)
        return {
            "format": EXPORT_FORMAT,
            "user_id": user_id,
            "exported_at": now_iso(),
            "memories": [r.to_store() for r in self._repo.records(user_id)],
            "archive": [r.to_store() for r in self._repo.archived(user_id)],
            "history": [h.model_dump(mode="json") for h in self._repo.history(user_id)],
            "sessions": self._repo.sessions(user_id),
            "pending": [j.model_dump(mode="json") for j in self._pipeline().queue.jobs(user_id)],
        }

    def import_data(self, data: dict[str, Any], *, user_id: str) -> list[MemoryChange]:
        """Load an export back (into this user, whatever user it was exported from).

        Records keep their ids, history rows and archived versions their keys, so importing
        the same export twice changes nothing. Records written by an older mneme are
        migrated; each memory imported gets an IMPORT history row.

        Raises:
            InputError: if the data is not a mneme export, or a record in it is malformed
                (nothing is written then).
        """
        check_user(user_id)
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise InputError(f"mneme: not a mneme export (expected format {EXPORT_FORMAT!r})")
        from langgraph.store.base import PutOp

        from mneme.memory import expiry
        from mneme.memory.screen import screen_history, screen_messages, screen_records, screen_session

        changes: list[MemoryChange] = []
        ops: list[PutOp] = []
        jobs: list[PendingJob] = []
        ctx = self._ctx(user_id, "import")
        policy = ctx.policy
        try:
            for raw in data.get("history", []):
                entry = screen_history(HistoryEntry.model_validate(raw), policy)
                ops.append(self._repo.history_op(user_id, entry))
            archived = [
                MemoryRecord.from_store({**raw, "user_id": user_id}) for raw in data.get("archive", [])
            ]
            for record, refused in screen_records(archived, policy):
                if refused:  # an old version that instructs the agent is not kept either
                    continue
                ops.append(
                    PutOp(namespace(ARCHIVE, user_id), archive_key(record), record.to_store(), index=["text"])
                )
            current = [
                MemoryRecord.from_store({**raw, "user_id": user_id}) for raw in data.get("memories", [])
            ]
            for record, refused in screen_records(current, policy):
                if refused:
                    changes.append(self._writer._refuse(ctx, record.text, refused, ops))
                    continue
                existed = self._repo.get(user_id, record.id, kinds=[record.kind]) is not None
                entry = HistoryEntry(
                    id=stable_id(record.id, "IMPORT", record.content_hash),
                    memory_id=record.id,
                    operation="IMPORT",
                    new_text=record.text,
                    actor="import",
                    source=ctx.source.model_dump(mode="json"),
                    reason=f"imported from an export of {data.get('user_id')!r}",
                )
                ops.append(self._repo.history_op(user_id, entry))
                ops += [*self._repo.put_ops(record), expiry.index_op(record)]
                changes.append(
                    MemoryChange(
                        operation="NOOP" if existed else "IMPORT",
                        id=record.id,
                        text=record.text,
                        kind=record.kind,
                    )
                )
            for raw in data.get("pending", []):
                job = PendingJob.model_validate({**raw, "user_id": user_id})
                jobs.append(job.model_copy(update={"messages": screen_messages(job.messages, policy)}))
        except (ValueError, TypeError) as exc:
            raise InputError(f"mneme: the export is malformed: {exc}") from exc
        self._repo.apply(ops)
        for job in jobs:
            self._pipeline().queue.put(job)
        for session in data.get("sessions", []):
            if isinstance(session, dict) and session.get("thread_id"):
                self._repo.put_session(user_id, str(session["thread_id"]), screen_session(session, policy))
        return changes
