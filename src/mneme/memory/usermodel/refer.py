"""Who a pronoun at the head of a sentence stands for: the family member the speaker just named."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from mneme.classifier import data_path
from mneme.memory.extract import clauses

Gender = Literal["m", "f", "?", "pl"]

KIN_FILE = "kin.json"
"""Kinship words by sex or number, zh and en (a closed class, like the pronouns)."""


def _kin(lang: str) -> dict[str, Gender]:
    data = json.loads(data_path(KIN_FILE).read_text(encoding="utf-8"))[lang]
    return {word: cast(Gender, gender) for gender, words in data.items() for word in words}


KIN_ZH = _kin("zh")
KIN_EN = _kin("en")
_SAME = {
    word: group[0]
    for group in json.loads(data_path(KIN_FILE).read_text(encoding="utf-8"))["same"]
    for word in group
}

_ZH_LONGEST_FIRST = sorted(KIN_ZH, key=len, reverse=True)
_ZH_KIN = "|".join(_ZH_LONGEST_FIRST)
_EN_KIN = "|".join(re.escape(k) for k in sorted(KIN_EN, key=len, reverse=True))
_ZH_ORDER = "(?:[大小二三四五]|最小的|最大的)?"
"""大儿子, 小女儿, 二姐: which of them (kept with the word)."""
_EN_ORDER = r"(?:(?:youngest|oldest|eldest|younger|older|elder|little|big|baby|twin|step|late)\s+)?"
_ZH_NAMED = re.compile(
    rf"(?:^|我(?:的|家)?|咱(?:家)?|(?:我|咱)(?:家)?有(?:一)?个)({_ZH_ORDER}(?:{_ZH_KIN}))(?!们)"
)
_EN_NAMED = re.compile(rf"\b(?:my|our)\s+({_EN_ORDER}(?:{_EN_KIN}))\b", re.I)
_ZH_PRONOUN = re.compile(r"^(他们|她们|他|她)(的)?")
_EN_PRONOUN = re.compile(r"^(he|she|they|his|her|their)(?:(?='s\b|'re\b|'ll\b|'d\b|'ve\b)|\b)", re.I)
_PRONOUN_GENDER: dict[str, Gender] = {
    "他": "m",
    "她": "f",
    "他们": "pl",
    "她们": "pl",
    "he": "m",
    "his": "m",
    "she": "f",
    "her": "f",
    "they": "pl",
    "their": "pl",
}


@dataclass(frozen=True)
class Named:
    """A family member named in a sentence: how the speaker named them, and their sex or number."""

    phrase: str
    gender: Gender


def named_in(sentence: str) -> Named | None:
    """The family member a sentence names last ("我老公在阿里工作" → 我老公; "my sister is…" → my sister)."""
    found = [*_ZH_NAMED.finditer(sentence), *_EN_NAMED.finditer(sentence)]
    if not found:
        return None
    last = max(found, key=lambda m: m.start(1))
    said = last.group(1)
    if said.isascii():
        said = said.lower()
        return Named(f"my {said}", KIN_EN[said.split()[-1]])
    return Named(f"我{said}", KIN_ZH[_kin_word(said)])


def _kin_word(said: str) -> str:
    """The kinship word of "小女儿" (女儿)."""
    return next(word for word in _ZH_LONGEST_FIRST if said.endswith(word))


_ZH_LEADS = re.compile(rf"^(?:我(?:的|家)?|咱(?:家)?)?{_ZH_ORDER}({_ZH_KIN})(?!们)")
_EN_LEADS = re.compile(rf"^(?:my|our)\s+{_EN_ORDER}({_EN_KIN})\b(?!\s+and\s+I\b)", re.I)
_POSSESSED = re.compile(r"\s*(?:'s?|’s?|的)\s*\S")


def leads_with_kin(sentence: str) -> bool:
    """Whether a sentence's subject is a family member it names ("我老公…", "老婆…", "My sister…").

    "My sister and I…" is the speaker's too: no.
    """
    said = sentence.strip()
    return bool(
        _ZH_LEADS.match(said) and not re.match(rf"^(?:我(?:的|家)?)?(?:{_ZH_KIN})(?:和|跟)我", said)
    ) or bool(_EN_LEADS.match(said))


_ZH_MENTION = re.compile(rf"(?:我(?:的|家)?|咱(?:家)?|给|带|陪|跟|和|帮|替|^)?({_ZH_KIN})(?!们)")
_EN_MENTION = re.compile(rf"\b(?:my|our)\s+(?:[a-z]+\s+)?({_EN_KIN})s?\b", re.I)


def kin_in(text: str) -> set[str]:
    """The family relations a text names, one word for each ("我妈", "my mom" and "老妈" are one).

    A one-character Chinese word counts only after 我, a verb of company (带/陪/给...) or at the
    start ("妈" in "妈的" is no mother).
    """
    words = [m.group(1).lower() for m in _EN_MENTION.finditer(text)]
    words += [
        m.group(1) for m in _ZH_MENTION.finditer(text) if len(m.group(1)) > 1 or m.group(0) != m.group(1)
    ]
    return {_SAME.get(w, w) for w in words}


def kin_subject(sentence: str) -> bool:
    """Whether a sentence's subject is a family member it names, not someone of theirs.

    "我哥之前一直在北京工作" is; "My husband's coworker Rick came over" is not.
    """
    said = sentence.strip()
    lead = _ZH_LEADS.match(said) or _EN_LEADS.match(said)
    return leads_with_kin(said) and lead is not None and not _POSSESSED.match(said, lead.end(1))


def _agrees(pronoun: Gender, person: Gender) -> bool:
    if pronoun == "pl" or person == "pl":
        return pronoun == person
    return person == "?" or pronoun == person


def resolve(sentence: str, earlier: Sequence[str], outsider: Callable[[str], bool]) -> str | None:
    """The sentence with its leading pronoun replaced by the family member it stands for.

    "他上个月跳槽去腾讯了" after "我老公在阿里工作" is "我老公上个月跳槽去腾讯了"; "Her school starts
    at 8" after "My daughter is in first grade" is "My daughter's school starts at 8". The person
    is the last family member named in the sentence just before, when their sex or number fits
    the pronoun and that sentence is not about someone outside the family ("我同事…", "My
    husband's coworker Rick came over": the pronoun most likely means them). Only that sentence:
    looking further back, "我喜欢周杰伦。他的歌都很好听" after "我老公在阿里工作" made the singer's
    songs the husband's (nothing tells a singer or a new colleague from no one); on the tuning
    half of benchmarks/data/pronoun_reads.json the sentence just before resolves 40 of the 42
    family cases, four sentences back 41.

    Args:
        sentence: One sentence.
        earlier: The sentences said before it, oldest first.
        outsider: Whether a sentence is about someone outside the family.

    Returns:
        The sentence as a statement about the named person, or None when it starts with no
        pronoun or its person is not clear.
    """
    said = sentence.strip()
    zh = _ZH_PRONOUN.match(said)
    en = None if zh else _EN_PRONOUN.match(said)
    if zh is None and en is None:
        return None
    lead = zh or en
    assert lead is not None
    word = lead.group(1)
    gender = _PRONOUN_GENDER[word.lower()]
    person = named_in(earlier[-1]) if earlier else None
    # (the `whose` head is read only once a family member is named: "我老公的同事老刘来家里吃饭")
    if person is None or not _agrees(gender, person.gender) or outsider(earlier[-1]):
        return None
    if zh is not None:
        return person.phrase + said[zh.end(1) :]
    rest = said[lead.end(1) :]
    if rest.startswith("'re"):
        rest = " are" + rest[3:]
    phrase = person.phrase[0].upper() + person.phrase[1:]
    if word.lower() in ("his", "her", "their"):
        phrase += "'" if phrase.endswith("s") else "'s"
    return phrase + rest


def resolved(text: str, before: Sequence[str], outsider: Callable[[str], bool]) -> str:
    """A message with each sentence that starts with a pronoun for a family member resolved.

    Args:
        text: The message.
        before: The speaker's messages just before it, oldest first (only read).
        outsider: Whether a sentence is about someone outside the family.

    Returns:
        The message, the same but for those sentences.
    """
    earlier = [c for t in before for c in clauses(t)]
    out, cursor = text, 0
    for sentence in clauses(text):
        at = out.find(sentence, cursor)
        new = resolve(sentence, earlier, outsider)
        if at >= 0 and new is not None:
            out = out[:at] + new + out[at + len(sentence) :]
            cursor = at + len(new)
        elif at >= 0:
            cursor = at + len(sentence)
        earlier.append(new or sentence)
    return out
