"""`Memory`: the long-term memory layer on its own (add, search, get, update, delete, export)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.store.base import BaseStore, PutOp
from pydantic import ValidationError

from mneme.context import Context
from mneme.errors import InputError, MnemeError, NotFoundError
from mneme.memory.expiry import is_expired
from mneme.memory.extract import Candidate
from mneme.memory.forget import forget_threads, scrub_store
from mneme.memory.gate import STATS
from mneme.memory.importer import EXPORT_FORMAT, ImportPlan, plan_import
from mneme.memory.lexical import check_filters
from mneme.memory.orphans import settle
from mneme.memory.pipeline import Pipeline, RecentSaid, write_context
from mneme.memory.queue import PendingJob
from mneme.memory.record import (
    HISTORY,
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
from mneme.memory.usermodel.view import UserModelView, user_model_view
from mneme.memory.write import OUTDATED, WriteContext, Writer, user_lock
from mneme.tokens import message_text
from mneme.validate import (
    MAX_LIMIT,
    MAX_MESSAGES,
    MAX_METADATA_CHARS,
    MAX_QUERY_CHARS,
    MAX_REQUEST_CHARS,
    MAX_TTL_DAYS,
    MAX_VALUE_CHARS,
    check_bool,
    check_choice,
    check_choices,
    check_int,
    check_json,
    check_metadata,
    check_number,
    check_time,
    check_total,
    clean_name,
    clean_text,
    json_size,
    optional_name,
    printable,
)
from mneme.validate import MAX_TEXT_CHARS as MAX_TEXT_CHARS  # re-exported: the documented limit

log = logging.getLogger("mneme.memory")

MessagesOrText = str | dict[str, Any] | BaseMessage | Sequence[str | dict[str, Any] | BaseMessage]

ROLES = ("user", "assistant", "system", "tool")
"""The roles a message may have (LangChain's names `human`, `ai`, `developer` and `function` too)."""
_ROLE_NAMES = frozenset({*ROLES, "human", "ai", "developer", "function", "remove"})
_EXPECTED = f"expected one of {'/'.join(ROLES)}"


def _check_role(role: Any, where: str) -> None:
    """Refuse a missing or unknown role, in mneme's words rather than LangChain's."""
    if role is None:
        raise InputError(f"mneme: {where} has no role; {_EXPECTED}")
    if not isinstance(role, str) or role not in _ROLE_NAMES:
        shown = printable(repr(role), 40) if isinstance(role, str) else f"of type {type(role).__name__}"
        raise InputError(f"mneme: {where} has an unknown role {shown}; {_EXPECTED}")


def _reason(exc: Exception) -> str:
    """Why LangChain could not read a message, in one short line without its links."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        return f"{field}: {first['msg']}" if field else str(first["msg"])
    if isinstance(exc, KeyError) and exc.args:
        return f"{exc.args[0]!r} is missing"
    lines = str(exc).split("For troubleshooting")[0].strip().splitlines()
    return printable(lines[0] if lines else type(exc).__name__, 200)


def read_message(item: Any, index: int = 0) -> BaseMessage:
    """Read one message as LangChain does, refusing a malformed one with mneme's own error.

    Meant for every door that takes messages from a caller: `Memory.add` reads them here (and
    so does the REST route, which calls it); the graph's input should be read here too, before
    LangGraph checkpoints it.

    Args:
        item: A message object, a message dict (`{"role": ..., "content": ...}`), a
            `(role, content)` pair, or a text (a user message).
        index: The message's position in what the caller sent, for the error.

    Returns:
        The LangChain message.

    Raises:
        InputError: a short sentence naming the message by its position: no role, an unknown
            role, no content, a tool result without `tool_call_id`, or another field that
            LangChain cannot read.
    """
    where = f"message {index}"
    if isinstance(item, BaseMessage):
        return item
    if isinstance(item, dict):
        envelope = item.get("lc") == 1 and item.get("type") == "constructor"  # LangChain's serialized form
        if not envelope:
            role = item["role"] if "role" in item else item.get("type")
            _check_role(role, where)
            if "content" not in item:
                raise InputError(f"mneme: {where} has no content")
            if role == "tool" and not item.get("tool_call_id"):
                raise InputError(f"mneme: {where} is a tool result without a tool_call_id")
    elif isinstance(item, tuple | list) and len(item) == 2:
        _check_role(item[0], where)
    elif not isinstance(item, str):
        raise InputError(f"mneme: {where} must be a text, a dict or a message, not {type(item).__name__}")
    try:
        return convert_to_messages([item])[0]
    except MnemeError:
        raise
    except Exception as exc:  # LangChain raises many kinds for a malformed message
        raise InputError(f"mneme: {where} cannot be read: {_reason(exc)}") from exc


def to_messages(value: MessagesOrText) -> list[BaseMessage]:
    """Normalize what `add` accepts into LangChain messages (a bare string is a user message).

    Raises:
        InputError: if it is not a text, a message or a list of them, if there are more than
            `MAX_MESSAGES`, or if a message cannot be read (no role or an unknown one, `tool_calls`
            that are not a list of calls, ...: `read_message`).
    """
    if isinstance(value, str):
        items: list[Any] = [{"role": "user", "content": value}]
    elif isinstance(value, dict | BaseMessage):
        items = [value]
    elif isinstance(value, list | tuple):
        if len(value) > MAX_MESSAGES:
            raise InputError(f"mneme: one call may add at most {MAX_MESSAGES} messages (got {len(value)})")
        items = [{"role": "user", "content": v} if isinstance(v, str) else v for v in value]
    else:
        raise InputError(f"mneme: add takes a text, a message or a list of them, not {type(value).__name__}")
    for item in items:
        if isinstance(item, dict):
            check_json(item, "a message", limit=MAX_REQUEST_CHARS + MAX_METADATA_CHARS)
            calls = item.get("tool_calls")
            if calls is not None and not (
                isinstance(calls, list)
                and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls)
            ):
                raise InputError(
                    "mneme: a message's tool_calls must be a list of calls ({'name': ..., 'args': {...}})"
                )
        elif not isinstance(item, BaseMessage):
            raise InputError(
                f"mneme: a message must be a text, a dict or a message, not {type(item).__name__}"
            )
    messages = [read_message(item, i) for i, item in enumerate(items)]
    for m in messages:
        if m.id is not None:
            clean_name(m.id, "a message id")
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
        self._said = RecentSaid()  # for pronouns across calls of one session, in memory only

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        *,
        embeddings: str | Embeddings | None = None,
        model: str | BaseChatModel | None = None,
        chroma_url: str | None = None,
        postgres: str | None = None,
    ) -> Memory:
        """Open the memory kept in a home folder (default `$MNEME_HOME` or `./.mneme`) or a Postgres.

        Args:
            home: The data folder.
            embeddings: `"local"` (default), `"provider:model"`, or an `Embeddings`.
            model: The chat model for LLM extraction; default as in `build_graph`.
            chroma_url: Use a Chroma server instead of the embedded store (several processes
                can share it); also read from `$MNEME_CHROMA_URL`.
            postgres: Use a Postgres with pgvector (`postgresql://...`) instead of the home
                folder (several processes can share it); also read from `$MNEME_POSTGRES_URL`.

        Returns:
            The memory; close it (or use it as a context manager) to release the home.

        Raises:
            ConfigError: if the Postgres cannot be reached or set up.
            HomeLockedError: if another process owns the home folder.
            InputError: if the home folder cannot be created or opened (the message names it).
        """
        from mneme.home import open_home, resolve_home

        try:
            h = open_home(home, embeddings=embeddings, chroma_url=chroma_url, postgres=postgres)
        except OSError as exc:
            if exc.filename is None:  # not the file system (a connection, say): not about the home
                raise
            path, failed = str(resolve_home(home)), str(exc.filename)
            where = "" if failed == path else f" ({printable(failed, 200)})"
            raise InputError(
                f"mneme: cannot use {printable(path, 200)} as the home folder: "
                f"{exc.strerror or type(exc).__name__}{where}"
            ) from exc
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
            session_id: The conversation it comes from. With it, a message that starts with
                a pronoun is read with what the user said last in the same session ("它对鸡肉
                过敏" after "我家狗叫旺财", kept in memory only, `RecentSaid`).
            metadata: Kept with every memory written (and returned by `search`).
            infer: Extract facts (True), or store each message verbatim as one episodic
                memory (False).
            agent_id: The agent writing, if memory is scoped per agent.

        Returns:
            The changes made: ADD, NOOP, SUPERSEDE, DELETE, REFUSE or QUEUED, with ids and texts.
        """
        check_user(user_id)
        session_id = optional_name(session_id, "session_id")
        agent_id = optional_name(agent_id, "agent_id")
        check_bool(infer, "infer")
        metadata = check_metadata(metadata)
        messages = to_messages(messages_or_text)
        if not messages:
            raise InputError("mneme: nothing to add")
        texts = [clean_text(message_text(m), "a message", blank=True) for m in messages]
        if not any(t.strip() for t in texts):
            raise InputError("mneme: the message is empty")
        check_total(texts, json_size(metadata) if metadata else 0)
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
        job = pipeline.job(
            user_id,
            said,
            session_id=session_id,
            metadata=metadata,
            agent_id=agent_id,
            before=self._said.before(user_id, session_id),  # "它对鸡肉过敏" after "我家狗叫旺财"
        )
        changes = pipeline.run(job)
        self._said.add(user_id, session_id, [str(s["content"]) for s in said])
        return changes

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
        clean_text(text, "the memory text")
        kind = check_choice(kind, "kind", KINDS)
        importance = check_number(importance, "importance", 0.0, 1.0)
        if ttl_days is not None:  # 0 means never expire
            ttl_days = check_number(ttl_days, "ttl_days", 0.0, MAX_TTL_DAYS)
        subject = optional_name(subject, "subject")
        if value is not None:
            clean_text(value, "the value", limit=MAX_VALUE_CHARS)
        metadata = check_metadata(metadata)
        clean_name(actor, "actor")
        session_id = optional_name(session_id, "session_id")
        check_bool(confirmed, "confirmed")
        check_total([text, value or ""], json_size(metadata) if metadata else 0)
        ctx = self._ctx(user_id, actor, session_id)
        ctx.metadata = metadata
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
        clean_name(subject, "the field's name")
        clean_text(value, "the field's value", limit=MAX_VALUE_CHARS)
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

    def user_model(self, *, user_id: str) -> UserModelView:
        """What mneme believes about a person, for people to see and correct.

        The person's current user-model memories (those about an aspect of them: diet,
        allergies, employer, home, seat...) grouped by aspect, hard limits first; each with
        the values it replaced (a single-valued aspect's former values: "employer: Tencent,
        before: Alibaba"). Memories about no aspect (events, orders) are not in it. Correct
        one with `update`, forget one with `delete`. A user with no memories has an empty view.

        Raises:
            InputError: if the user id is not a valid one.
        """
        check_user(user_id)
        return user_model_view(
            user_id,
            self.get_all(user_id=user_id),
            self._repo.archived(user_id),
            lambda memory_id: self._repo.history(user_id, memory_id),
        )

    def update(self, memory_id: str, text: str, *, user_id: str, actor: str = "api") -> MemoryChange:
        """Replace a memory's text; the old text stays in its history.

        Concurrent edits and deletes of one memory keep one order: an edit that comes after a
        delete finds nothing (`NotFoundError`), and every edit has its own history row.
        """
        clean_text(text, "the new text")
        clean_name(actor, "actor")
        record = self.get(memory_id, user_id=user_id)
        try:
            return self._writer.update(record, text.strip(), self._ctx(user_id, actor))
        except ValueError as exc:
            raise InputError(str(exc)) from exc

    def delete(self, memory_id: str, *, user_id: str, actor: str = "api") -> MemoryChange:
        """Forget one memory (its text is also scrubbed from its history)."""
        clean_name(actor, "actor")
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
        self._said.forget(user_id)
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
        now = check_time(now, "now")
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
        check_bool(force, "force")
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
            include_history: Also return superseded versions (marked `current=False`) and the
                recaps of sessions that quote a fact since changed or forgotten (marked
                `metadata.outdated`: "会话「我住在北京」" after "我搬到上海了").
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
        clean_text(query, "the search query", limit=MAX_QUERY_CHARS)
        check_int(limit, "limit", 1, MAX_LIMIT)
        kinds = check_choices(kinds, "kinds", KINDS)
        check_bool(include_history, "include_history")
        if filters is not None:
            check_json(filters, "filters", limit=MAX_METADATA_CHARS, depth=3)
        check_filters(filters)
        if not include_history and not {OUTDATED, f"metadata.{OUTDATED}"} & set(filters or {}):
            filters = {**(filters or {}), f"metadata.{OUTDATED}": {"$ne": True}}
        min_relevance = check_number(min_relevance, "min_relevance", 0.0, 1.0)
        session_id = optional_name(session_id, "session_id")
        if max_sensitivity is not None:
            check_int(max_sensitivity, "max_sensitivity", 0, 2)
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
        clean_name(memory_id, "the memory id")
        record = self._repo.get(user_id, memory_id)
        if record is None or is_expired(record, datetime.now(UTC)):
            raise NotFoundError(f"mneme: no memory {memory_id!r} for user {user_id!r}")
        return record

    def get_all(self, *, user_id: str, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """All current memories of a user, oldest first (of some kinds: a list, or one kind)."""
        check_user(user_id)
        kinds = check_choices(kinds, "kinds", KINDS)
        now = datetime.now(UTC)
        return [r for r in self._repo.records(user_id, kinds) if not is_expired(r, now)]

    def history(self, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
        """Every change of one memory, oldest first (also for deleted or superseded ones).

        Rows that a process killed mid-write left behind are settled first (`orphans.py`).

        Raises:
            NotFoundError: if this user never had a memory with this id.
        """
        check_user(user_id)
        clean_name(memory_id, "the memory id")
        rows = self._repo.history(user_id, memory_id)
        if rows and self._settle(user_id, rows, memory_id):
            rows = self._repo.history(user_id, memory_id)
        if not rows:
            raise NotFoundError(f"mneme: no history for memory {memory_id!r} of user {user_id!r}")
        return rows

    def _settle(self, user_id: str, rows: list[HistoryEntry], memory_id: str | None = None) -> bool:
        """Settle the history rows a killed write left behind; whether anything changed."""
        if memory_id is not None:
            record = self._repo.get(user_id, memory_id)
            current = {record.id: record} if record is not None else {}
            archived = {memory_id} if record is None and self._repo.archived(user_id, memory_id) else set()
        else:
            current = {r.id: r for r in self._repo.records(user_id)}
            archived = {r.id for r in self._repo.archived(user_id)}
        found = settle(rows, current, archived)
        if not found:
            return False
        ctx = self._ctx(user_id, "system")
        if found.drop:
            log.warning(
                "mneme: removed %d history rows of user %r whose write never finished",
                len(found.drop),
                user_id,
            )
            self._repo.apply(PutOp(namespace(HISTORY, user_id), row.id, None) for row in found.drop)
        for memory_id in found.finish_delete:
            log.warning("mneme: finishing the delete of memory %r of user %r", memory_id, user_id)
            with contextlib.suppress(NotFoundError):
                self._writer.delete(current[memory_id], ctx, reason="a delete cut short, finished")
        return True

    def users(self) -> list[str]:
        """Ids of users with memories."""
        return self._repo.users()

    # -- export / import ---------------------------------------------------------------------

    def export(self, *, user_id: str) -> dict[str, Any]:
        """Everything kept about a user, as JSON-ready data that `import_data` loads back."""
        check_user(user_id)
        self._settle(user_id, self._repo.history(user_id))
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

    def check_import(self, data: dict[str, Any], *, user_id: str) -> list[MemoryChange]:
        """Check an export as `import_data` would, and say what it would change; write nothing.

        Raises:
            InputError: if the data is not a mneme export, a row in it is malformed, a text is
                over `MAX_TEXT_CHARS`, or it is over `MAX_IMPORT_ROWS` / `MAX_IMPORT_CHARS`.
        """
        check_user(user_id)
        return self._plan_import(data, user_id).changes

    def import_data(self, data: dict[str, Any], *, user_id: str) -> list[MemoryChange]:
        """Load an export back (into this user, whatever user it was exported from).

        Everything is checked before anything is written; then the memories, archived
        versions, history rows, sessions and pending jobs are written in one batch. Records
        keep their ids, history rows and archived versions their keys, so importing the same
        export twice changes nothing (NOOP). A memory stored with another text than the
        export's is replaced as an edit (UPDATE, with a history row, the old text archived);
        a new one gets an IMPORT history row. Records written by an older mneme are migrated.

        Raises:
            InputError: if the data is not a mneme export, a row in it is malformed, a text is
                over `MAX_TEXT_CHARS`, or it is over `MAX_IMPORT_ROWS` / `MAX_IMPORT_CHARS`
                (nothing is written then).
        """
        check_user(user_id)
        with user_lock(self.store, user_id):
            plan = self._plan_import(data, user_id)
            self._repo.apply(plan.ops)
        return plan.changes

    def _plan_import(self, data: dict[str, Any], user_id: str) -> ImportPlan:
        ctx = self._ctx(user_id, "import")
        return plan_import(
            data,
            user_id,
            self._repo,
            ctx.policy,
            refuse=lambda text, reason, ops: self._writer._refuse(ctx, text, reason, ops),
        )
