"""The speaker's name said in the ways people sign and greet, read with the `given_name` head."""

from __future__ import annotations

import re

from mneme.memory.extract import (
    NAME_EN,
    NAME_ZH,
    Candidate,
    common_surname,
    name_candidate,
    not_a_name,
    zh_name,
)
from mneme.memory.usermodel.heads import given_name

GIVEN_NAME = 0.5
"""A word the `given_name` head reads at least this likely is taken for a name in a name's place
("Marcus here", "I'm Gabriel, trying to learn Python"): the head's own decision boundary ("Canadian"
0.13, "Catholic" 0.21, "Monday" 0.06; "Oluwaseun" 0.89); the helpers' held-out name trials
measure it (docs/benchmarks.md)."""

_W = r"[^\W\d_][\w'’-]*"
"""One word of a name: letters, an apostrophe or a hyphen inside (D'Angelo, Mei-Ling, Schäfer)."""
_UP = r"(?=[A-ZÀ-ÖØ-Þ])"
"""A last name begins with a capital ("Daniel Okafor"; "it's kinda condescending" holds no name)."""
_END = r"(?=\s*(?:[,.!;?)\n]|$)|\s+(?:and|but|from|here|again|now|btw|lol|by the way|not)\b)"
"""What may follow a name in its place: a stop, or a word that ends the phrase ("I'm Oluwaseun but…")."""
_TITLE = r"(?:(?:dr|mr|mrs|ms|miss|prof)\.?\s+)?"
"""A title before a name, left out of it ("This is Dr. Helen Park")."""
_CAST = re.compile(
    r"\byou(?:'re|’re| are)\s+(?:[A-Z]|the\s+[A-Z])|(?i:\blet's\s+(?:play|pretend|role-?play))"
)
"""A sentence that casts the speaker in a part: the name after "I'm" is the part's."""
_IT_END = r"(?=,?\s+(?:again|here|now|not|no|with|btw|lol|from|if)\b)"
"""What follows a name after "it's": a correction or a greeting goes on ("It's Sean, not Shawn",
"it's jen again"); "It's Shia Labeouf!" answers a question."""
_GREETING = r"(?i:(?:hi|hey|hello|yo|good (?:morning|afternoon|evening))[,!.]*\s+)"
_OPENING = r"(?:^|(?<=[.!?]\s)|(?<=[.!?]\s\s))"
"""The start of a message or of a sentence in it."""
_EN_SLOTS = (
    # "I'm Gabriel, …", "hey im tom.", "I'm Anna-Lena Schäfer, a nurse", "I'm Dr. Anita Rao"
    re.compile(rf"(?i:\b(?:i'm|i’m|im|i am)\s+(?:now\s+|just\s+)?{_TITLE})({_W})(?:\s+{_UP}({_W}))?{_END}"),
    # "it's jen again", "It's Kathryn, with a y", "It's Jordan Reyes now, not Jessica"
    re.compile(
        rf"(?:{_OPENING}|(?<=[,;]\s)|{_GREETING})(?i:it's|it’s|its|it is)\s+({_W})(?:\s+{_UP}({_W}))?{_IT_END}"
    ),
    # "This is Dr. Helen Park from pediatrics" (opening the message: later, "this is Max!" shows a
    # pet; "this is Luna, my cat" names another)
    re.compile(
        rf"^{_GREETING}?(?i:this is)\s+(?i:{_TITLE})({_W})(?:\s+{_UP}({_W}))?{_END}(?!,?\s*\(?(?i:my|our|the)\b)"
    ),
    # "Marcus here.", "Good morning! Margaret here", "Fatima speaking."
    re.compile(rf"{_OPENING}{_GREETING}?({_W})(?:\s+{_UP}({_W}))?\s+(?i:here|speaking)\b"),
    # "my names mikey btw"
    re.compile(rf"(?i:\bmy\s+names?\s+(?:is\s+)?)({_W})(?:\s+{_UP}({_W}))?{_END}"),
)
"""Where an English speaker puts their own name, outside a self-introduction the rules read."""
_EN_SIGN_OFF = re.compile(
    rf"(?:^\s*(?i:cheers|thanks|thank you|thx|best|regards|best regards|love|xo|sincerely|ta)[,!]?|(?:^|\s)[—–~-]+)"
    rf"\s*({_W})(?:\s+{_UP}({_W}))?\s*[.!]?\s*$"
)
"""A message's last line signing it, or its end: "— Priya", "cheers, wes", "ty!! -bea"."""
_ZH_SLOTS = (
    # 鄙人孙浩然, 本人姓名张三: a name in the speaker's own words for themselves (a surname first)
    (re.compile(r"(?:鄙人|本人姓名|俺叫|俺是)([\u4e00-\u9fff]{2,4})(?=[，,。！!？?～~\s]|$)"), True),
    # 本宝宝叫糖糖, 本姑娘叫…: what the speaker calls themselves, whatever it is
    (
        re.compile(
            r"(?:本宝宝|本姑娘|本小姐|本少爷|本大爷|本喵)(?:叫|名叫)([\u4e00-\u9fff]{2,4})(?=[，,。！!？?～~\s]|$)"
        ),
        False,
    ),
    # 现在证件上是陈林美玲, 户口本上是王嘉树: a changed name as the papers say it
    (
        re.compile(
            r"(?:证件|身份证|户口本|户口|护照)上(?:现在)?(?:是|叫|写的是|改成了?)([\u4e00-\u9fff]{2,4})(?=[，,。！!？?\s]|$)"
        ),
        True,
    ),
    # 我前阵子改名了，以前叫李春花，现在叫李沐阳: the name after a change of name
    (re.compile(r"改名[^。！？!?]*?现在(?:叫|是)([\u4e00-\u9fff]{2,4})(?=[，,。！!？?\s]|$)"), True),
    # 我是老周，今年刚退休: 老 and a surname, what older people go by
    (
        re.compile(r"(?:^|(?<=[，,。！!\s]))我(?:是|就是)?(老[\u4e00-\u9fff])(?=[，,。！!？?～~\s啊呀]|$)"),
        True,
    ),
    # 打错了，是张玮杰: a typo of the name corrected
    (
        re.compile(
            r"(?:打错了?|写错了?|错了)[，,。!！\s]*(?:是|应该是|其实是)([\u4e00-\u9fff]{2,4})(?=[，,。！!？?\s]|$)"
        ),
        True,
    ),
)
"""Where a Chinese speaker names themselves outside 我叫 / 我是 (`extract` reads those)."""
_ZH_SIGN_OFF = re.compile(
    r"^\s*(?:(?:——|—|--|-|～|~)\s*([\u4e00-\u9fff]{2,3})|【([\u4e00-\u9fff]{2,3})】)\s*$"
)
"""A message's last line signing it: ——佳琪, 【林晓】."""


_STOP = re.compile(r"[。！？!?\n]+|\.(?=\s)")
"""Where a sentence ends."""


def _zh_person(name: str) -> bool:
    """A surname and a given name, or 老 and a surname; not a day (打错了，是周三)."""
    if name.startswith("老"):
        return len(name) == 2 and common_surname(name[1])
    return zh_name(name[:3]) and not re.match(r"周[一二三四五六日天末]|星期", name)


def _sentence(text: str, m: re.Match[str]) -> str:
    """The sentence a name was found in: what the guard reads it with.

    "现在证件上是陈林美玲" alone reads as a claim about someone, in its sentence as the speaker's news.
    """
    stops = [b.end() for b in _STOP.finditer(text)]
    start = max((b for b in stops if b <= m.start()), default=0)
    end = min((b for b in stops if b > m.end()), default=len(text))
    return text[start:end].strip()


def _en_name(first: str, last: str | None, *, lower_ok: bool) -> str | None:
    """The name a slot holds, if its first word reads as a given name."""
    if not_a_name(first) or (first.islower() and not lower_ok):
        return None
    if given_name([first])[0] < GIVEN_NAME:
        return None
    if last and last[:1].isupper() and not not_a_name(last):
        return f"{first} {last}"
    return first


def spoken_names(text: str) -> list[Candidate]:
    """The speaker's name where the self-introduction rules (`extract`) found none.

    English: "Marcus here", "it's jen again", "I'm Oluwaseun but Seun is fine", "— Priya"; a word
    in a name's place is a name when the `given_name` head reads it as one ("I'm Canadian" is
    not). A word typed in lower case counts only in a message typed all in lower case ("hey im
    tom"), or where only a name can stand (a greeting's "X here", a sign-off). Chinese: 鄙人孙浩然,
    现在证件上是陈林美玲, 打错了，是张玮杰, ——佳琪 (a surname and a given name, or a sign-off).

    Args:
        text: One user message.

    Returns:
        At most one name candidate.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    lowered = not any(ch.isupper() for ch in text)
    for pattern in _EN_SLOTS:
        for m in pattern.finditer(text):
            if pattern is _EN_SLOTS[0] and _CAST.search(_sentence(text, m)):
                continue  # "you're Sherlock Holmes and I'm Watson": a part in a game
            strong = pattern is not _EN_SLOTS[0]  # only a name stands there
            name = _en_name(m.group(1), m.group(2), lower_ok=lowered or strong)
            if name:
                return [name_candidate(f"{NAME_EN}{name}", name, _sentence(text, m), called=False)]
    for pattern, checked in _ZH_SLOTS:
        if (said := pattern.search(text)) and (not checked or _zh_person(said.group(1))):
            name = said.group(1)
            return [name_candidate(f"{NAME_ZH}{name}", name, _sentence(text, said), called=False)]
    last = lines[-1]
    if len(lines) > 1 and (zh := _ZH_SIGN_OFF.match(last)):
        signed = zh.group(1) or zh.group(2)
        return [name_candidate(f"{NAME_ZH}{signed}", signed, last.strip(), called=False)]
    en = _EN_SIGN_OFF.search(last)
    # "ty!! -bea" may end a one-line message; "thanks, Tom" alone thanks Tom
    signs = en is not None and (len(lines) > 1 or not en.group(0).lstrip()[:1].isalpha())
    if en is not None and signs and (name := _en_name(en.group(1), en.group(2), lower_ok=True)):
        return [name_candidate(f"{NAME_EN}{name}", name, last.strip(), called=False)]
    return []


def holds_a_name(text: str) -> bool:
    """Whether a statement holds a capitalised word the `given_name` head reads as a name.

    What lets a statement the classifiers put under the name replace the name the user gave:
    "Actually, just Bob is fine from now on" does, "以后别再用旧名字叫我了" (no name in it) does not.
    """
    words = [w for w in re.findall(_W, text) if w[:1].isupper() and not not_a_name(w)]
    return any(p >= GIVEN_NAME for p in given_name(words))
