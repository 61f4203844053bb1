"""The offline, rule-based memory extractor for Chinese and English."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from mneme.classifier import data_path
from mneme.memory.record import Kind
from mneme.memory.redact import values_in
from mneme.memory.terms import dictionary_tag, terms
from mneme.memory.when import EN_TIME, ZH_TIME, resolve

Action = Literal["add", "correct", "forget"]

MAX_EXTRACT_CHARS = 4000
"""Only the first this-many characters of a message are scanned (a pasted document is not a
statement about the user)."""


@dataclass
class Candidate:
    """A memory proposed by an extractor, before redaction and reconciliation."""

    kind: Kind
    text: str
    subject: str | None = None
    value: str | None = None
    importance: float = 0.5
    action: Action = "add"
    sensitivity: int = 0
    topic: str | None = None
    """For corrections and forget requests: what the statement is about (used to find the
    memory to supersede or delete)."""
    evidence: str = ""
    """The words the candidate was read from."""
    tags: list[str] = field(default_factory=list)
    target: str | None = None
    """The id of the memory this candidate replaces or deletes, when the extractor knows it
    (an LLM naming an existing memory); None lets reconciliation find it."""
    confirmed: bool = True
    """The user stated it explicitly (False: a model inferred it)."""
    ttl_days: float | None = None
    """Time to live of this memory in days; None: the default of its kind."""
    aspect: str | None = None
    """What it says about the person (a user-model aspect: `diet`, `employer`...), if anything."""
    constraint: bool = False
    """A hard limit that outranks likes (an allergy, a diet, a fear, a boundary)."""
    revises: bool = False
    """It revises an earlier statement ("moved on to tea"): the closest current memory of the
    same part of the person's life is superseded rather than kept beside it."""
    change: float = 0.0
    """How likely it is a change of mind, as the offline reader's `change` head reads it (0..1;
    0 where nothing measured it): with the `supersedes` head it decides which earlier memory,
    if any, it replaces."""
    message: int | None = None
    """Which of a job's messages it was read from (None: not known, as from an LLM)."""
    certainty: float = 1.0
    """How sure the reader is of `aspect` (a rule's field: 1.0; a classifier: its probability)."""
    near: tuple[str, ...] = ()
    """Other aspects the statement may be about (a revision may replace a memory under them)."""
    others: bool = False
    """Said of someone else than the speaker ("我哥住在成都"): it replaces none of the speaker's own."""
    tentative: bool = False
    """Kept only if it revises a memory the user already has: a short update such as "Actually,
    just Bob is fine" says little alone, but a lot after "Call me Robert". A tentative forget
    request deletes only a memory that clearly matches its topic."""
    domains: tuple[str, ...] = ()
    """The request domains it matters for, as an LLM extractor named them (the writer adds the
    ones the domain classifier reads)."""


COURIERS: dict[str, tuple[str, str]] = {
    "顺丰": ("SF_EXPRESS", "顺丰"),
    "sf express": ("SF_EXPRESS", "SF Express"),
    "sf": ("SF_EXPRESS", "SF Express"),
    "京东": ("JD_LOGISTICS", "京东物流"),
    "jd": ("JD_LOGISTICS", "JD Logistics"),
    "圆通": ("YTO", "圆通"),
    "中通": ("ZTO", "中通"),
    "申通": ("STO", "申通"),
    "韵达": ("YUNDA", "韵达"),
    "极兔": ("JTEXPRESS", "极兔"),
    "德邦": ("DEPPON", "德邦"),
    "邮政": ("CHINA_POST", "邮政"),
    "ems": ("EMS", "EMS"),
    "ups": ("UPS", "UPS"),
    "fedex": ("FEDEX", "FedEx"),
    "dhl": ("DHL", "DHL"),
    "usps": ("USPS", "USPS"),
}
"""Courier names as users say them, mapped to (structured value, display name)."""

_CJK = re.compile(r"[\u4e00-\u9fff]")
_CLAUSE_SPLIT = re.compile(
    r"(?<=[。！？!?；;\n])|(?<!\b(?:St|Dr|Mr|Ms|Mt|Jr|Sr|vs|[Nn]o)\.)(?<!\bMrs\.)(?<!\bProf\.)(?<=[.])\s+(?![\d０-９])"
)
"""Sentence ends; a full stop after a title or an abbreviation is none ("a nurse at St. Mary's",
"passport no. e71036284"), nor one before a number ("passport no. 533380006": apart, the number
lost what named it and was stored in clear)."""
_ZH_PREFIX = re.compile(
    r"^(?:你好|您好|嗨|哈喽|嗯+|哦+|对了|另外|还有|然后|麻烦你?|请|(?:hi|hello|hey|oh|well|so|yeah|wow|haha)\b)[，,！!\s]*",
    re.I,
)
_EN_COURIERS = "|".join(re.escape(k) for k in COURIERS if not _CJK.search(k))
_ZH_COURIERS = "|".join(re.escape(k) for k in COURIERS if _CJK.search(k) or k == "ems")

_RELATIVE_DAYS = {"今天": 0, "昨天": 1, "前天": 2, "today": 0, "yesterday": 1}

_ZH_SELF = r"(?:我|^|(?<=[，,、]))"
"""Where a Chinese statement about the speaker starts: after 我, or with the subject left out
(at the start of a clause or after a comma, as Chinese often does)."""
_ZH_OTHERS = re.compile(
    r"^(?:我(?:的)?(?:朋友|妈妈?|爸爸?|母亲|父亲|老婆|老公|丈夫|妻子|女儿|儿子|孩子|同事|老板|领导|哥哥?|姐姐?|弟弟?|妹妹?|家人|"
    r"男朋友|女朋友|室友|邻居|同学|爷爷|奶奶)|他|她|它|你|您|大家|别人|有人|我们)"
)
"""A Chinese clause that is about someone else, not the speaker."""
_ZH_QUESTION = re.compile(
    r"[吗呢嘛？?]|什么|怎么|为什么|几[点个号天]|多少|哪[里儿个些]|是不是|能不能|可不可以|要不要"
)
_HYPOTHETICAL = re.compile(
    r"如果|要是|假如|假设|万一|的话|\bif\b|\bwould\b|\bcould\b|\bmight\b|\bmaybe\b|\bwonder", re.I
)
_ZH_ADV = r"(?:现在|平时|一般|一直|向来|从小|比较|很|特别|非常|最|更|还是|也|都|真的|超|蛮|挺|还|其实|本来|就|相当|尤其|确实)"
_EN_ADV = (
    r"(?:really|also|now|still|usually|always|generally|just|actually|definitely|totally|do|absolutely|"
    r"mostly|often|truly|especially|so|kind of|sort of|honestly|personally|certainly)"
)
_OBJ_END = (
    r"(?=\s+(?:and|but|because|so|since|though|although|which)\s+"
    r"(?:I|i|I'm|it|my\s+(?:[\w'-]+\s+){0,3}(?:is|are|was|were))\b|[,.;!?]|$)"
)


MENTION = re.compile(r"(?<![\w.@])[@＠][\w.\-]+")
"""A mention of someone in a chat ("@bot", "@小助手"), not part of an e-mail address: it says
nothing about the speaker."""


def is_chinese(text: str) -> bool:
    """Whether a text is mainly Chinese."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk * 3 >= len(re.sub(r"\s", "", text))


def clauses(text: str) -> list[str]:
    """Split a message into clauses small enough for patterns."""
    out = []
    for part in _CLAUSE_SPLIT.split(text[:MAX_EXTRACT_CHARS]):
        part = part.strip()
        while True:
            stripped = _ZH_PREFIX.sub("", part)
            if stripped == part:
                break
            part = stripped
        if part:
            out.append(part)
    return out


_AND_MY = re.compile(r"\s+(?:and|but|so)\s+(?=my\s+(?:[\w'-]+\s+){0,3}(?:is|are|was|were)\b)")
"""Where "I live in Seattle and my favourite colour is green" starts its second statement."""


_WHO_AND = re.compile(r"\s*(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+)?\s*$", re.I)
"""A part that only names someone of the speaker's, before "and I" (a subject of two)."""


def segments(clause: str) -> list[str]:
    """The comma-separated parts of a clause (and English "... and I ..." / "I ... and my X is ..." parts).

    A part about the speaker splits before "and my X is" ("My wife and my son are vegetarian" is one
    statement about two people); "My wife and I live in Denver" is one subject.
    """
    split = re.split(r"([，,；;、]|\s+(?:and|but|so)\s+(?=I\b))", clause)
    parts = [split[0]]
    for sep, part in zip(split[1::2], split[2::2], strict=True):
        if sep.strip() == "and" and _WHO_AND.match(parts[-1]):  # "My wife and I live…": one subject
            parts[-1] += sep + part
        else:
            parts.append(part)
    parts = [q for p in parts if p for q in (_AND_MY.split(p) if re.match(r"\s*I\b", p) else [p])]
    return [p.strip() for p in parts if p and p.strip()]


def _clean(value: str) -> str:
    value = value.strip(" \t,，。.!！?？;；:：'\"“”‘’")
    return re.sub(r"(?:了|吧|啊|呀|呢|哦|啦|哈|的)+$", "", value).strip() or value


_CHAT_TAIL = re.compile(r"(?:\s+(?:lol+|lmao+|rofl|ha(?:ha)+h?|he(?:he)+|xd|tbh|ngl|imo|fr))+$", re.I)
"""Laughter and chat fillers that end a line ("I hate cilantro lol"): no part of what is liked."""


def _en_clean(value: str) -> str:
    value = _CHAT_TAIL.sub("", _clean(value))
    return re.sub(
        r"\s+(?:now|these days|nowadays|anymore|any more|a lot|very much|so much|too)$", "", value, flags=re.I
    )


def _date_of(text: str, now: datetime) -> str | None:
    for word, days in _RELATIVE_DAYS.items():
        if word in text.lower():
            return (now - timedelta(days=days)).date().isoformat()
    return None


def _asked(clause: str, pos: int) -> bool:
    """Whether the comma-separated part of a clause around `pos` is a question."""
    start = max(clause.rfind(c, 0, pos) for c in "，,；;") + 1
    ends = [i for i in (clause.find(c, pos) for c in "，,；;") if i >= 0]
    part = clause[start : min(ends) if ends else len(clause)]
    return bool(_ZH_QUESTION.search(part)) if is_chinese(part) else "?" in part


def _owner_ok(clause: str) -> bool:
    """Whether a Chinese clause is (or may be) about the speaker rather than someone else."""
    return not _ZH_OTHERS.match(clause)


def _my(text: str) -> str:
    """Third-person form of an English memory about the speaker."""
    text = re.sub(r"\bmy\b", "their", text, flags=re.I)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.I)
    return re.sub(r"\bme\b", "them", text, flags=re.I)


Rule = Callable[[str, datetime], list[Candidate]]


# -- shipping, orders ----------------------------------------------------------------------


def _shipping(clause: str, now: datetime) -> list[Candidate]:
    zh = re.search(
        rf"(以后|今后|默认|一律|每次|下次|往后|都)[^，。]*?(?:发|用|走|寄|选)\s*({_ZH_COURIERS})"
        rf"|(?:快递|物流)[^，。]*?(?:改成|改为|换成|改用|用|走|发)\s*({_ZH_COURIERS})",
        clause,
        re.I,
    )
    en = re.search(
        rf"\b(always|from now on|in future|in the future|by default|next time|going forward)\b"
        rf"[^.]*?\b(?:ship|send|deliver|use)\w*\b[^.]*?\b({_EN_COURIERS})\b"
        rf"|\b(?:change|switch|set|update)\b[^.]*?\b(?:shipping|courier|carrier|delivery)\b[^.]*?\b(?:to|with)\s+({_EN_COURIERS})\b",
        clause,
        re.I,
    )
    if zh:
        code, name = COURIERS[(zh.group(2) or zh.group(3)).lower()]
        text = f"快递偏好：以后都发{name}"
        match: re.Match[str] = zh
    elif en:
        code, name = COURIERS[(en.group(2) or en.group(3)).lower()]
        text = f"Prefers shipping with {name}"
        match = en
    else:
        return []
    correct = bool(re.search(r"改成|改为|换成|改用|\bchange|\bswitch", match.group(0), re.I))
    return [
        Candidate(
            kind="profile",
            text=text,
            subject="shipping_preference",
            value=code,
            importance=0.8,
            action="correct" if correct else "add",
            evidence=match.group(0),
            tags=["preference"],
        )
    ]


def _order(clause: str, now: datetime) -> list[Candidate]:
    zh = re.search(r"订单(?:号|编号)?\s*(?:是|为|[:：#])?\s*([A-Za-z0-9-]{6,})", clause)
    en = re.search(
        r"\border\s*(?:number|no\.?|id|#)?\s*(?:is|:)?\s*#?([A-Za-z0-9-]*\d[A-Za-z0-9-]{5,})",
        clause,
        re.I,
    )
    match = zh or en
    if not match:
        return []
    order_id = match.group(1)
    when = _date_of(clause, now)
    if zh or is_chinese(clause):
        item = re.search(r"买了(?:一[个台件双部只套块]|[个台件双部只套块])?([^\s，,。订]{1,12})", clause)
        what = f"（{item.group(1)}）" if item else ""
        text = f"订单{order_id}{what}" + (f"，{when}购买" if when else "")
    else:
        item = re.search(
            r"\b(?:bought|ordered|purchased)\s+(?:a|an|the|some)?\s*([\w -]{2,30}?)(?:[,.]|\s+(?:yesterday|today|last|on|with|and)\b|$)",
            clause,
            re.I,
        )
        what = f" ({_clean(item.group(1))})" if item else ""
        text = f"Order {order_id}{what}" + (f", bought {when}" if when else "")
    return [
        Candidate(
            kind="semantic",
            text=text,
            subject=f"order:{order_id}",
            value=order_id,
            importance=0.7,
            evidence=clause,
            tags=["order"],
        )
    ]


# -- preferences and dislikes --------------------------------------------------------------

_ZH_LIKE = re.compile(
    rf"{_ZH_SELF}{_ZH_ADV}{{0,3}}(喜欢|爱吃|爱喝|爱看|爱玩|热爱|偏好|偏爱|钟爱|爱)([^，,。！!？?；;]{{1,24}})"
)
_ZH_DISLIKE = re.compile(
    rf"{_ZH_SELF}{_ZH_ADV}{{0,2}}(?:(不再|从不|从来不|不太|不)(喜欢|爱|吃|喝|能吃|能喝|用|碰)([^，,。！!？?；;]{{1,20}})"
    rf"|(讨厌|受不了|反感)([^，,。！!？?；;]{{1,20}})|对([^，,。！!？?；;]{{1,12}})过敏)"
)
_ZH_DIET = re.compile(
    rf"{_ZH_SELF}(?:是|吃)(?:一[个名])?(素食主义者|纯素食者|素食者|吃素的|素)(?=[，,。！!]|的|$)"
)
_EN_LIKE = re.compile(
    rf"\bI(?:\s+{_EN_ADV})*\s+(like|love|enjoy|prefer|adore)\s+([^,.;!?]{{2,60}}?){_OBJ_END}", re.I
)
_EN_DISLIKE = re.compile(
    rf"\bI(?:\s+{_EN_ADV})*\s+(don't|do not|never|no longer|can't|cannot|won't)\s+(like|eat|drink|enjoy|stand|use)\s+([^,.;!?]{{2,60}}?){_OBJ_END}"
    rf"|\bI(?:\s+{_EN_ADV})*\s+(hate|dislike|detest)\s+([^,.;!?]{{2,60}}?){_OBJ_END}"
    rf"|\bI(?:'m| am)\s+(?:very\s+|severely\s+|badly\s+)?allergic to\s+([^,.;!?]{{2,60}}?){_OBJ_END}"
    rf"|\bI(?:'m| am) not (?:a (?:big )?fan of|into)\s+([^,.;!?]{{2,60}}?){_OBJ_END}",
    re.I,
)
_EN_DIET = re.compile(r"\bI(?:'m| am)\s+(?:a\s+|an\s+)?(?:strict\s+)?(vegetarian|vegan|pescatarian)\b", re.I)
_CORRECTION = re.compile(
    r"不再|改成|改为|换成|现在更|现在改|其实.{0,6}更|\bactually\b|\bno longer\b|\bnow prefer|\bprefer\b.*\bnow\b|"
    r"\binstead\b|\bchanged? my mind\b|\bnot anymore\b|\bany more\b|\banymore\b",
    re.I,
)
_EN_NOT_AN_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|yours|him|her|them|how|what|when|where|why|the way|the idea|"
    r"the fact|when you|what you|that you|one|ones)\b",
    re.I,
)
_ZH_NOT_AN_OBJECT = re.compile(r"^(?:的|你|您|他|她|它|这|那|啥|什么|怎么|吗)")


def _preferences(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    correction = bool(_CORRECTION.search(clause))
    action: Action = "correct" if correction else "add"
    if _HYPOTHETICAL.search(clause):
        return out
    zh_ok = _owner_ok(clause)
    if zh_ok and (m := _ZH_DIET.search(clause)):
        out.append(
            Candidate(
                "semantic",
                "吃素" if m.group(1) in ("素", "吃素的") else f"是{m.group(1)}",
                importance=0.7,
                evidence=m.group(0),
                topic="素食",
                action=action,
                tags=["preference", "diet"],
            )
        )
    for m in _ZH_DISLIKE.finditer(clause) if zh_ok else ():
        if _asked(clause, m.start()):
            continue
        if m.group(6):
            obj = _clean(m.group(6))
            out.append(
                Candidate(
                    "semantic",
                    f"对{obj}过敏",
                    importance=0.9,
                    evidence=m.group(0),
                    topic=obj,
                    action=action,
                    sensitivity=1,  # the taxonomy's `allergy`: shown to a group's dinner request
                    tags=["health"],
                )
            )
            continue
        if m.group(4):
            phrase, obj = m.group(4), _clean(m.group(5))
        else:
            phrase, obj = m.group(1) + m.group(2), _clean(m.group(3))
        if _ZH_NOT_AN_OBJECT.match(obj):
            continue
        out.append(
            Candidate(
                "semantic",
                f"{phrase}{obj}",
                importance=0.7,
                evidence=m.group(0),
                topic=obj,
                action=action,
                tags=["preference"],
            )
        )
    if not out and zh_ok:
        for m in _ZH_LIKE.finditer(clause):
            if _asked(clause, m.start()):
                continue
            obj = _clean(m.group(2))
            if not obj or _ZH_NOT_AN_OBJECT.match(m.group(2)):
                continue
            verb = m.group(1)
            text = ("更" if "更" in m.group(0)[: m.start(1) - m.start()] else "") + verb + obj
            out.append(
                Candidate(
                    "semantic",
                    text,
                    importance=0.6,
                    evidence=m.group(0),
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    if m := _EN_DIET.search(clause):
        out.append(
            Candidate(
                "semantic",
                f"Is {m.group(1).lower()}",
                importance=0.7,
                evidence=m.group(0),
                topic=m.group(1).lower(),
                action=action,
                tags=["preference", "diet"],
            )
        )
    found_dislike = False
    for m in _EN_DISLIKE.finditer(clause):
        if _asked(clause, m.start()):
            continue
        found_dislike = True
        if m.group(6):
            obj = _en_clean(m.group(6))
            out.append(
                Candidate(
                    "semantic",
                    f"Allergic to {obj}",
                    importance=0.9,
                    evidence=m.group(0),
                    topic=obj,
                    action=action,
                    sensitivity=1,  # the taxonomy's `allergy`: shown to a group's dinner request
                    tags=["health"],
                )
            )
            continue
        if m.group(3):
            neg, verb, obj = m.group(1).lower(), m.group(2).lower(), _en_clean(m.group(3))
            if neg == "no longer":
                third = {"like": "likes", "eat": "eats", "drink": "drinks", "enjoy": "enjoys", "use": "uses"}
                text = f"No longer {third.get(verb, verb)} {obj}"
            elif verb == "stand":
                text = f"Can't stand {obj}"
            else:
                text = f"Does not {verb} {obj}"
        elif m.group(4):
            obj = _en_clean(m.group(5))
            text = f"Dislikes {obj}"
        else:
            obj = _en_clean(m.group(7))
            text = f"Is not into {obj}"
        if _EN_NOT_AN_OBJECT.match(obj):
            continue
        out.append(
            Candidate(
                "semantic",
                text,
                importance=0.7,
                evidence=m.group(0),
                topic=obj,
                action=action,
                tags=["preference"],
            )
        )
    if not found_dislike:
        for m in _EN_LIKE.finditer(clause):
            if _asked(clause, m.start()):
                continue
            obj = _en_clean(m.group(2))
            if _EN_NOT_AN_OBJECT.match(obj) or len(obj) < 2:
                continue
            verb = "Prefers" if m.group(1).lower() == "prefer" else "Likes"
            out.append(
                Candidate(
                    "semantic",
                    f"{verb} {_my(obj)}",
                    importance=0.6,
                    evidence=m.group(0),
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    return out


# -- identity, family, location, contact ---------------------------------------------------

_JOB_ZH = (
    r"[\u4e00-\u9fff]{0,6}?(?:工程师|程序员|设计师|医生|护士|老师|教师|律师|会计|学生|研究生|博士生?|司机|厨师|警察|"
    r"记者|作家|销售|经理|店主|主播|画家|演员|歌手|教授|工人|农民|[师员生家工])"
)
_JOBS_EN = (
    "engineer|developer|programmer|designer|teacher|professor|nurse|doctor|physician|surgeon|dentist|lawyer|"
    "accountant|student|chef|cook|writer|author|journalist|artist|painter|musician|singer|actor|actress|"
    "scientist|researcher|consultant|analyst|manager|pilot|farmer|clerk|cashier|driver|mechanic|electrician|"
    "plumber|architect|pharmacist|therapist|counselor|counsellor|photographer|editor|librarian|firefighter|"
    "police officer|officer|soldier|veteran|entrepreneur|freelancer|barista|waiter|waitress|accountant|"
    "dancer|coach|trainer|banker|economist|psychologist|vet|veterinarian|translator|secretary|intern|"
    "carpenter|tailor|baker|hairdresser|data scientist|product manager|software engineer"
)
_PLACE_EN = r"[A-Z][\w'.-]*(?:\s+(?:[A-Z][\w'.-]*|of|de|du|la))*"
_EN_TIME_TAIL = (
    r"(?=\s+(?:now|and|last|this|next|in\s+\d|since|for|with|two|three|a\s+few|recently|ago)\b|[,.;!?]|$)"
)


_SURNAMES = json.loads(data_path("surnames.json").read_text(encoding="utf-8"))
_ZH_NAME = (
    r"\s*([\u4e00-\u9fff]{2,4}?|[A-Za-z][A-Za-z·'-]{1,20}(?: [A-Z][A-Za-z'-]{1,20})?)"
    r"(?=[，,。！!？?\s吧就呢啊哈~]|$)"
)
_ZH_INTRO = re.compile(
    r"(?:(?:我|俺|偶)(?:现在|已经)?叫|我的?(?:名字|全名|中文名|真名)(?:是|叫|改成了?)|(?:^|(?<=[，,]))(?:中文名|真名|全名)(?:是|叫)?"
    r"|(?:我|^|(?<=[，,]))(?:已经)?改名(?:叫|为|成)了?|(?<=改名了[，,])现在叫)" + _ZH_NAME
)
"""A self-introduction: the name must read as one (`zh_name`), 我叫车去机场 is a taxi."""
_ZH_IAM = re.compile(r"(?:^|(?<=[～~！!，,、\s]))(?:我是|我就是|本人)" + _ZH_NAME)
"""我是张雨婷, 本人孙悦: a name only when it is a surname and a given name (`_zh_full_name`)."""
_ZH_ROLE_NAME = re.compile(
    r"(?:^|(?<=[～~！!，,、\s]))(?:我是|本人是?)[^，,。！!？?\s]{1,12}?(?:(?<=[员生师长手理任])([\u4e00-\u9fff]{2,3})|的([\u4e00-\u9fff]{3}))"
    r"(?=[，,。！!？?\s~～]|$)"
)
"""A name after what the speaker is: 我是新来的实习生赵一鸣, 我是三班的王小明 (after 的 only a three-character
name: 公司的高管 is what, not who)."""
_ZH_SURNAME_FIRST = re.compile(
    r"(?:我|免贵|本人|^|(?<=[，,。！!\s]))姓([\u4e00-\u9fff]{1,2})[，,\s]*(?:单名|名叫|叫)?" + _ZH_NAME
)
"""我姓黄，叫黄子涵: the name that begins with the surname just said."""
_ROLE_ENDS = "人生员領领座族派迷粉痴师妈爸控党身手货友任长官士主員師長"
"""What 我是… ends with when it says what the speaker is (江苏人, 高中生, 白领, 金牛座, 路痴)."""
_ZH_NICKNAME = re.compile(
    r"^(?:以后|今后|往后|平时|一般|从(?:现在|今天|今儿)(?:开始|起))*(?:你们?|您|大家|(?:我的?)?(?:朋友们?|同事们?|家里人|家人)|别人)?"
    r"(?:(?:以后|今后|往后|平时|一般|都|就|直接|可以|也|还是|从(?:现在|今天|今儿)(?:开始|起))*叫我"
    r"|^(?:我的?)?英文名(?:字)?(?:是|叫))" + _ZH_NAME
)
"""What the speaker is to be called, said at the head of the clause: 你可以叫我小林, 大家都叫我胖子;
not 它每天早上叫我起床 or 闹钟七点叫我 (something else calls)."""
_EN_NAME = re.compile(
    r"\b((?i:my (?:real |full |legal |new |actual )?name is|(?:my )?name's|i'm called|i am called|changed my name to"
    r"|(?<!nobody )(?<!never )(?:(?!nobody|never)\w+ )?calls? me|(?:i )?go by))\s+"
    r"([A-Z](?:[\w'-]+(?:\s[A-Z][\w'-]+){0,2})?)(?![\w'-])"
    r"|\b(?i:i'm|i am|this is)\s+(?:now\s+)?([A-Z][a-z'-]+\s[A-Z][a-z'-]+)(?=\s*(?:[,.!;?]|$|\s(?:and|but|from|now|here)\b))"
)
"""An English name ("My name is Robert", "I'm Sarah Mitchell") or what the speaker is called
("everyone calls me Bob", "call me Kate", "I go by Kate"); capitalised, and after "I'm" a first
and a last name (`_en_full_name`: "I'm Canadian" is no name). Other forms ("Marcus here", "I'm
Gabriel", a sign-off) are read with the `given_name` head (`usermodel.names`)."""


def zh_name(text: str) -> bool:
    """Whether a Chinese text reads as a person's name.

    A surname and one or two characters (王小明, 欧阳娜娜), a familiar form (小雨, 阿杰, 老张), or a
    name in Latin letters with a capital (我叫Alice).
    """
    if text.isascii():
        return text[0].isupper()
    if text[:2] in _SURNAMES["compound"]:
        return 3 <= len(text) <= 4
    return (text[0] in _SURNAMES["single"] or text[0] in "小阿老") and 2 <= len(text) <= 3


def common_surname(char: str) -> bool:
    """Whether a character is one of the hundred commonest surnames (the list runs commonest first).

    老周, 老王 name a person; 老师 and 老公 do not, though 师 and 公 are surnames too.
    """
    return len(char) == 1 and char in _SURNAMES["single"][:100]


_NOT_NAMES = frozenset(_SURNAMES["not_en_names"])
"""Capitalised words after "I'm" that say what someone is, not who ("I'm Chinese American")."""


def not_a_name(word: str) -> bool:
    """Whether a capitalised word says what someone is, not who ("Canadian", "Team", "Monday")."""
    return word.lower() in _NOT_NAMES


def _en_full_name(text: str) -> bool:
    """Two capitalised words that can be a name (not "Chinese American", "Team Edward")."""
    return not any(word.lower() in _NOT_NAMES for word in text.split())


def _zh_full_name(text: str) -> bool:
    """A surname and a given name, not what one is (我是江苏人, 我是高中生).

    Nor a word jieba's dictionary holds as no person's name: 我是穆斯林.
    """
    if not zh_name(text) or text[0] in "小阿老" or text[-1] in _ROLE_ENDS:
        return False
    tag = dictionary_tag(text)
    return tag is None or tag.startswith("nr")


def name_candidate(text: str, name: str, evidence: str, *, called: bool) -> Candidate:
    """The candidate of a name, or (`called`) of what the speaker is to be called."""
    return Candidate(
        "profile",
        text,
        subject="name",
        value=name,
        importance=0.8,
        evidence=evidence,
        tags=["identity", "called"] if called else ["identity"],
    )


NAME_ZH, NAME_EN = "名字：", "Name: "
"""How a memory of the speaker's name begins."""
CALLED_ZH, CALLED_EN = "称呼：", "Goes by: "
"""How a memory of what the speaker is to be called (and no name) begins."""


def name_text(name: str, called: str | None, *, zh: bool) -> str:
    """The text of a name memory, with what to call the speaker: 名字：林晓（叫我小林）, "Name: Robert (goes by Bob)"."""
    text = f"{NAME_ZH if zh else NAME_EN}{name}"
    if not called or called == name:
        return text
    return f"{text}（叫我{called}）" if zh else f"{text} (goes by {called})"


def quoted(clause: str, at: int) -> bool:
    """Whether a position of a clause is inside quotation marks: someone's words, a story's line."""
    before = clause[:at]
    return (
        any(before.count(a) > before.count(b) for a, b in ("“”", "「」", "『』"))
        or before.count('"') % 2 == 1
        or bool(re.search(r"(?:^|\s)'[^']*$", before))
    )


def _identity(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    zh_ok = _owner_ok(clause)
    intro = _ZH_INTRO.search(clause) if zh_ok else None
    if not (intro and zh_name(intro.group(1))):
        intro = next((m for m in _ZH_IAM.finditer(clause) if _zh_full_name(m.group(1))), None)
    if intro is None and (m := _ZH_SURNAME_FIRST.search(clause)) and m.group(2).startswith(m.group(1)):
        intro = m if _zh_full_name(m.group(2)) else None
    if intro is None:
        intro = next(
            (m for m in _ZH_ROLE_NAME.finditer(clause) if _zh_full_name(m.group(1) or m.group(2))), None
        )
    nick = next((m for seg in segments(clause) if (m := _ZH_NICKNAME.match(seg.strip()))), None)
    if intro is not None and not quoted(clause, intro.start()):
        name = _clean(intro.group(intro.lastindex or 1))
        out.append(name_candidate(name_text(name, None, zh=True), name, intro.group(0), called=False))
    if nick is not None and not quoted(clause, clause.find(nick.group(0))):
        name = _clean(nick.group(1))
        out.append(name_candidate(f"{CALLED_ZH}{name}", name, nick.group(0), called=True))
    for m in _EN_NAME.finditer(clause):
        name = m.group(2) or m.group(3)
        if (m.group(3) and not _en_full_name(name)) or quoted(clause, m.start()):
            continue
        called = m.group(2) is not None and bool(re.search(r"(?i)call|go by", m.group(1)))
        text = f"{CALLED_EN}{name}" if called else name_text(name, None, zh=False)
        out.append(name_candidate(text, name, m.group(0), called=called))
    if zh_ok and (
        m := re.search(r"我(?:今年|现在)?(?:已经)?(\d{1,3}|[一二三四五六七八九十]{1,3})岁(?!的)", clause)
    ):
        out.append(
            Candidate(
                "profile",
                f"{m.group(1)}岁（{now.year}年）",
                subject="age",
                value=m.group(1),
                importance=0.6,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    if m := re.search(r"\bI(?:'m| am)\s+(\d{1,3})(?:\s+years?\s+old|\s*y/?o\b)", clause, re.I):
        out.append(
            Candidate(
                "profile",
                f"Is {m.group(1)} years old (in {now.year})",
                subject="age",
                value=m.group(1),
                importance=0.6,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    if (
        zh_ok
        and not _ZH_DIET.search(clause)
        and (
            m := re.search(
                rf"{_ZH_SELF}(?:是一?名|是一个|是个|是|的职业是|做|当)\s*({_JOB_ZH})(?=[，,。！!；;]|$)",
                clause,
            )
        )
    ):
        job = _clean(m.group(1))
        if len(job) >= 2:
            out.append(
                Candidate(
                    "profile",
                    f"职业：{job}",
                    subject="occupation",
                    value=job,
                    importance=0.6,
                    evidence=m.group(0),
                    tags=["identity"],
                )
            )
    if m := re.search(
        rf"\bI(?:'m| am| work as)\s+(?:a|an)\s+((?:[a-z-]+\s){{0,2}}?(?:{_JOBS_EN}))\b", clause, re.I
    ):
        job = m.group(1).lower()
        out.append(
            Candidate(
                "profile",
                f"Works as a {job}",
                subject="occupation",
                value=job,
                importance=0.6,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    if m := re.search(
        r"\bI work (?:at|for)\s+([A-Z][\w&.' -]{1,40}?)(?=[,.;!?]|$| as| and| in| since)", clause
    ):
        org = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"Works at {org}",
                subject="employer",
                value=org,
                importance=0.6,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    if zh_ok and (m := re.search(r"(?:我|(?<=[，,]))在\s*([^，,。！!？?]{2,20}?)(?:工作|上班|任职)", clause)):
        org = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"在{org}工作",
                subject="employer",
                value=org,
                importance=0.6,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    if zh_ok and (
        m := re.search(
            r"我的生日是?在?\s*(\d{1,2}月\d{1,2}[日号]?|[一二三四五六七八九十]{1,2}月[^，,。！!]{1,4}[日号])",
            clause,
        )
    ):
        out.append(
            Candidate(
                "profile",
                f"生日：{m.group(1)}",
                subject="birthday",
                value=m.group(1),
                importance=0.7,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    months = "January|February|March|April|May|June|July|August|September|October|November|December"
    if m := re.search(
        rf"\bmy birthday is(?: on)?\s+((?:{months})\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{months}))",
        clause,
        re.I,
    ):
        out.append(
            Candidate(
                "profile",
                f"Birthday: {m.group(1)}",
                subject="birthday",
                value=m.group(1),
                importance=0.7,
                evidence=m.group(0),
                tags=["identity"],
            )
        )
    return out


_KIN_PETS = json.loads(data_path("kin.json").read_text(encoding="utf-8"))["pets"]
_PETS_ZH = "|".join(sorted(_KIN_PETS["zh"], key=len, reverse=True))
_PETS_EN = "|".join(re.escape(p) for p in sorted(_KIN_PETS["en"], key=len, reverse=True))
"""The words for pets (`data/kin.json`, which `usermodel.refer` reads too), longest first."""


def _family(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    zh_ok = _owner_ok(clause)
    if zh_ok and (
        m := re.search(
            rf"{_ZH_SELF}(?:有|生了)([一两二三四五六\d])个(孩子|小孩|儿子|女儿|哥哥|姐姐|弟弟|妹妹|兄弟姐妹|孙子|孙女)",
            clause,
        )
    ):
        out.append(
            Candidate(
                "semantic",
                f"有{m.group(1)}个{m.group(2)}",
                importance=0.7,
                evidence=m.group(0),
                tags=["family"],
            )
        )
    if zh_ok and (
        m := re.search(
            rf"{_ZH_SELF}(?:养了|养着|养|家里有|家有|有)([一两二三\d]?)(?:只|条|个)?((?:(?![养有的])[\u4e00-\u9fff]){{0,2}}?"
            rf"(?:{_PETS_ZH}))(?:[，,]?\s*(?:它|他|她)?(?:叫|名字叫|名叫)\s*([\u4e00-\u9fffA-Za-z]{{1,6}}?)(?=[，,。！!\s]|$))?",
            clause,
        )
    ):
        name = f"，叫{m.group(3)}" if m.group(3) else ""
        count = m.group(1) or "一"
        out.append(
            Candidate(
                "semantic",
                f"养了{count}只{m.group(2)}{name}",
                importance=0.6,
                evidence=m.group(0),
                tags=["family"],
            )
        )
    if m := re.search(
        r"\bI have (a|an|one|two|three|four|five|\d) (kids?|children|sons?|daughters?|brothers?|sisters?|siblings|grandchildren|grandkids)\b",
        clause,
        re.I,
    ):
        out.append(
            Candidate(
                "semantic",
                f"Has {m.group(1).lower()} {m.group(2).lower()}",
                importance=0.7,
                evidence=m.group(0),
                tags=["family"],
            )
        )
    if m := re.search(
        rf"\bI have (a|an|one|two|three|\d) ((?:{_PETS_EN})(?:s|es)?)\b(?: (?:named|called) ([A-Z]\w+))?",
        clause,
        re.I,
    ):
        name = f" named {m.group(3)}" if m.group(3) else ""
        out.append(
            Candidate(
                "semantic",
                f"Has {m.group(1).lower()} {m.group(2).lower()}{name}",
                importance=0.6,
                evidence=m.group(0),
                tags=["family"],
            )
        )
    if m := re.search(r"\bI(?:'m| am) (married|single|divorced|engaged|pregnant|retired)\b", clause, re.I):
        out.append(
            Candidate(
                "semantic", f"Is {m.group(1).lower()}", importance=0.7, evidence=m.group(0), tags=["family"]
            )
        )
    return out


_STAY = re.compile(
    r"(?:[了个]?\s*[一二两三四五六七八九十几半\d]+\s*(?:天|晚|夜|宿|周|个?星期|个?礼拜|个?月|年))|一下|一阵"
)
"""How long a stay lasts, not where: "下周去北京开会，住三天就回" gives no home."""


def _location(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    zh_ok = _owner_ok(clause)
    if zh_ok and (
        m := re.search(
            rf"{_ZH_SELF}(?:现在|目前|已经)?(住在|住|家在|搬到了?|搬去了?|定居在)\s*([^，,。！!？?；;]{{2,20}}?)(?=[，,。！!？?；;]|了|啦|$)",
            clause,
        )
    ):
        place = _clean(m.group(2))
        if not re.match(r"[这那哪]", place) and not _STAY.match(place):
            moved = "搬" in m.group(1)
            out.append(
                Candidate(
                    "profile",
                    f"住在{place}",
                    subject="location",
                    value=place,
                    importance=0.6,
                    evidence=m.group(0),
                    action="correct" if moved else "add",
                    tags=["location"],
                )
            )
    if zh_ok and (
        m := re.search(
            r"我的(?:家庭|收货)?(?:地址|住址)(是|在|改成|改为|换成|变成|更新为)\s*([^，,。！!？?；;]{2,40}?)(?=[，,。！!？?；;]|了|$)",
            clause,
        )
    ):
        place = _clean(m.group(2))
        change = m.group(1) in ("改成", "改为", "换成", "变成", "更新为")
        out.append(
            Candidate(
                "profile",
                f"地址：{place}",
                subject="location",
                value=place,
                importance=0.7,
                evidence=m.group(0),
                action="correct" if change else "add",
                sensitivity=1,
                tags=["location"],
            )
        )
    if zh_ok and (
        m := re.search(
            r"我(?:的)?(?:老家(?:是|在)|来自)\s*([^，,。！!？?；;]{2,20}?)(?:的|人)?(?=[，,。！!？?；;]|$)",
            clause,
        )
    ):
        place = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"老家在{place}",
                subject="hometown",
                value=place,
                importance=0.5,
                evidence=m.group(0),
                tags=["location"],
            )
        )
    if m := re.search(
        rf"\bI(?:\s+(?:now|currently|still|also))?\s*(?:live|reside|am living|'m living|am based|'m based) in\s+({_PLACE_EN}){_EN_TIME_TAIL}"
        rf"|\bI(?:'ve| have)?\s*(?:just |recently |finally )?(moved|relocated) to\s+({_PLACE_EN}){_EN_TIME_TAIL}"
        # a street address: "I live at 14 Elm Road in Bristol" (not a time "at 14")
        rf"|\bI(?:\s+(?:now|currently|still|also))?\s*(?:live|reside|am living|'m living) (?:at|on)\s+"
        rf"(\d+[A-Za-z]?\s+{_PLACE_EN}(?:,?\s+in\s+{_PLACE_EN}|,\s*{_PLACE_EN})?){_EN_TIME_TAIL}",
        clause,
    ):
        place = _clean(m.group(1) or m.group(3) or m.group(4))
        out.append(
            Candidate(
                "profile",
                f"Lives at {place}" if m.group(4) else f"Lives in {place}",
                subject="location",
                value=place,
                importance=0.6,
                evidence=m.group(0),
                action="correct" if m.group(2) else "add",
                tags=["location"],
            )
        )
    if m := re.search(
        rf"\bI(?:'m| am)(?: originally)? from\s+({_PLACE_EN}){_EN_TIME_TAIL}|\bI (?:grew up|was born) in\s+({_PLACE_EN}){_EN_TIME_TAIL}",
        clause,
    ):
        place = _clean(m.group(1) or m.group(2))
        out.append(
            Candidate(
                "profile",
                f"Is from {place}",
                subject="hometown",
                value=place,
                importance=0.5,
                evidence=m.group(0),
                tags=["location"],
            )
        )
    return out


def _contact(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    mine = re.search(
        r"我的|\bmy\b|我(?:手机|电话|邮箱)|联系我|打我|\b(?:reach|contact|call|text|email|e-mail|mail) me\b",
        clause,
        re.I,
    )
    if not mine:
        return out
    zh = is_chinese(clause)
    emails = values_in(clause, "email")
    if emails and re.search(r"邮箱|邮件|e-?mail|mail|reach|contact", clause, re.I):
        out.append(
            Candidate(
                "profile",
                f"邮箱：{emails[0]}" if zh else f"Email: {emails[0]}",
                subject="email",
                value=emails[0],
                importance=0.6,
                sensitivity=1,
                evidence=clause,
                tags=["contact"],
            )
        )
    phones = values_in(clause, "phone")  # the redactor's reading: not an ID, a card or an order
    if phones and re.search(r"手机|电话|号码|phone|number|cell|mobile|call|text|reach", clause, re.I):
        out.append(
            Candidate(
                "profile",
                f"电话：{phones[0]}" if zh else f"Phone: {phones[0]}",
                subject="phone",
                value=phones[0],
                importance=0.6,
                sensitivity=1,
                evidence=clause,
                tags=["contact"],
            )
        )
    return out


# -- events and schedules ------------------------------------------------------------------

_ZH_ACTIVITY = re.compile(
    r"去|要|有空|有个|有一?场|会议|开会|准备|打算|计划|参加|出差|旅游|旅行|上班|上课|考试|面试|约了|预约|看牙|看病|买了|领养|收养|"
    r"结婚|离婚|毕业|搬|生了|换了|开始|学|练|跑|健身|游泳|回|飞|见|住院|生病|入职|辞职|退休|起床|睡|上小学|上初中|上高中|上大学|"
    r"出生|考上|升职|加班|值班|休息|放假|过生日|养"
)
_ZH_NOT_EVENT = re.compile(r"想|觉得|认为|知道|记得|问|说|聊|看看|再说|谢谢|不好意思|你|您|帮我|请")
_ZH_FAMILY = r"(?:女儿|儿子|孩子|老婆|老公|妻子|丈夫|爸爸|妈妈|父母|爷爷|奶奶|男朋友|女朋友)"
_EN_NOT_EVENT = re.compile(
    r"^(?:think|guess|feel|believe|hope|wish|wonder|was wondering|know|mean|agree|understand|see|need|'d|would|"
    r"could|should|might|can|can't|cannot|will never|am sorry|'m sorry|am glad|'m glad|am happy|'m happy|'m so|am so|"
    r"'m not sure|am not sure|'m sure|am sure|told|said|asked|thank|just want|want to say|just wanted|love that|like that|"
    r"love how|like how|remember|forgot|'m curious|am curious|'m excited for you|'m proud|am proud)\b",
    re.I,
)
_EN_PAST = re.compile(
    r"^(?:(?:just|recently|finally|also|actually)\s+)*(went|got|adopted|bought|started|finished|joined|moved|graduated|married|"
    r"ran|visited|attended|traveled|travelled|met|took|saw|made|had|won|lost|left|began|signed up|completed|"
    r"celebrated|tried|learned|learnt|found|gave|did|painted|wrote|read|built|quit|retired|passed|volunteered|"
    r"hiked|camped|flew|drove|returned|launched|opened|received|decided|[a-z]+ed)\b",
    re.I,
)
_EN_FUTURE_OR_ROUTINE = re.compile(
    r"\b(?:tomorrow|tonight|next \w+|this (?:weekend|week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|afternoon|evening)|"
    r"on (?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends?|the weekends?)|"
    r"every \w+|weekends|usually|always|at \d{1,2}(?::\d{2})? ?(?:am|pm)?|in (?:january|february|march|april|may|june|july|august|september|october|november|december))\b",
    re.I,
)
_EN_PAST_CUE = re.compile(
    r"\b(?:yesterday|last \w+|\d+ \w+ ago|a (?:few )?\w+ ago|recently|lately|just|this (?:morning|afternoon)|earlier today|today|in (?:19|20)\d{2})\b",
    re.I,
)


def _adverb(word: str) -> bool:
    """Whether a word after "I" is an adverb of manner ("I literally eat…"), not the verb ("I fly", "I reply")."""
    low = word.lower()
    return len(low) > 4 and low.endswith("ly") and not low.endswith(("ply", "fly", "rely"))


def _third_person(rest: str) -> str | None:
    """English memory text for what follows "I" ("'m flying to Tokyo" -> "Is flying to Tokyo")."""
    rest = rest.strip()
    if m := re.match(r"(?:'m|am)\s+(.*)", rest, re.I):
        return "Is " + m.group(1)
    if m := re.match(r"(?:'ve|have)\s+(.*)", rest, re.I):
        return "Has " + re.sub(r"^got\s+", "", m.group(1))
    if m := re.match(r"(?:'ll|will)\s+(.*)", rest, re.I):
        return "Will " + m.group(1)
    if m := re.match(r"(was|had|did)\s+(.*)", rest, re.I):
        return m.group(1).capitalize() + " " + m.group(2)
    words = rest.split(" ", 1)
    if not words or not words[0]:
        return None
    head, tail = words[0], (words[1] if len(words) > 1 else "")
    if head.lower() in {
        "usually",
        "always",
        "often",
        "sometimes",
        "just",
        "recently",
        "also",
        "finally",
        "only",
        "normally",
        "generally",
        "still",
        "actually",
    } or _adverb(head):
        inner = _third_person(tail)
        return None if inner is None else f"{head.capitalize()} {inner[0].lower()}{inner[1:]}"
    if _EN_PAST.match(head):
        return head.capitalize() + (" " + tail if tail else "")
    low = head.lower()
    irregular = {"go": "goes", "do": "does", "have": "has", "be": "is"}
    if low in irregular:
        verb = irregular[low]
    elif re.search(r"(?:s|sh|ch|x|z|o)$", low):
        verb = low + "es"
    elif re.search(r"[^aeiou]y$", low):
        verb = low[:-1] + "ies"
    else:
        verb = low + "s"
    return verb.capitalize() + (" " + tail if tail else "")


def _statement_zh(segment: str, clause: str, now: datetime) -> Candidate | None:
    if not ZH_TIME.search(segment) or _ZH_QUESTION.search(segment) or _HYPOTHETICAL.search(segment):
        return None
    family = re.match(rf"^我(?:的)?({_ZH_FAMILY})(.*)$", segment)
    if family:
        body = family.group(1) + family.group(2)
    else:
        if not _owner_ok(clause) or _ZH_NOT_EVENT.search(segment):
            return None
        starts_with_me = segment.startswith("我") or re.match(rf"^(?:{ZH_TIME.pattern})+我", segment)
        if not starts_with_me and not (segment is not clause and clause.startswith("我")):
            return None
        body = re.sub(r"(?<![自])我(?!们)", "", segment, count=1)
    if not _ZH_ACTIVITY.search(body) or len(body) < 4:
        return None
    text, _ = resolve(_clean(body), now, chinese=True)
    routine = re.search(r"每|平时|一般|经常|天天|周末", segment) and not re.search(r"下|明天|后天", segment)
    past = re.search(r"了|昨天|前天|上个?(?:周|星期|月)|去年|刚", segment)
    kind: Kind = "semantic" if routine and not past else "episodic"
    tag = "family" if family else ("event" if past else "schedule")
    return Candidate(kind, text, importance=0.5, evidence=segment, tags=[tag])


def _statement_en(segment: str, now: datetime) -> Candidate | None:
    if "?" in segment or re.search(r"\byou\b|\byour\b", segment, re.I):
        return None
    family = re.match(  # the family member begins the segment: "Sold the bike after my kid was born" is no birth
        r"(?:(?:and|so|oh|btw|also|well)\W+)*my (daughter|son|kids?|children|wife|husband|partner|mom|mother|dad|father|parents|brother|sister|boyfriend|girlfriend)\s+"
        r"((?:just |recently |finally )?(?:started|graduated|got|was born|turned|passed away|moved|retired|began|finished|joined|is starting|will start)\b.*)$",
        segment,
        re.I,
    )
    if family:
        text = f"Their {family.group(1).lower()} {family.group(2)}"
        text, _ = resolve(_en_clean(_my(text)), now, chinese=False)
        return Candidate("episodic", text, importance=0.5, evidence=segment, tags=["family"])
    m = re.search(r"(?:^|\b)I((?:'m|'ve|'ll|\s+).*)$", segment)
    if not m or not EN_TIME.search(segment) or _HYPOTHETICAL.search(segment):
        return None
    rest = m.group(1).strip()
    if _EN_NOT_EVENT.match(rest) or re.search(r"\bI\b", rest):
        return None  # a second "I": two clauses ("When I fly I always..."), which a rewrite garbles
    past = bool(_EN_PAST.match(rest)) or bool(
        re.match(r"(?:'ve|have)\s+(?:been|just|recently|finally)", rest)
    )
    if past and not _EN_PAST_CUE.search(segment):
        return None
    if not past and not _EN_FUTURE_OR_ROUTINE.search(segment):
        return None
    body = _third_person(rest)
    if body is None or len(body.split()) < 3 or re.match(r"^\S+ (?:it|this|that|them|one)\b", body, re.I):
        return None  # too short, or about something only the conversation names ("took it for a ride")
    body = re.split(r"\s+(?:and|but|so)\s+(?:it|that|this|we|they|he|she)\b", body, maxsplit=1)[0]
    text, _ = resolve(_en_clean(_my(body)), now, chinese=False)
    routine = re.search(
        r"\b(?:every|usually|always|on weekends|weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b",
        segment,
        re.I,
    )
    kind: Kind = "semantic" if routine and not past else "episodic"
    return Candidate(kind, text, importance=0.5, evidence=segment, tags=["event" if past else "schedule"])


def _statements(clause: str, now: datetime, covered: list[str]) -> list[Candidate]:
    """Events and schedules in the parts of a clause no other rule used."""
    out: list[Candidate] = []
    zh = is_chinese(clause)
    for seg in segments(clause):
        if any(seg in ev or ev in seg for ev in covered if ev):
            continue
        cand = _statement_zh(seg, clause, now) if zh else _statement_en(seg, now)
        if cand is not None:
            out.append(cand)
    return out


# -- forget requests -----------------------------------------------------------------------


_REMINDS = re.compile(
    r"别忘|不要忘|趁.{0,4}没忘|免得.{0,3}忘|\b(?:don't|do not|never|won't|can't|not) forget\b|\bforget to\b"
    r"|\b(?:before|in case|lest|so) (?:I|we) forget\b"
    r"|我(?:老是|总是|经常|常常|又|总|老|还是)?(?:忘记|忘了)|忘(?:了|记)?[带拿]|想不起来?|记不起来?|记不清"
    r"|\bI (?:keep |always |often )?(?:forget|forgot)\b|\bI (?:can't|cannot|couldn't|don't) (?:remember|recall)\b",
    re.I,
)
_REMEMBER = re.compile(
    r"记住|记着|记一下|记下|记牢|牢记|记得|帮我记|存一下|記住|記著|記得|記低"
    r"|\b(?:remember|keep in mind|bear in mind|make a note|note (?:that|down|this)|save this|file this away"
    r"|for future reference)\b",
    re.I,
)
"""A request to remember ("记住我不喝酒", "keep in mind I'm vegan"): the opposite of one to forget,
however near the `forget` head reads it (docs/benchmarks.md)..."""
_UNWANTED = re.compile(
    r"[别甭]|不(?:要|用|必|需要|希望|想|准|许)|n't\b|\b(?:not|no need|stop|never|rather)\b", re.I
)
_DELETE = re.compile(r"删|忘掉|去掉|抹掉|\b(?:remove|delete|erase|wipe)\b", re.I)
"""...unless it is negated or unwanted before ("我不希望你记住我的职业", "rather you didn't remember my
asthma") or the clause deletes ("remove my email
from what you remember about me")."""


def reminds(clause: str) -> bool:
    """Whether a clause is a reminder, a lapse or a request to remember, never a request to forget.

    "don't forget", "before I forget", "我又忘了…", "记住…", "keep in mind…".
    """
    if _REMINDS.search(clause):
        return True
    asked = _REMEMBER.search(clause)
    return asked is not None and not _UNWANTED.search(clause[: asked.start()]) and not _DELETE.search(clause)


def forget_topic(clause: str) -> str | None:
    """What a forget request's own words name ("把我的邮箱删了": 邮箱), or None when the rules see none.

    "Don't forget to ...", "before I forget: ..." name nothing to forget.
    """
    zh = re.search(
        r"把(.{1,30}?)(?:这件事|这事|的事情?|这条|这个|这些)?(?:给)?(?:忘了|忘掉|忘记|删了|删掉|删除)"
        r"|(?:忘掉|忘记|忘了吧|删除|删掉|别再记|不要再?记住?|别记)(?:我的|关于我?的?|我)?\s*([^，,。！!？?]{1,30})",
        clause,
    )
    if reminds(clause):
        return None
    en = re.search(
        r"\b(?:forget|delete|erase|remove)\s+(?:that\s+|about\s+|my\s+|what I said about\s+(?:my\s+)?)?([^,.;!?]{2,60})"
        r"|\b(?:don't|do not|stop|no need to)\s+(?:remember|keep|store|storing|remembering|keeping)\s+(?:that\s+|my\s+)?([^,.;!?]{2,60})",
        clause,
        re.I,
    )
    m = zh or en
    if not m:
        return None
    topic = _clean(m.group(1) or m.group(2))
    topic = (
        re.sub(r"(?:这件事|这个|吧|了|的事|信息|\s+anymore|\s+any more|\s+please)$", "", topic, flags=re.I)
        or topic
    )
    return re.sub(r"^我", "", topic) if zh else _ABOUT.sub("", topic) or topic


_ALL_EN = r"everything|anything|all|stuff|things?|bits?|part|info|information"
TAKES_ALL = re.compile(rf"(?i:\b(?:{_ALL_EN})\b)|全部|所有|一切|相关|都|的事|那些事")
"""Words by which a forget request takes in all of what it names ("everything about my sister",
"我老公的事都忘了"), not one fact of it ("我妈的工作")."""
_ABOUT = re.compile(
    rf"^(?:(?:all\s+)?(?:the\s+)?(?:{_ALL_EN})|what\s+I\s+(?:said|told\s+you|mentioned))\s+(?:about|on|regarding)\s+",
    re.I,
)
"""How much of a topic an English request asks to forget ("everything about my boyfriend"): not
what it is about."""


_TOPIC_JOINS = re.compile(r"、|和|以及|还有|\b(?:and|plus|as well as)\b|&", re.I)


def forget_parts(topic: str) -> list[str]:
    """The topics of a forget request that names several ("把猫和邮箱都去掉", "my number and my hometown")."""
    parts = [p.strip() for p in _TOPIC_JOINS.split(topic) if p and p.strip()]
    return parts if len(parts) > 1 else [topic]


def forget_request(clause: str, topic: str, *, tentative: bool = False) -> Candidate:
    """A forget request read in a clause, about `topic`."""
    return Candidate("semantic", topic, action="forget", topic=topic, evidence=clause, tentative=tentative)


def _forget(clause: str) -> list[Candidate]:
    topic = forget_topic(clause)
    return [forget_request(clause, topic)] if topic else []


TOPIC_SUBJECTS: dict[str, str] = {
    "电话": "phone",
    "手机": "phone",
    "phone": "phone",
    "number": "phone",
    "邮箱": "email",
    "email": "email",
    "e-mail": "email",
    "地址": "location",
    "住址": "location",
    "住在": "location",
    "address": "location",
    "where i live": "location",
    "名字": "name",
    "name": "name",
    "快递": "shipping_preference",
    "shipping": "shipping_preference",
    "courier": "shipping_preference",
    "工作": "employer",
    "职业": "occupation",
    "job": "occupation",
    "生日": "birthday",
    "birthday": "birthday",
    "年龄": "age",
    "age": "age",
    "老家": "hometown",
    "hometown": "hometown",
}
"""Words in a forget request that point at a profile field."""


_OWN = ("我", "我们", "我家", "俺", "本人", "自己")
"""How a Chinese possessor before 的 ends when it is the speaker ("把我的邮箱", "我家的地址")."""


_SAID_IT = re.compile(
    r"(?i:\b(?:that\s+|which\s+)?i(?:'ve|\s+have)?\s+(?:gave|given|told|sent|shared|mentioned|said|wrote|"
    r"provided|entered|left)\b(?:\s+(?:to\s+)?you)?(?:\s+(?:earlier|before|previously|last\s+time|"
    r"yesterday|the\s+other\s+day|once))?)"
    r"|我(?:之前|刚才|刚刚|上次|以前|早先|先前|那天|前面)?(?:跟你|和你|对你)?"
    r"(?:说过?|提过|提到过?|告诉过?你|给过?你|发给你|留过?|填过?|写过?)了?的"
)
"""A relative clause by which the speaker points at a value they gave ("the email I gave you
earlier", "我之前说的住址"): it names no one else and no other data."""


def subject_of_topic(topic: str) -> str | None:
    """The profile field a forget request names, if any.

    An English word counts whole ("language" names no age). A field of someone else's ("我妈的
    工作", "my husband's name", "her name") is no field of the speaker's profile: None; one the
    speaker says they gave ("把我之前说的住址删了") is theirs.
    """
    low = _SAID_IT.sub(" ", topic.lower())
    for word, subject, at in field_words(low):
        if word.isascii():
            if not re.search(r"(?:[a-z]'s|\b(?:his|her|their|your|its))\s+(?:[a-z]+\s+)?$", low[:at]):
                return subject
        else:
            owner = re.search(r"(\S{1,4})的$", low[:at])
            if owner is None or owner.group(1).endswith(_OWN):
                return subject
    return None


def field_words(low: str) -> list[tuple[str, str, int]]:
    """The words of a lower-cased text that name a kind of data (`TOPIC_SUBJECTS`): (word, field, where).

    An English word counts whole ("language" names no age); a Chinese one wherever it stands.
    """
    found = []
    for word, subject in TOPIC_SUBJECTS.items():
        m = re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])" if word.isascii() else re.escape(word), low)
        if m:
            found.append((word, subject, m.start()))
    return found


_FIELD_WORDS = "|".join(re.escape(w) for w in sorted(TOPIC_SUBJECTS, key=len, reverse=True))
_EARLIER = re.compile(
    rf"(?:旧的?|以前的|原来的|之前的|过去的)(?:{_FIELD_WORDS})"
    rf"|(?i:\b(?:old|former|previous|maiden|dead)\s+(?:{_FIELD_WORDS}))"
)
"""A field's word right after a word that puts its value in the past ("my old name", "以前的地址"),
not a value said earlier ("把我之前说的住址删了", "the email I gave you earlier")."""


def earlier_value(topic: str) -> bool:
    """Whether a forget request is about a value the speaker no longer has ("don't use my old name").

    That value is no longer current (a change of mind keeps it only in the history), so the
    current one is not what the request is about.
    """
    return bool(_EARLIER.search(topic))


def own_fields(text: str) -> set[str]:
    """The speaker's own profile fields a text names with my / 我的 ("落款用我的名字", "send it to my address").

    A request that names one needs it, however little else it touches it.
    """
    low = text.lower()
    return {
        subject
        for word, subject in TOPIC_SUBJECTS.items()
        if re.search(
            rf"\b(?:my|our)\s+{re.escape(word)}(?![a-z])" if word.isascii() else rf"我的?{re.escape(word)}",
            low,
        )
    }


def names_only_a_field(topic: str) -> bool:
    """Whether most of a topic's words name a kind of data ("电话号码", "my phone number").

    What a request only worded as one may look up as a profile field: "我女儿把我手机里的游戏全删了"
    names a phone among other things, and is about the games; "the email I gave you earlier"
    names only the email.
    """
    own = terms(_SAID_IT.sub(" ", topic))
    fields = [t for t in own if any(t.startswith(w) if w.isascii() else w in t for w in TOPIC_SUBJECTS)]
    return bool(own) and 2 * len(fields) > len(own)


RULES: list[Rule] = [_shipping, _order, _identity, _family, _location, _contact, _preferences]
"""Rules applied to every clause, in order; events and schedules are read from what is left."""


def extract(text: str, *, now: datetime | None = None, forget: bool = True) -> list[Candidate]:
    """Extract memory candidates from one user message.

    Args:
        text: What the user said.
        now: The time it was said (resolves "yesterday").
        forget: Read forget requests by their words (False: the caller reads them itself, as
            `read_message` does with the `forget` classifier).

    Returns:
        Candidates in the user's language; forget requests have `action="forget"`.
    """
    now = now or datetime.now(UTC)
    out: list[Candidate] = []
    seen: set[str] = set()
    for clause in clauses(text):
        asked = _forget(clause) if forget else []
        if asked:
            out.extend(asked)
            continue
        found: list[Candidate] = []
        for rule in RULES:
            found.extend(rule(clause, now))
        found.extend(_statements(clause, now, [c.evidence for c in found]))
        for cand in found:
            if cand.text not in seen:
                seen.add(cand.text)
                out.append(cand)
    return out
