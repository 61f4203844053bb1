"""`Memory`: the long-term memory layer on its own (add, search, get, update, delete, export)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.store.base import BaseStore

from mneme.context import Context
from mneme.errors import InputError, NotFoundError
from mneme.memory.extract import MAX_EXTRACT_CHARS, Candidate, extract
from mneme.memory.guard import poisoning_reason
from mneme.memory.record import (
    HistoryEntry,
    Kind,
    MemoryChange,
    MemoryHit,
    MemoryRecord,
    Source,
    check_user,
    now_iso,
)
from mneme.memory.redact import RedactionPolicy
from mneme.memory.repo import KINDS, Repo
from mneme.memory.search import SearchSettings, search
from mneme.memory.write import WriteContext, Writer
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
    return RedactionPolicy(phone=context.redact_phone, email=context.redact_email)


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

        Args:
            messages_or_text: A text (a user message), a message dict or object, or a list.
            user_id: Whose memory.
            session_id: The conversation it comes from.
            metadata: Kept with every memory written (and returned by `search`).
            infer: Extract facts (True), or store each message verbatim as one episodic
                memory (False).
            agent_id: The agent writing, if memory is scoped per agent.

        Returns:
            The changes made: ADD, NOOP, SUPERSEDE, DELETE or REFUSE, with ids and texts.
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
        ctx = WriteContext(
            user_id=user_id,
            source=Source(thread_id=session_id, actor="api", message_ids=[m.id for m in messages if m.id]),
            metadata=dict(metadata or {}),
            agent_id=agent_id,
            policy=policy_of(self.context),
        )
        if not infer:
            rows = []
            for i, (m, text) in enumerate(zip(messages, texts, strict=True)):
                if not text.strip():
                    continue
                if len(text) > MAX_TEXT_CHARS:
                    raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
                rows.append((text, {"role": m.type, "message_id": m.id or str(i)}))
            return self._writer.add_verbatim(rows, ctx)
        ctx.source.actor = "user"
        candidates: list[Candidate] = []
        refused: list[MemoryChange] = []
        for m, text in zip(messages, texts, strict=True):
            if m.type != "human" or not text.strip():
                continue
            reason = poisoning_reason(text[:MAX_EXTRACT_CHARS])
            if reason:
                refused.append(self._writer.refuse(text, reason, ctx))
                continue
            candidates.extend(extract(text))
        return refused + self._writer.write(candidates, ctx)

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
    ) -> MemoryChange:
        """Store one memory as given (no extraction), still guarded, redacted and reconciled."""
        check_user(user_id)
        if not isinstance(text, str) or not text.strip():
            raise InputError("mneme: the memory text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
        if kind not in KINDS:
            raise InputError(f"mneme: kind must be one of {KINDS}, not {kind!r}")
        ctx = WriteContext(
            user_id=user_id,
            source=Source(thread_id=session_id, actor=actor),
            metadata=dict(metadata or {}),
            policy=policy_of(self.context),
        )
        cand = Candidate(
            kind=kind,
            text=text.strip(),
            subject=subject,
            value=value,
            importance=importance,
            evidence=text,
        )
        return self._writer.write([cand], ctx)[0]

    def update(self, memory_id: str, text: str, *, user_id: str) -> MemoryChange:
        """Replace a memory's text; the old text stays in its history."""
        record = self.get(memory_id, user_id=user_id)
        if not isinstance(text, str) or not text.strip():
            raise InputError("mneme: the new text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise InputError(f"mneme: a memory may be at most {MAX_TEXT_CHARS} characters")
        ctx = WriteContext(user_id=user_id, source=Source(actor="api"), policy=policy_of(self.context))
        try:
            return self._writer.update(record, text.strip(), ctx)
        except ValueError as exc:
            raise InputError(str(exc)) from exc

    def delete(self, memory_id: str, *, user_id: str) -> MemoryChange:
        """Forget one memory (its text is also scrubbed from its history)."""
        record = self.get(memory_id, user_id=user_id)
        ctx = WriteContext(user_id=user_id, source=Source(actor="api"), policy=policy_of(self.context))
        return self._writer.delete(record, ctx, reason="deleted through the API")

    def delete_all(self, *, user_id: str) -> int:
        """Forget everything about a user: memories, old versions and history.

        Returns:
            How many current memories were deleted.
        """
        check_user(user_id)
        return self._repo.drop_user(user_id)

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
    ) -> list[MemoryHit]:
        """Find a user's memories by meaning.

        Args:
            query: What to look for, in any language.
            user_id: Whose memories.
            limit: At most this many hits.
            kinds: Only these kinds (`profile`, `semantic`, `episodic`).
            include_history: Also return superseded versions (marked `current=False`).
            filters: Equality or operator filters on record fields, e.g.
                `{"importance": {"$gte": 0.7}}`, applied inside the store query.
            min_relevance: Drop hits less relevant than this (0..1).

        Returns:
            Hits, best first, each with a score.
        """
        check_user(user_id)
        if not isinstance(query, str) or not query.strip():
            raise InputError("mneme: the search query is empty")
        if limit < 1:
            raise InputError("mneme: limit must be at least 1")
        if kinds is not None:
            bad = [k for k in kinds if k not in KINDS]
            if bad:
                raise InputError(f"mneme: unknown kinds {bad}; use {KINDS}")
        settings = SearchSettings(
            limit=limit,
            kinds=tuple(kinds) if kinds else None,
            include_history=include_history,
            filters=filters,
            min_relevance=min_relevance,
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
        if record is None:
            raise NotFoundError(f"mneme: no memory {memory_id!r} for user {user_id!r}")
        return record

    def get_all(self, *, user_id: str, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """All current memories of a user, oldest first."""
        check_user(user_id)
        return self._repo.records(user_id, kinds)

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
        }

    def import_data(self, data: dict[str, Any], *, user_id: str) -> list[MemoryChange]:
        """Load an export back (into this user, whatever user it was exported from).

        Records keep their ids, so importing the same export twice changes nothing.
        """
        check_user(user_id)
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise InputError(f"mneme: not a mneme export (expected format {EXPORT_FORMAT!r})")
        from langgraph.store.base import PutOp

        from mneme.memory.record import ARCHIVE, namespace

        changes: list[MemoryChange] = []
        ops: list[PutOp] = []
        try:
            for raw in data.get("memories", []):
                record = MemoryRecord.from_store({**raw, "user_id": user_id})
                existed = self._repo.get(user_id, record.id) is not None
                ops += self._repo.put_ops(record)
                changes.append(
                    MemoryChange(operation="NOOP" if existed else "IMPORT", id=record.id, text=record.text)
                )
            for raw in data.get("archive", []):
                record = MemoryRecord.from_store({**raw, "user_id": user_id})
                key = f"{record.id}@{record.invalid_at or record.updated_at}"
                ops.append(PutOp(namespace(ARCHIVE, user_id), key, record.to_store(), index=["text"]))
            for raw in data.get("history", []):
                entry = HistoryEntry.model_validate(raw)
                ops.append(self._repo.history_op(user_id, entry))
        except (ValueError, TypeError) as exc:
            raise InputError(f"mneme: the export is malformed: {exc}") from exc
        self._repo.apply(ops)
        for session in data.get("sessions", []):
            if isinstance(session, dict) and session.get("thread_id"):
                self._repo.put_session(user_id, str(session["thread_id"]), session)
        return changes
