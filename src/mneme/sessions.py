"""Sessions API: list, show, resume and delete a user's conversation threads."""

from __future__ import annotations

import builtins
import contextlib
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from mneme import recap
from mneme.errors import NotFoundError
from mneme.memory.forget import forget_threads, scrub_store
from mneme.memory.record import Source, check_user
from mneme.memory.redact import redact_text
from mneme.memory.repo import Repo, refused_inputs
from mneme.memory.write import WriteContext, Writer
from mneme.tokens import message_text
from mneme.validate import check_bool, clean_name


class SessionInfo(BaseModel):
    """What a session list shows about one thread."""

    thread_id: str
    user_id: str
    title: str = ""
    """The start of the session's first user message."""
    created_at: str = ""
    updated_at: str = ""
    turns: int = 0
    """User turns so far (a group-chat burst counts as one)."""
    group: bool = False
    """Whether it is a group chat."""
    recap: str = ""
    """The session's summary (topic, decisions, open items), as last recorded."""
    ended_at: str | None = None
    """When the session's summary was last stored as an episodic memory (None: not yet)."""


class SessionMessage(BaseModel):
    """One checkpointed message, JSON-ready."""

    id: str | None = None
    role: Literal["user", "assistant", "tool", "system"]
    content: str
    name: str | None = None
    """The speaker of a user message (group chats) or the tool of a tool result."""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """Tool calls of an assistant message: `{"id", "name", "args"}`."""
    tool_call_id: str | None = None
    """The call a tool result answers."""


class SessionDetail(SessionInfo):
    """One session with what its checkpoint holds now."""

    messages: list[SessionMessage] = Field(default_factory=list)
    """The messages still in the thread (older ones were folded into `summary`)."""
    summary: str = ""
    """The running summary of the turns folded out of `messages`."""
    task: dict[str, Any] = Field(default_factory=dict)
    """The task state: intent, slots (order ids, dates, amounts), pending action."""


def to_session_message(message: BaseMessage) -> SessionMessage:
    """A checkpointed LangChain message as a plain, JSON-ready one."""
    role: Literal["user", "assistant", "tool", "system"]
    if isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, ToolMessage):
        role = "tool"
    elif isinstance(message, SystemMessage):
        role = "system"
    else:
        role = "assistant"
    calls = (
        [{"id": c.get("id"), "name": c["name"], "args": c["args"]} for c in message.tool_calls]
        if isinstance(message, AIMessage)
        else []
    )
    return SessionMessage(
        id=message.id,
        role=role,
        content=message_text(message),
        name=message.name,
        tool_calls=calls,
        tool_call_id=message.tool_call_id if isinstance(message, ToolMessage) else None,
    )


class Sessions:
    """A user's conversation threads: their records in the store and their checkpoints.

    Every call names the user; another user's thread is simply not found.

    Example:
        >>> with Sessions.open() as sessions:
        ...     for info in sessions.list(user_id="alice"):
        ...         print(info.thread_id, info.title, info.turns)
    """

    def __init__(
        self, checkpointer: BaseCheckpointSaver[Any], store: BaseStore, *, owner: Any = None
    ) -> None:
        """Use a checkpointer and a store that are already open.

        Args:
            checkpointer: Where the graph checkpoints its threads.
            store: Where session records and memories live.
            owner: Object kept alive with this API and closed by `close` (the home).
        """
        self.checkpointer = checkpointer
        self.store = store
        self._owner = owner
        self._repo = Repo(store)
        self._reader: Any = None

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        *,
        embeddings: str | Embeddings | None = None,
        chroma_url: str | None = None,
        postgres: str | None = None,
    ) -> Sessions:
        """Open the sessions kept in a home folder (default `$MNEME_HOME` or `./.mneme`).

        Args:
            home: The data folder.
            embeddings: Embeddings of the store (`"local"` by default).
            chroma_url: A Chroma server instead of the embedded store.
            postgres: A Postgres (`postgresql://...`) instead of the home folder.

        Returns:
            The sessions; close them (or use a `with` block) to release the home.
        """
        from mneme.home import open_home

        opened = open_home(home, embeddings=embeddings, chroma_url=chroma_url, postgres=postgres)
        return cls(opened.checkpointer(), opened.store, owner=opened)

    def close(self) -> None:
        """Release the home folder if this object opened it."""
        close = getattr(self._owner, "close", None)
        self._owner = None
        if close is not None:
            close()

    def __enter__(self) -> Sessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------------

    def list(self, *, user_id: str) -> list[SessionInfo]:
        """The user's sessions, most recently used first."""
        check_user(user_id)
        infos = [self._info(user_id, rec) for rec in self._repo.sessions(user_id)]
        infos.sort(key=lambda s: (s.updated_at, s.created_at, s.thread_id), reverse=True)
        return infos

    def get(self, thread_id: str, *, user_id: str) -> SessionDetail:
        """One session with its messages, running summary and task state.

        Raises:
            NotFoundError: the thread is unknown or belongs to another user.
        """
        record = self._record(thread_id, user_id)
        values = self.state(thread_id)
        messages = [to_session_message(m) for m in _own_messages(values, record)]
        return SessionDetail(
            **self._info(user_id, record).model_dump(),
            messages=messages,
            summary=str(values.get("summary") or ""),
            task=dict(values.get("task") or {}),
        )

    def resume(self, thread_id: str, *, user_id: str) -> dict[str, Any]:
        """The run config that continues a session with `graph.invoke(..., config)`.

        Raises:
            NotFoundError: the thread is unknown or belongs to another user.
        """
        self._record(thread_id, user_id)
        return {"configurable": {"thread_id": thread_id, "user_id": user_id}}

    def state(self, thread_id: str) -> dict[str, Any]:
        """The latest checkpointed values of a thread (empty if it has none).

        Read through the graph: its messages are checkpointed as deltas, which only the
        graph's channels put back together.
        """
        if self._reader is None:
            from mneme.graph import make_builder

            self._reader = make_builder().compile(checkpointer=self.checkpointer)
        snapshot = self._reader.get_state({"configurable": {"thread_id": thread_id}})
        return dict(snapshot.values or {})

    # -- writes ------------------------------------------------------------------------------

    def delete(self, thread_id: str, *, user_id: str, forget_episodes: bool = False) -> None:
        """Delete a session: its checkpoints and its record; optionally its episodic memories.

        Other sessions and the user's long-term memories are left as they are (episodes that
        came from this thread are deleted only with `forget_episodes=True`).

        Raises:
            NotFoundError: the thread is unknown or belongs to another user.
        """
        self._record(thread_id, user_id)
        check_bool(forget_episodes, "forget_episodes")
        if forget_episodes:
            writer = Writer(self.store)
            ctx = WriteContext(user_id=user_id, source=Source(thread_id=thread_id, actor="api"))
            stored_as = redact_text(thread_id)  # how a session id is kept in a memory's source
            for record in self._repo.records(user_id, ["episodic"]):
                if record.source.thread_id in (thread_id, stored_as):
                    with contextlib.suppress(NotFoundError):  # deleted meanwhile by another call
                        writer.delete(record, ctx, reason="its session was deleted")
        forget_threads(self.checkpointer, [thread_id])  # the checkpoint database is rebuilt too
        self._repo.delete_session(user_id, thread_id)
        scrub_store(self.store, user_id, [thread_id])  # its session record held its title and recap

    def end(self, thread_id: str, *, user_id: str, model: str | BaseChatModel | None = None) -> SessionInfo:
        """End a session: store its summary (topic, decisions, open items) as an episodic memory.

        The user's next session starts with it (see `Context.recap_sessions`). Ending a session
        that goes on later is fine: its summary memory is updated when it ends again.

        Args:
            thread_id: The session.
            user_id: Its user.
            model: Write the summary with this chat model (`SESSION_RECAP_PROMPT`); None or
                `offline`: the extractive summary.

        Raises:
            NotFoundError: the thread is unknown or belongs to another user.
        """
        from mneme.models import is_offline, resolve_model

        record = self._record(thread_id, user_id)
        values = self.state(thread_id)
        messages = _own_messages(values, record)
        text = recap.recap_text(
            title=str(record.get("title", "")),
            summary=str(values.get("summary") or ""),
            task=values.get("task"),
            messages=messages,  # type: ignore[arg-type]
        )
        if model is not None and not is_offline(model):
            text = recap.llm_recap(
                resolve_model(model),
                summary=str(values.get("summary") or ""),
                task=values.get("task"),
                messages=messages,  # type: ignore[arg-type]
                fallback=text,
            )
        recap.end_session(self.store, user_id, thread_id, text=text)
        return self._info(user_id, self._record(thread_id, user_id))

    def close_idle(self, *, user_id: str, idle_for: timedelta = timedelta(minutes=30)) -> builtins.list[str]:
        """End every session of a user unused for `idle_for` whose summary is not stored yet.

        Returns:
            The thread ids that were ended.
        """
        check_user(user_id)
        return recap.end_idle_sessions(self.store, user_id, idle_for=idle_for)

    # -- helpers -----------------------------------------------------------------------------

    def _record(self, thread_id: str, user_id: str) -> dict[str, Any]:
        check_user(user_id)
        clean_name(thread_id, "the session id")
        record = self._repo.session(user_id, thread_id)
        if record is None:
            raise NotFoundError(f"mneme: no session {thread_id!r} for user {user_id!r}")
        return record

    @staticmethod
    def _info(user_id: str, record: dict[str, Any]) -> SessionInfo:
        return SessionInfo(
            thread_id=str(record.get("thread_id", "")),
            user_id=user_id,
            title=str(record.get("title", "")),
            created_at=str(record.get("created_at", "")),
            updated_at=str(record.get("updated_at") or record.get("created_at", "")),
            turns=int(record.get("turns", 0)),
            group=bool(record.get("group", False)),
            recap=str(record.get("recap", "")),
            ended_at=record.get("ended_at"),
        )


def _own_messages(values: dict[str, Any], record: dict[str, Any]) -> list[BaseMessage]:
    """A thread's messages without those of another user it refused (before its owner's next turn)."""
    refused = refused_inputs(record)
    return [m for m in values.get("messages") or [] if isinstance(m, BaseMessage) and m.id not in refused]


__all__ = ["SessionDetail", "SessionInfo", "SessionMessage", "Sessions"]
