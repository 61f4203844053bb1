"""The memory record, its history rows, and what the `Memory` API returns."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mneme.errors import InputError
from mneme.validate import clean_name

SCHEMA_VERSION = 3
"""Version of the stored record layout; older records are migrated when read (`migrate`).

- 0: before versioning: `memory` instead of `text`, no `kind`.
- 1: `text`, `kind`, validity, `expires_at`, `sensitivity`, `content_hash`.
- 2: `lang` (the language the text is in) and `redacted` (kinds of personal data masked in
  the text); a profile field keeps one id across its values (`field_id`).
- 3: `aspect` (what the memory says about the person, from the user model's taxonomy) and
  `constraint` (a hard limit that outranks likes).
"""

Kind = Literal["profile", "semantic", "episodic"]
"""`profile`: a keyed field (shipping_preference); `semantic`: a fact or preference about the
user; `episodic`: an event or a verbatim piece of conversation."""

Operation = Literal["ADD", "UPDATE", "SUPERSEDE", "DELETE", "NOOP", "REFUSE", "EXPIRE", "IMPORT", "QUEUED"]
"""What a write did. `QUEUED` (a change, never a history row): extraction failed and the input
waits in the pending queue for a retry."""

MEMORIES = "memories"
"""Namespace root of current memories: `("memories", user)`."""
ARCHIVE = "memory_archive"
"""Namespace root of superseded versions, kept for history: `("memory_archive", user)`."""
HISTORY = "memory_history"
"""Namespace root of change rows: `("memory_history", user)`."""
SESSIONS = "sessions"
"""Namespace root of session (thread) records: `("sessions", user)`."""
EXPIRY = "memory_expiry"
"""Namespace root of the expiry index: `("memory_expiry", user)`, one small row per memory that
has an `expires_at`, so that sweeping expired memories never filters the memories themselves."""
PENDING = "memory_pending"
"""Namespace root of extraction jobs waiting for a (re)try: `("memory_pending", user)`."""

MAX_USER_ID = 256


def now_iso() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat()


def new_id() -> str:
    """A new memory id."""
    return uuid.uuid4().hex


def check_user(user_id: Any) -> str:
    """Validate a user id and return it.

    Raises:
        InputError: if it is missing, not a string, blank, too long, or holds a control
            character (NUL included) or a lone surrogate.
    """
    if user_id is not None and not isinstance(user_id, str):
        raise InputError(f"mneme: user_id must be a string, not {type(user_id).__name__}")
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(
            "mneme: a user_id is required (pass context={'user_id': ...} to the graph, "
            "or user_id=... to Memory)"
        )
    if len(user_id) > MAX_USER_ID:
        raise InputError(f"mneme: user_id is longer than {MAX_USER_ID} characters")
    return clean_name(user_id, "user_id", limit=MAX_USER_ID)


def user_label(user_id: str) -> str:
    """The namespace label of a user: reversible, without `.` (LangGraph forbids it)."""
    return check_user(user_id).replace("%", "%25").replace(".", "%2E")


def label_user(label: str) -> str:
    """Inverse of `user_label`."""
    return label.replace("%2E", ".").replace("%25", "%")


def namespace(root: str, user_id: str) -> tuple[str, str]:
    """The store namespace of one user's records of one kind."""
    return (root, user_label(user_id))


_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Canonical form of a memory text for duplicate detection."""
    text = unicodedata.normalize("NFKC", text).casefold().strip()
    text = re.sub(r"[\s\u3000]+", " ", text)
    return text.rstrip("。.!！?？;；,，")


def content_hash(text: str) -> str:
    """Stable hash of a memory's normalized text."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()[:32]


_CJK = re.compile(r"[\u4e00-\u9fff]")


def lang_of(text: str) -> str:
    """`zh` for a mainly Chinese text, else `en` (the two languages the rules know)."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk > 0 and cjk * 3 >= len(re.sub(r"\s", "", text)) else "en"


def redaction_markers(text: str) -> list[str]:
    """Kinds of personal data a text shows only as a redaction marker (`[phone ****5678]`)."""
    from mneme.memory.redact import kinds_in

    return kinds_in(text)


class Source(BaseModel):
    """Where a memory came from."""

    model_config = ConfigDict(extra="allow")

    thread_id: str | None = None
    """The conversation thread (session) it was said in."""
    message_ids: list[str] = Field(default_factory=list)
    """Ids of the messages it was extracted from."""
    actor: str = "user"
    """Who caused the write: `user` (said it), `agent` (a memory tool), `api`, `system`."""
    speaker: str | None = None
    """In a group chat, the participant who said it."""
    at: str = Field(default_factory=now_iso)
    """When it was said or written."""


class MemoryRecord(BaseModel):
    """One long-term memory of one user."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    id: str = Field(default_factory=new_id)
    user_id: str
    agent_id: str | None = None
    kind: Kind = "semantic"
    text: str
    """The memory in the user's own language."""
    subject: str | None = None
    """Natural key of a profile field (`shipping_preference`) or a topic key of a fact."""
    value: str | None = None
    """Structured value of a profile field (`SF_EXPRESS`)."""
    importance: float = 0.5
    confidence: float = 1.0
    confirmed: bool = False
    """The user stated it explicitly (not inferred)."""
    source: Source = Field(default_factory=Source)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=now_iso)
    updated_at: str = Field(default_factory=now_iso)
    valid_from: str = Field(default_factory=now_iso)
    invalid_at: str | None = None
    superseded_by: str | None = None
    expires_at: str | None = None
    sensitivity: int = 0
    """0 ordinary, 1 personal (contact data), 2 sensitive (health, finance, identity)."""
    version: int = 1
    """1 for a new memory, +1 at each update or supersession of a profile field."""
    content_hash: str = ""
    use_count: int = 0
    last_used_at: str | None = None
    lang: str = ""
    """The language of `text` (`zh`, `en`); the text is never translated."""
    redacted: list[str] = Field(default_factory=list)
    """Kinds of personal data shown only as a marker in `text` (`cn_id`, `bank_card`, `phone`,
    `email`, `passport`, `address`): the value exists, the model is told so, but it is not kept
    in clear."""
    aspect: str | None = None
    """The aspect of the person it is about (`diet`, `employer`, `seat`: see
    `memory/usermodel/taxonomy.py`); None for memories outside the user model (events, orders)."""
    constraint: bool = False
    """A hard limit (an allergy, a diet, a fear, a boundary) that outranks likes when injected."""
    aspects: list[str] = Field(default_factory=list)
    """Every aspect it may be about, `aspect` first ("I avoid wearables for fitness tracking":
    fitness, tech): a request that touches any of them may need it."""
    domains: dict[str, float] = Field(default_factory=dict)
    """The kinds of request it matters for (the user model's domains, most likely first, with
    their probabilities): "对羊毛过敏" matters for clothes, "对花生过敏" for meals."""
    said_at: str | None = None
    """When the user last said it again, unchanged (a NOOP): a memory is last said at the later
    of this and `updated_at` (`last_said`)."""

    @property
    def last_said(self) -> str:
        """When the user last said it: written, changed, or said again."""
        return max(self.updated_at, self.said_at or "")

    def model_post_init(self, __context: Any) -> None:
        """Fill the content hash and the language."""
        if not self.content_hash:
            self.content_hash = content_hash(self.text)
        if not self.lang:
            self.lang = lang_of(self.text)

    @property
    def current(self) -> bool:
        """Whether this is the current version (not superseded or invalidated)."""
        return self.invalid_at is None

    def to_store(self) -> dict[str, Any]:
        """The JSON value kept in the store."""
        return self.model_dump(mode="json")

    @classmethod
    def from_store(cls, value: dict[str, Any]) -> MemoryRecord:
        """Read a stored value, migrating older layouts."""
        return cls.model_validate(migrate(dict(value)))


def migrate(value: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a stored record to the current schema version, one version at a time.

    - 0 -> 1: `memory` becomes `text`; a record without `kind` is a semantic memory; a
      `hash` becomes `content_hash`.
    - 1 -> 2: `lang` is read from the text; `redacted` from the markers in it.
    - 2 -> 3: a profile field's `aspect` is the one its field name belongs to.

    Raises:
        InputError: if the record was written by a newer mneme than this one.
    """
    try:
        version = int(value.get("schema_version", 0))
    except (TypeError, ValueError):
        raise InputError(
            f"mneme: a stored memory has a bad schema_version {value.get('schema_version')!r}"
        ) from None
    if version > SCHEMA_VERSION:
        raise InputError(
            f"mneme: memory {value.get('id')!r} was written by a newer mneme (schema {version}, this one "
            f"reads up to {SCHEMA_VERSION}); upgrade mneme to read it"
        )
    if version == 0:
        if "text" not in value and "memory" in value:
            value["text"] = value.pop("memory")
        if "hash" in value and "content_hash" not in value:
            value["content_hash"] = value.pop("hash")
        value.setdefault("kind", "semantic")
        version = value["schema_version"] = 1
    if version == 1:
        text = str(value.get("text", ""))
        value.setdefault("lang", lang_of(text))
        value.setdefault("redacted", redaction_markers(text))
        version = value["schema_version"] = 2
    if version == 2:
        if not value.get("aspect"):
            value["aspect"] = legacy_aspect(value.get("subject"))
        value.setdefault("aspects", [value["aspect"]] if value.get("aspect") else [])
        version = value["schema_version"] = 3
    return value


def legacy_aspect(subject: Any) -> str | None:
    """The user-model aspect of a profile field written before aspects existed."""
    if not isinstance(subject, str) or not subject:
        return None
    from mneme.memory.usermodel.taxonomy import taxonomy

    found = taxonomy().by_subject(subject)
    return found.key if found else None


class MemoryHit(BaseModel):
    """One search result."""

    id: str
    text: str
    kind: Kind
    score: float
    """Final score in 0..1 (relevance, recency and importance combined)."""
    created_at: str
    updated_at: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    subject: str | None = None
    value: str | None = None
    user_id: str
    current: bool = True
    speaker: str | None = None
    aspect: str | None = None
    """What it says about the person (user model aspect), if anything."""
    constraint: bool = False
    """A hard limit (allergy, diet, fear, boundary)."""
    aspects: list[str] = Field(default_factory=list)
    """Every aspect it may be about, `aspect` first."""
    domains: dict[str, float] = Field(default_factory=dict)
    """The kinds of request it matters for, with their probabilities."""
    said_at: str = ""
    """When the user last said it (written, changed or said again unchanged)."""

    @classmethod
    def of(cls, record: MemoryRecord, score: float) -> MemoryHit:
        """A hit for a record."""
        return cls(
            id=record.id,
            text=record.text,
            kind=record.kind,
            score=round(float(score), 4),
            created_at=record.created_at,
            updated_at=record.updated_at,
            metadata=record.metadata,
            subject=record.subject,
            value=record.value,
            user_id=record.user_id,
            current=record.current,
            speaker=record.source.speaker,
            aspect=record.aspect,
            constraint=record.constraint,
            aspects=list(record.aspects),
            domains=dict(record.domains),
            said_at=record.last_said,
        )


class MemoryChange(BaseModel):
    """One change made by a write."""

    operation: Operation
    id: str | None
    """The memory changed (for NOOP, the existing duplicate; for REFUSE, None)."""
    text: str
    old_text: str | None = None
    reason: str | None = None
    kind: Kind | None = None
    """The kind of the memory changed, when there is one."""
    threads: list[str] = Field(default_factory=list)
    """For a DELETE: the conversation thread the memory came from, whose checkpoints still hold
    what was said (`Sessions.delete` removes it; `delete_all` removes a user's threads)."""


class HistoryEntry(BaseModel):
    """One row of a memory's change history."""

    id: str = Field(default_factory=new_id)
    memory_id: str
    operation: Operation
    old_text: str | None = None
    new_text: str | None = None
    actor: str = "user"
    at: str = Field(default_factory=now_iso)
    source: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None


class ProfileField(BaseModel):
    """One structured field of a user's profile (`shipping_preference = SF_EXPRESS`)."""

    subject: str
    """The field's name."""
    value: str | None
    """Its structured value."""
    text: str
    """The memory that states it, in the user's language."""
    id: str
    """The memory's id (a field keeps one id across its values)."""
    confirmed: bool
    """The user stated it explicitly (not inferred)."""
    source: Source
    """Where the current value came from."""
    updated_at: str
    version: int

    @classmethod
    def of(cls, record: MemoryRecord) -> ProfileField:
        """The field a profile record holds."""
        return cls(
            subject=record.subject or "",
            value=record.value,
            text=record.text,
            id=record.id,
            confirmed=record.confirmed,
            source=record.source,
            updated_at=record.updated_at,
            version=record.version,
        )
