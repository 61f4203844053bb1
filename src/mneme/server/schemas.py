"""Request and response bodies of the REST routes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mneme.memory.record import HistoryEntry, Kind, MemoryChange, MemoryHit, MemoryRecord
from mneme.validate import MAX_TEXT_CHARS


class MemoryIn(BaseModel):
    """`POST /v1/users/{user_id}/memories`: remember something.

    Give `text` (stored as one memory as given, or with `infer` extracted like a user message)
    or `messages` (a conversation: facts are extracted, or with `infer=false` each message is
    kept verbatim). The user is the one in the path; a body never names it.
    """

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT_CHARS)
    messages: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    infer: bool | None = None
    """Extract facts (default for `messages`) or store as given (default for `text`)."""
    kind: Kind = "semantic"
    """Kind of a memory stored as given."""
    subject: str | None = None
    value: str | None = None
    importance: float = Field(default=0.6, ge=0.0, le=1.0)
    metadata: dict[str, Any] | None = None
    session_id: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> MemoryIn:
        if (self.text is None) == (self.messages is None):
            raise ValueError("give either text or messages")
        if self.text is not None and not self.text.strip():
            raise ValueError("text is blank")
        return self


class MemoryPatch(BaseModel):
    """`PATCH /v1/users/{user_id}/memories/{memory_id}`: correct a memory's text."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)


class Changes(BaseModel):
    """What a write did."""

    changes: list[MemoryChange]


class Edited(BaseModel):
    """A corrected memory, and the change made."""

    change: MemoryChange
    memory: MemoryRecord


class MemoryPage(BaseModel):
    """Current memories of a user, oldest first, a page at a time."""

    items: list[MemoryRecord]
    total: int
    offset: int
    limit: int


class SearchResult(BaseModel):
    """Memories found by meaning, best first."""

    query: str
    items: list[MemoryHit]


class History(BaseModel):
    """Every change of one memory, oldest first."""

    items: list[HistoryEntry]


class Deleted(BaseModel):
    """How many current memories a delete-all removed."""

    deleted: int


class Users(BaseModel):
    """Users the caller may reach (that have memories, for an operator key)."""

    users: list[str]
    all_users: bool
    """Whether the caller may reach every user (an operator key)."""


class Sessions(BaseModel):
    """A user's conversation threads, most recent first."""

    items: list[dict[str, Any]]


class Health(BaseModel):
    """`GET /healthz`."""

    status: str
    version: str


__all__ = [
    "Changes",
    "Deleted",
    "Edited",
    "Health",
    "History",
    "MemoryIn",
    "MemoryPage",
    "MemoryPatch",
    "SearchResult",
    "Sessions",
    "Users",
]
