"""What a preference-like memory is about, and whether it is for or against it.

"喜欢靠窗的座位" and "喜欢靠窗座位" have one gist (`靠窗座位`, for); "Likes spicy food" and
"Does not eat spicy food" have the same object with opposite polarity. Reconciliation uses
this to call two texts duplicates by meaning, or one a contradiction of the other.
"""

from __future__ import annotations

import difflib
import re

from mneme.memory.record import normalize_text

_NEGATION = re.compile(
    r"^(?:用户|the user|user)?\s*(?:不再|不太|从不|从来不|不|没有|讨厌|受不了|反感|does not|doesn't|do not|don't|no longer|never|"
    r"not|dislikes?|hates?|can't stand|cannot stand|is not into)(?![a-z])",
    re.I,
)
_LEAD = re.compile(
    r"^(?:用户|the user\b|user\b|我|i\b)?\s*(?:(?:现在|平时|一般|也|还|真的|really|also|now|still|actually|usually)\s*)*"
    r"(?:更|最|很|特别|非常|比较|much more|more)?\s*"
    r"(?:喜欢|偏好|偏爱|热爱|爱|likes?|loves?|enjoys?|prefers?|adores?|is into|is a fan of|吃|喝|用|eats?|drinks?|uses?|"
    r"like|love|enjoy|prefer|eat|drink|use|is|是)?(?![a-z])\s*",
    re.I,
)
_FILLER = re.compile(r"\b(?:a|an|the|their|my)\b|的|[\s,，.。!！?？;；:：'\"“”]", re.I)


def polarity(text: str) -> bool:
    """True for a memory for something (likes, is), False for one against it (dislikes, no longer)."""
    return not _NEGATION.search(normalize_text(text))


def gist(text: str) -> str:
    """The object of a memory, without its verb, negation, articles or punctuation."""
    t = normalize_text(text)
    t = _NEGATION.sub("", t).strip()
    t = _LEAD.sub("", t, count=1).strip()
    t = re.sub(r"^(?:eats?|drinks?|uses?|likes?|吃|喝|用)\s*", "", t)
    return _FILLER.sub("", t)


def same_object(a: str, b: str, threshold: float = 0.8) -> bool:
    """Whether two memories are about the same thing (their gists are alike; long ones: equal)."""
    ga, gb = gist(a), gist(b)
    if not ga or not gb:
        return False
    if max(len(ga), len(gb)) > COMPARE_CHARS:
        return ga == gb
    return ga == gb or difflib.SequenceMatcher(None, ga, gb).ratio() >= threshold


FILLER: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "their",
        "user",
        "users",
        "likes",
        "like",
        "loves",
        "love",
        "prefers",
        "prefer",
        "enjoys",
        "enjoy",
        "really",
        "very",
        "so",
        "much",
        "also",
        "too",
        "do",
        "does",
        "is",
        "am",
        "are",
        "lot",
        "lots",
        "of",
        "to",
        "just",
        "always",
        "still",
        "now",
        "actually",
        "definitely",
        "quite",
        "pretty",
        "one",
        "ones",
        "things",
        "stuff",
        "kind",
        "sort",
    ]
) | frozenset(
    "的了很也都更还是就我真特别非常比较最挺蛮超喜欢爱偏好呢吧啊呀哦一直平时般现在其实位置座东西方面用户"
)
"""Words (English) and characters (Chinese) whose presence does not change what a preference says."""
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


COMPARE_CHARS = 2_000
"""Texts longer than this are compared only for equality (a sequence diff of two long texts
costs time that grows with the product of their lengths: minutes for two 100,000-character ones)."""


def filler_only_difference(a: str, b: str) -> bool:
    """Whether two memories differ only in filler ("喜欢靠窗的座位" / "很喜欢靠窗座位").

    Any other word or character that differs (a name, a letter, a number, a place) makes
    them different facts, however alike they look. Texts over `COMPARE_CHARS` differ
    unless they are equal.
    """
    if max(len(a), len(b)) > COMPARE_CHARS:
        return normalize_text(a) == normalize_text(b)
    ta, tb = _TOKEN.findall(normalize_text(a)), _TOKEN.findall(normalize_text(b))
    if not ta or not tb:
        return False
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal" and not all(t in FILLER for t in ta[i1:i2] + tb[j1:j2]):
            return False
    return any(t not in FILLER for t in ta)
