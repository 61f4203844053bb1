"""Time in the read path: the periods a query names, and when a memory was said."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_EN_DMY = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON}\.?,?\s+(\d{{4}})\b", re.I)
_EN_MDY = re.compile(rf"\b{_MON}\.?\s+{_DAY},?\s+(\d{{4}})\b", re.I)
_EN_MY = re.compile(rf"\b{_MON}\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_EN_M = re.compile(rf"\b(?:in|during|on|of|since|last)\s+{_MON}\b", re.I)
_EN_Y = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I)
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b")
_ZH_YMD = re.compile(r"((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_ZH_YM = re.compile(r"((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月")
_ZH_MD = re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_ZH_M = re.compile(r"(?<![\d年])(\d{1,2})\s*月(?!\s*\d)")
_ZH_Y = re.compile(r"((?:19|20)\d\d)\s*年(?!\s*\d)")

_RELATIVE: list[tuple[re.Pattern[str], int, int]] = [
    # (pattern, days back to the start, days back to the end)
    (re.compile(r"\byesterday\b|昨天|昨日", re.I), 1, 1),
    (re.compile(r"\bday before yesterday\b|前天", re.I), 2, 2),
    (re.compile(r"\btoday\b|今天|今日", re.I), 0, 0),
    (re.compile(r"\blast week\b|上周|上星期|上个星期|上礼拜", re.I), 13, 6),
    (re.compile(r"\bthis week\b|这周|本周|这个星期", re.I), 6, 0),
    (re.compile(r"\blast month\b|上个月|上月", re.I), 62, 28),
    (re.compile(r"\bthis month\b|这个月|本月", re.I), 30, 0),
    (re.compile(r"\blast year\b|去年", re.I), 730, 365),
    (re.compile(r"\brecently\b|\blately\b|最近|近来", re.I), 30, 0),
]


@dataclass(frozen=True)
class Period:
    """A span of days a query refers to (inclusive), or a month in any year."""

    start: date | None = None
    end: date | None = None
    month: int | None = None
    """Set instead of start/end when only a month is named ("in October", "10月")."""

    def contains(self, day: date, slack_after: int = 0) -> bool:
        """Whether a day falls in the period (or up to `slack_after` days after it)."""
        if self.month is not None:
            return day.month == self.month or (
                slack_after > 0 and (day - timedelta(days=slack_after)).month == self.month
            )
        assert self.start is not None and self.end is not None
        return self.start <= day <= self.end + timedelta(days=slack_after)


def _month(name: str) -> int:
    key = name.lower()[:3]
    return next(i + 1 for i, m in enumerate(_MONTHS) if m.startswith(key))


def _month_end(year: int, month: int) -> date:
    return date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)


def _day(year: int, month: int, day: int) -> Period | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return Period(d, d)


def _month_period(year: int, month: int) -> Period | None:
    if not 1 <= month <= 12:
        return None
    return Period(date(year, month, 1), _month_end(year, month))


def periods(query: str, today: date | None = None) -> list[Period]:
    """The periods a query names: dates, months, years, and relative ones ("last week", "昨天").

    The most precise form found wins: a full date over a month, a month over a year.

    Args:
        query: The query text (English or Chinese).
        today: The day relative expressions count from (default: today, UTC).

    Returns:
        The periods, possibly empty.
    """
    found: list[Period | None] = []
    for d, mo, y in _EN_DMY.findall(query):
        found.append(_day(int(y), _month(mo), int(d)))
    for mo, d, y in _EN_MDY.findall(query):
        found.append(_day(int(y), _month(mo), int(d)))
    for y, mo, d in _ISO.findall(query) + _ZH_YMD.findall(query):
        found.append(_day(int(y), int(mo), int(d)))
    out = [p for p in found if p is not None]
    if out:
        return out
    for mo, y in _EN_MY.findall(query):
        found.append(_month_period(int(y), _month(mo)))
    for y, mo in _ZH_YM.findall(query):
        found.append(_month_period(int(y), int(mo)))
    out = [p for p in found if p is not None]
    if out:
        return out
    for mo, _day_of_month in _ZH_MD.findall(query):
        if 1 <= int(mo) <= 12:
            out.append(Period(month=int(mo)))
    for y in _EN_Y.findall(query) + _ZH_Y.findall(query):
        out.append(Period(date(int(y), 1, 1), date(int(y), 12, 31)))
    for mo in _EN_M.findall(query):
        out.append(Period(month=_month(mo)))
    for mo in _ZH_M.findall(query):
        if 1 <= int(mo) <= 12:
            out.append(Period(month=int(mo)))
    if out:
        return out
    today = today or datetime.now(UTC).date()
    for pattern, back_start, back_end in _RELATIVE:
        if pattern.search(query):
            out.append(Period(today - timedelta(days=back_start), today - timedelta(days=back_end)))
    return out[:1]


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (naive times are UTC), or None when it does not parse."""
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def said_at(value: dict[str, Any]) -> datetime | None:
    """When a stored memory was said: `metadata["said_at"]`, else its source time, else creation.

    Callers that import old conversations pass the time each message was said as
    `metadata={"said_at": "2023-05-08T13:56:00"}`; live conversations get it from the source.
    """
    meta = value.get("metadata") or {}
    source = value.get("source") or {}
    for candidate in (
        meta.get("said_at") if isinstance(meta, dict) else None,
        source.get("at") if isinstance(source, dict) else None,
        value.get("created_at"),
    ):
        at = parse_time(candidate)
        if at is not None:
            return at
    return None


_PRESENT = re.compile(
    r"现在|目前|如今|眼下|近来|最近|这阵子|这段时间|当前|还在|仍然|依然|接下来|"
    r"\b(?:now|nowadays|currently|current|these days|still|anymore|any more|latest|at the moment|at present)\b",
    re.I,
)


def asks_present(query: str) -> bool:
    """Whether a query asks how things stand now ("目前在哪里办公", "does she still...").

    Such a question wants the latest of several statements about the same thing, so the
    search weighs recency more for it (`Context.w_recency_present`).
    """
    return bool(_PRESENT.search(query))


__all__ = ["Period", "asks_present", "parse_time", "periods", "said_at"]
