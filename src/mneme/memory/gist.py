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
    """Whether two memories are about the same thing (their gists are alike)."""
    ga, gb = gist(a), gist(b)
    if not ga or not gb:
        return False
    return ga == gb or difflib.SequenceMatcher(None, ga, gb).ratio() >= threshold


def one_contains_other(a: str, b: str) -> bool:
    """Whether one memory's gist contains the other's ("靠过道" in "靠过道位置")."""
    ga, gb = gist(a), gist(b)
    return bool(ga and gb) and (ga in gb or gb in ga)
