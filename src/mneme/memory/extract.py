"""The offline, rule-based memory extractor for Chinese and English."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from mneme.memory.record import Kind

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
    """The clause the candidate was read from."""
    tags: list[str] = field(default_factory=list)


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
_CLAUSE_SPLIT = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")
_ZH_PREFIX = re.compile(
    r"^(?:你好|您好|嗨|哈喽|hi|hello|嗯|哦|对了|另外|还有|然后|麻烦你?|请)[，,！!\s]*", re.I
)
_EN_COURIERS = "|".join(re.escape(k) for k in COURIERS if not _CJK.search(k))
_ZH_COURIERS = "|".join(re.escape(k) for k in COURIERS if _CJK.search(k) or k == "ems")

_RELATIVE_DAYS = {"今天": 0, "昨天": 1, "前天": 2, "today": 0, "yesterday": 1}


def is_chinese(text: str) -> bool:
    """Whether a text is mainly Chinese."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk * 3 >= len(re.sub(r"\s", "", text))


def clauses(text: str) -> list[str]:
    """Split a message into clauses small enough for patterns."""
    out = []
    for part in _CLAUSE_SPLIT.split(text[:MAX_EXTRACT_CHARS]):
        part = _ZH_PREFIX.sub("", part.strip())
        if part:
            out.append(part)
    return out


def _clean(value: str) -> str:
    return value.strip(" \t,，。.!！?？;；:：'\"“”‘’")


def _date_of(text: str, now: datetime) -> str | None:
    for word, days in _RELATIVE_DAYS.items():
        if word in text.lower():
            return (now - timedelta(days=days)).date().isoformat()
    return None


Rule = Callable[[str, datetime], list[Candidate]]


def _shipping(clause: str, now: datetime) -> list[Candidate]:
    zh = re.search(
        rf"(以后|今后|默认|一律|每次|下次|往后|都)[^，。]*?(?:发|用|走|寄|选)\s*({_ZH_COURIERS})",
        clause,
        re.I,
    )
    en = re.search(
        rf"\b(always|from now on|in future|in the future|by default|next time|going forward)\b"
        rf"[^.]*?\b(?:ship|send|deliver|use)\w*\b[^.]*?\b({_EN_COURIERS})\b",
        clause,
        re.I,
    )
    if zh:
        code, name = COURIERS[zh.group(2).lower()]
        text = f"快递偏好：以后都发{name}"
    elif en:
        code, name = COURIERS[en.group(2).lower()]
        text = f"Prefers shipping with {name}"
    else:
        return []
    return [
        Candidate(
            kind="profile",
            text=text,
            subject="shipping_preference",
            value=code,
            importance=0.8,
            evidence=clause,
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


_ZH_LIKE = re.compile(
    r"我(?:现在)?(?:也)?(?:很|特别|非常|最|比较|更|还是)?(?:喜欢|爱|偏好|偏爱)([^，,。！!？?]{1,24})"
)
_ZH_DISLIKE = re.compile(
    r"我(?:从来)?(?:不|不太|从不|不再)(?:喜欢|爱|吃|喝|能吃|能喝|用)([^，,。！!？?]{1,20})|我(?:很)?讨厌([^，,。！!？?]{1,20})|我对([^，,。！!？?]{1,12})过敏"
)
_EN_LIKE = re.compile(
    r"\bI(?: really| also| now| still)?\s+(?:like|love|enjoy|prefer|adore)\s+([^,.;!?]{2,60})", re.I
)
_EN_DISLIKE = re.compile(
    r"\bI\s+(?:don't|do not|never|no longer|can't|cannot)\s+(?:like|eat|drink|enjoy|stand)\s+([^,.;!?]{2,60})"
    r"|\bI\s+(?:hate|dislike)\s+([^,.;!?]{2,60})|\bI(?:'m| am)\s+allergic to\s+([^,.;!?]{2,60})",
    re.I,
)
_CORRECTION = re.compile(
    r"不再|改成|改为|换成|现在更|现在改|其实.*更|\bactually\b|\bno longer\b|\bnow prefer|\binstead\b|\bchanged? my mind\b",
    re.I,
)


def _preferences(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    correction = bool(_CORRECTION.search(clause))
    action: Action = "correct" if correction else "add"
    if m := _ZH_DISLIKE.search(clause):
        obj = _clean(next(g for g in m.groups() if g))
        if "过敏" in m.group(0):
            out.append(
                Candidate(
                    "semantic",
                    f"对{obj}过敏",
                    importance=0.9,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    sensitivity=2,
                    tags=["health"],
                )
            )
        else:
            neg = re.search(r"不(?:再|太)?(喜欢|爱|吃|喝|能吃|能喝|用)|讨厌", m.group(0))
            phrase = neg.group(0) if neg else "不喜欢"
            out.append(
                Candidate(
                    "semantic",
                    f"{phrase}{obj}",
                    importance=0.7,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    elif m := _ZH_LIKE.search(clause):
        obj = _clean(m.group(1))
        if obj and not obj.startswith(("的", "你")):
            verb = "更喜欢" if "更" in m.group(0) else "喜欢"
            out.append(
                Candidate(
                    "semantic",
                    f"{verb}{obj}",
                    importance=0.6,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    if m := _EN_DISLIKE.search(clause):
        obj = _clean(next(g for g in m.groups() if g))
        if "allergic" in m.group(0).lower():
            out.append(
                Candidate(
                    "semantic",
                    f"Allergic to {obj}",
                    importance=0.9,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    sensitivity=2,
                    tags=["health"],
                )
            )
        else:
            act = re.search(r"\b(eat|drink|enjoy|stand)\b", m.group(0), re.I)
            text = f"Does not {act.group(1).lower()} {obj}" if act else f"Does not like {obj}"
            out.append(
                Candidate(
                    "semantic",
                    text,
                    importance=0.7,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    elif m := _EN_LIKE.search(clause):
        obj = _clean(m.group(1))
        verb = "Prefers" if re.search(r"prefer", m.group(0), re.I) else "Likes"
        if obj.lower() not in {"it", "that", "this", "you", "to"}:
            out.append(
                Candidate(
                    "semantic",
                    f"{verb} {obj}",
                    importance=0.6,
                    evidence=clause,
                    topic=obj,
                    action=action,
                    tags=["preference"],
                )
            )
    return out


def _identity(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    if m := re.search(
        r"我(?:的名字)?(?:叫|是)\s*([\u4e00-\u9fff]{2,4}|[A-Za-z][A-Za-z·' -]{1,30})(?=[，,。！!\s]|$)",
        clause,
    ):
        name = _clean(m.group(1))
        if "叫" in m.group(0) or "名字" in m.group(0):
            out.append(
                Candidate(
                    "profile",
                    f"名字：{name}",
                    subject="name",
                    value=name,
                    importance=0.8,
                    evidence=clause,
                )
            )
    if m := re.search(r"\b(?i:my name is|call me|i'm called)\s+([A-Z][\w'-]+(?:\s[A-Z][\w'-]+)?)", clause):
        name = m.group(1)
        out.append(
            Candidate(
                "profile",
                f"Name: {name}",
                subject="name",
                value=name,
                importance=0.8,
                evidence=clause,
            )
        )
    if m := re.search(r"我(?:住在|家在|来自|搬到了?)\s*([^，,。！!？?]{2,20})", clause):
        place = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"住在{place}" if "来自" not in m.group(0) else f"来自{place}",
                subject="location" if "来自" not in m.group(0) else "hometown",
                value=place,
                importance=0.6,
                evidence=clause,
            )
        )
    if m := re.search(
        r"\bI (?:live in|moved to|am based in|'m based in)\s+([A-Z][\w .'-]{1,40}?)(?=[,.;!?]|$| now| and)",
        clause,
    ):
        place = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"Lives in {place}",
                subject="location",
                value=place,
                importance=0.6,
                evidence=clause,
            )
        )
    if m := re.search(r"\bI(?:'m| am) from\s+([A-Z][\w .'-]{1,40}?)(?=[,.;!?]|$| and)", clause):
        place = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"Is from {place}",
                subject="hometown",
                value=place,
                importance=0.5,
                evidence=clause,
            )
        )
    if m := re.search(
        r"我(?:是一?名|是一个|是个|的职业是|做)\s*([\u4e00-\u9fff]{2,8}?(?:师|员|生|家|者|工|医生|护士|老师|学生))",
        clause,
    ):
        job = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"职业：{job}",
                subject="occupation",
                value=job,
                importance=0.6,
                evidence=clause,
            )
        )
    if m := re.search(
        r"\bI(?:'m| am) an? ([a-z]+(?: [a-z]+)?(?:er|or|ist|ian|ant|ent|nurse|doctor|student|teacher|chef))\b",
        clause,
        re.I,
    ):
        job = m.group(1)
        out.append(
            Candidate(
                "profile",
                f"Works as a {job}",
                subject="occupation",
                value=job,
                importance=0.6,
                evidence=clause,
            )
        )
    if m := re.search(r"\bI work (?:at|for)\s+([A-Z][\w&.' -]{1,40}?)(?=[,.;!?]|$| as| and)", clause):
        org = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"Works at {org}",
                subject="employer",
                value=org,
                importance=0.6,
                evidence=clause,
            )
        )
    if m := re.search(r"我在\s*([^，,。！!？?]{2,20}?)(?:工作|上班)", clause):
        org = _clean(m.group(1))
        out.append(
            Candidate(
                "profile",
                f"在{org}工作",
                subject="employer",
                value=org,
                importance=0.6,
                evidence=clause,
            )
        )
    return out


_PHONE = re.compile(r"(?<!\d)(?:\+?86[- ]?)?1[3-9]\d{9}(?!\d)|(?<!\d)\+?\d[\d -]{7,14}\d(?!\d)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _contact(clause: str, now: datetime) -> list[Candidate]:
    out: list[Candidate] = []
    mine = re.search(r"我的|\bmy\b|我(?:手机|电话|邮箱)", clause, re.I)
    if not mine:
        return out
    if (m := _EMAIL.search(clause)) and re.search(r"邮箱|e-?mail|mail", clause, re.I):
        zh = is_chinese(clause)
        out.append(
            Candidate(
                "profile",
                f"邮箱：{m.group(0)}" if zh else f"Email: {m.group(0)}",
                subject="email",
                value=m.group(0),
                importance=0.6,
                sensitivity=1,
                evidence=clause,
            )
        )
    if (m := _PHONE.search(clause)) and re.search(r"手机|电话|号码|phone|number|cell|mobile", clause, re.I):
        zh = is_chinese(clause)
        out.append(
            Candidate(
                "profile",
                f"电话：{m.group(0)}" if zh else f"Phone: {m.group(0)}",
                subject="phone",
                value=m.group(0),
                importance=0.6,
                sensitivity=1,
                evidence=clause,
            )
        )
    return out


def _forget(clause: str, now: datetime) -> list[Candidate]:
    zh = re.search(
        r"(?:忘掉|忘记|忘了吧|删除|删掉|别再记|不要再?记住?)(?:我的|关于我?的?|我)?\s*([^，,。！!？?]{1,30})",
        clause,
    )
    en = re.search(
        r"\b(?:forget|delete|erase|remove)\s+(?:that\s+|about\s+|my\s+|what I said about\s+)?([^,.;!?]{2,60})",
        clause,
        re.I,
    )
    m = zh or en
    if not m:
        return []
    topic = _clean(m.group(1))
    topic = re.sub(r"(?:这件事|这个|吧|了|的事|信息)$", "", topic) or topic
    return [Candidate("semantic", topic, action="forget", topic=topic, evidence=clause)]


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
}
"""Words in a forget request that point at a profile field."""


def subject_of_topic(topic: str) -> str | None:
    """The profile field a forget request names, if any."""
    low = topic.lower()
    for word, subject in TOPIC_SUBJECTS.items():
        if word in low:
            return subject
    return None


RULES: list[Rule] = [_shipping, _order, _identity, _contact, _preferences]
"""Rules applied to every clause, in order."""


def extract(text: str, *, now: datetime | None = None) -> list[Candidate]:
    """Extract memory candidates from one user message.

    Args:
        text: What the user said.
        now: The time it was said (resolves "yesterday").

    Returns:
        Candidates in the user's language; forget requests have `action="forget"`.
    """
    now = now or datetime.now(UTC)
    out: list[Candidate] = []
    seen: set[str] = set()
    for clause in clauses(text):
        forget = _forget(clause, now)
        if forget:
            out.extend(forget)
            continue
        for rule in RULES:
            for cand in rule(clause, now):
                if cand.text not in seen:
                    seen.add(cand.text)
                    out.append(cand)
    return out
