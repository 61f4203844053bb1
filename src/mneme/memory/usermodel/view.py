"""What mneme believes about a person, grouped by aspect, for people to see and correct (`Memory.user_model`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, Field

from mneme.memory.record import HistoryEntry, Kind, MemoryRecord, Source
from mneme.memory.usermodel.taxonomy import taxonomy

UNKNOWN_AREA = "other"
"""The area shown for an aspect the shipped taxonomy does not know (written by another version)."""


class EarlierValue(BaseModel):
    """A value that was current before the one shown, kept in the archive with its history."""

    id: str
    """The memory it was stored as (the current one's id when it was edited or replaced in place)."""
    text: str
    """What it said, in the user's language."""
    version: int
    since: str
    """When it became current."""
    until: str
    """When it stopped being current."""
    change: Literal["superseded", "edited"]
    """`superseded`: a newer statement replaced it; `edited`: an explicit correction (a person
    through the API, the CLI or the admin page, or an import) replaced its text."""


class Belief(BaseModel):
    """One current memory of the user model: what mneme believes now about one aspect."""

    id: str
    """The memory's id: `PATCH` / `DELETE /v1/users/{user}/memories/{id}` (or `mneme memories
    edit` / `delete`) correct or forget it."""
    text: str
    """What it says, in the user's language."""
    kind: Kind
    constraint: bool
    """A hard limit (allergy, diet, boundary) that outranks likes when injected."""
    confirmed: bool
    """The user stated it explicitly (not inferred)."""
    since: str
    """When this value became current (`valid_from`)."""
    created_at: str
    updated_at: str
    version: int
    """1 for a first value, +1 at each edit or replacement."""
    source: Source
    """Where the current value came from (who wrote it, which conversation)."""
    also: list[str] = Field(default_factory=list)
    """Other aspects it may be about (a request touching any of them may bring it in)."""
    earlier: list[EarlierValue] = Field(default_factory=list)
    """The values it replaced, most recent first: for a single-valued aspect (employer,
    residence, seat) the person's former values."""


class AspectView(BaseModel):
    """The current memories of one aspect of a person (diet, employer, seat...)."""

    aspect: str
    """Its key in the taxonomy (`data/user_model.json`)."""
    label: str
    """Its name in English."""
    label_zh: str
    """Its name in Chinese."""
    area: str
    """The part of life it belongs to (`work`, `places`, `food`...)."""
    single: bool
    """A person has one current value: a new statement supersedes the old one."""
    constraint: bool
    """A hard limit: the aspect is one (allergy, diet, health, boundary) or one of its memories is."""
    memories: list[Belief]
    """Constraints first, then the most recent first."""
    conflicting: bool = False
    """A single-valued aspect with more than one current memory: one of them is probably stale."""


class UserModelView(BaseModel):
    """What mneme believes about a person: their user-model memories by aspect, constraints first.

    Memories that are about no aspect of the person (events, orders, conversation) are not in it.
    """

    user_id: str
    aspects: list[AspectView]
    """Aspects with a current memory: hard limits first, then in the taxonomy's order."""
    total: int
    """Memories shown, over all aspects."""


def user_model_view(
    user_id: str,
    current: Iterable[MemoryRecord],
    archived: Iterable[MemoryRecord],
    history_of: Callable[[str], list[HistoryEntry]],
) -> UserModelView:
    """Group a person's current user-model memories by aspect, with the values they replaced.

    Args:
        user_id: Whose memories.
        current: The person's current (unexpired) memories; those without an aspect are left out.
        archived: The person's archived versions (superseded, edited or expired ones).
        history_of: A memory's history rows (asked only for memories edited or replaced in
            place, to tell an edit from a replacement).

    Returns:
        The view, hard limits first.
    """
    tax = taxonomy()
    order = {key: i for i, key in enumerate(tax.aspects)}
    records = [r for r in current if r.aspect]
    live = {r.id for r in records}
    replaced: dict[str, list[MemoryRecord]] = {}
    for old in archived:
        if old.superseded_by and old.invalid_at:  # an expired version was replaced by nothing
            replaced.setdefault(old.superseded_by, []).append(old)
    groups: dict[str, list[Belief]] = {}
    for record in records:
        earlier = _earlier(record, live, replaced, history_of)
        groups.setdefault(record.aspect or "", []).append(_belief(record, earlier))
    views = []
    for key, beliefs in groups.items():
        beliefs.sort(key=lambda b: b.since, reverse=True)
        beliefs.sort(key=lambda b: not b.constraint)
        aspect = tax.aspect(key)
        single = aspect.single if aspect else False
        views.append(
            AspectView(
                aspect=key,
                label=aspect.en if aspect else key,
                label_zh=aspect.zh if aspect else key,
                area=aspect.area if aspect else UNKNOWN_AREA,
                single=single,
                constraint=(aspect.constraint if aspect else False) or any(b.constraint for b in beliefs),
                memories=beliefs,
                conflicting=single and len(beliefs) > 1,
            )
        )
    views.sort(key=lambda v: (not v.constraint, order.get(v.aspect, len(order)), v.aspect))
    return UserModelView(user_id=user_id, aspects=views, total=sum(len(v.memories) for v in views))


def _earlier(
    record: MemoryRecord,
    live: set[str],
    replaced: dict[str, list[MemoryRecord]],
    history_of: Callable[[str], list[HistoryEntry]],
) -> list[EarlierValue]:
    """The archived versions a current memory replaced, directly or through older replacements."""
    found: list[MemoryRecord] = []
    seen_ids = {record.id}
    seen_keys: set[tuple[str, int]] = set()
    queue = [record.id]
    while queue:
        memory_id = queue.pop()
        for old in replaced.get(memory_id, []):
            if (old.id, old.version) in seen_keys:
                continue
            if old.id in live and old.id != record.id:
                continue  # said again since: it is current on its own
            seen_keys.add((old.id, old.version))
            found.append(old)
            if old.id not in seen_ids:
                seen_ids.add(old.id)
                queue.append(old.id)
    edits: dict[str, set[str]] = {}
    out = []
    for old in found:
        change: Literal["superseded", "edited"] = "superseded"
        if old.superseded_by == old.id:  # kept its id: an edit, or a keyed value replaced in place
            if old.id not in edits:
                edits[old.id] = {h.old_text or "" for h in history_of(old.id) if h.operation == "UPDATE"}
            if old.text in edits[old.id]:
                change = "edited"
        out.append(
            EarlierValue(
                id=old.id,
                text=old.text,
                version=old.version,
                since=old.valid_from,
                until=old.invalid_at or "",
                change=change,
            )
        )
    out.sort(key=lambda e: e.until, reverse=True)
    return out


def _belief(record: MemoryRecord, earlier: list[EarlierValue]) -> Belief:
    return Belief(
        id=record.id,
        text=record.text,
        kind=record.kind,
        constraint=record.constraint,
        confirmed=record.confirmed,
        since=record.valid_from,
        created_at=record.created_at,
        updated_at=record.updated_at,
        version=record.version,
        source=record.source,
        also=[a for a in record.aspects if a != record.aspect],
        earlier=earlier,
    )


__all__ = ["AspectView", "Belief", "EarlierValue", "UserModelView", "user_model_view"]
