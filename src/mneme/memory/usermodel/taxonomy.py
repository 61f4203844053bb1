"""The user model's taxonomy: aspects of a person and the kinds of request that touch them (data/user_model.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from mneme.classifier import data_path
from mneme.memory.record import Kind

TAXONOMY_FILE = "user_model.json"


@dataclass(frozen=True)
class Aspect:
    """What a statement about a person can be about (diet, employer, seat...)."""

    key: str
    zh: str
    """Its name in Chinese (shown to operators)."""
    en: str
    """Its name in English."""
    single: bool
    """A person has one current value: a new statement replaces the old one."""
    constraint: bool
    """A hard limit (diet, allergy, health, fears, boundaries) that outranks likes."""
    kind: Kind
    """How its memories are stored (`profile`: a keyed field; `semantic`: a fact)."""
    area: str
    """The part of life it belongs to (`work`, `places`, `food`...): a revision may replace a
    memory of a neighbouring aspect of the same area."""
    sensitivity: int
    """0 ordinary, 1 personal, 2 sensitive (health, finance, identity)."""
    about: str
    """What it covers, in words (also shown to an LLM extractor)."""
    subject: str
    """The profile field name of a single-valued aspect (its key unless a legacy name)."""
    everywhere: bool = False
    """Every request touches it a little (how to answer: format, tone); relevance decides."""
    ruled: bool = False
    """Only a rule's reading sets its field (a self-introduction for a name). A classifier's reading
    of a statement under it is kept unkeyed and replaces nothing the same message's rules gave; it,
    or a statement of a neighbouring aspect, replaces the field only when read as a change that
    holds a name (`names.holds_a_name`: "just Bob is fine from now on"; not "We call him Quill",
    a pet's, nor "Anyway — back to the formula.")."""
    setting: bool = False
    """How the person wants the assistant to act for them (a seat, a courier, an invoice title, a
    way to pay): a request whose domain reaches it first is shown it (`recall.binding`)."""
    instruction: bool = False
    """What the person asks of the assistant (how to reply, what not to bring up), not something
    about their life: only a statement read as of its own aspect replaces it ("网易那边我已经辞了"
    revises no "以后回复我简短点")."""


@dataclass(frozen=True)
class Domain:
    """A kind of request (dining, flights, gifts...) and the aspects it touches, most important first."""

    key: str
    zh: str
    en: str
    aspects: tuple[str, ...]


@dataclass(frozen=True)
class Taxonomy:
    """Aspects and domains, as shipped."""

    aspects: dict[str, Aspect]
    domains: dict[str, Domain]

    def aspect(self, key: str | None) -> Aspect | None:
        """The aspect of a key (None for an unknown or missing key)."""
        return self.aspects.get(key) if key else None

    def instruction(self, key: str | None) -> bool:
        """Whether an aspect is what the person asks of the assistant (`Aspect.instruction`)."""
        found = self.aspect(key)
        return found is not None and found.instruction

    def same_area(self, a: str | None, b: str | None) -> bool:
        """Whether two aspects belong to the same part of life."""
        first, second = self.aspect(a), self.aspect(b)
        return first is not None and second is not None and first.area == second.area

    def by_subject(self, subject: str | None) -> Aspect | None:
        """The aspect a profile field name belongs to (`location` -> residence)."""
        if not subject:
            return None
        return next((a for a in self.aspects.values() if a.subject == subject), None)


OTHERS_ASPECT = "family"
"""The aspect of what is said about the people in someone's life ("我哥住在成都"): a fact of
theirs, never one of the person's own fields (`Candidate.others`)."""
PET_ASPECT = "pet"
"""The aspect of what is said about the speaker's pets ("我家狗对鸡肉过敏"): kept as theirs too."""
LEGACY_SUBJECTS = {"residence": "location"}
"""Profile field names the write path used before the user model, kept so old fields stay current."""


def _aspect(key: str, raw: dict[str, Any]) -> Aspect:
    return Aspect(
        key=key,
        zh=str(raw["zh"]),
        en=str(raw["en"]),
        single=bool(raw["single"]),
        constraint=bool(raw["constraint"]),
        kind="profile" if raw.get("kind") == "profile" else "semantic",
        area=str(raw.get("area") or key),
        sensitivity=int(raw.get("sensitivity", 0)),
        about=str(raw.get("about", "")),
        subject=LEGACY_SUBJECTS.get(key, key),
        everywhere=bool(raw.get("everywhere", False)),
        ruled=bool(raw.get("ruled", False)),
        instruction=bool(raw.get("instruction", False)),
        setting=bool(raw.get("setting", False)),
    )


@cache
def taxonomy() -> Taxonomy:
    """The shipped taxonomy (read once)."""
    raw = json.loads(data_path(TAXONOMY_FILE).read_text("utf-8"))
    aspects = {k: _aspect(k, v) for k, v in raw["aspects"].items()}
    domains = {
        k: Domain(key=k, zh=str(v["zh"]), en=str(v["en"]), aspects=tuple(v["aspects"]))
        for k, v in raw["domains"].items()
    }
    unknown = {a for d in domains.values() for a in d.aspects} - set(aspects)
    if unknown:
        raise ValueError(f"mneme: {TAXONOMY_FILE} names unknown aspects {sorted(unknown)}")
    return Taxonomy(aspects=aspects, domains=domains)
