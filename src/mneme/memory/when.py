"""Time expressions in memories: spotting them, and turning relative ones into dates."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

_ZH_DAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_DAY = {
    d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

ZH_TIME = re.compile(
    r"大后天|后天|明天|今天|今晚|昨天|前天|[上下这本]个?(?:周|星期|礼拜)[一二三四五六日天]?|[上下这本]个?月|"
    r"周末|每天|每晚|每周|每个?星期|每个?月|每年|天天|平时|一般|经常|早上|上午|中午|下午|晚上|"
    r"去年|今年|明年|前年|最近|刚才|刚刚|\d{1,2}月\d{1,2}[日号]|[零一二三四五六七八九十\d]{1,3}点|"
    r"(?:周|星期|礼拜)[一二三四五六日天]"
)
"""A Chinese time expression (relative day, week, month, year, routine, clock time)."""

EN_TIME = re.compile(
    r"\b(?:the day after tomorrow|tomorrow|today|tonight|yesterday|this (?:morning|afternoon|evening)|"
    r"(?:next|last|this) (?:week(?:end)?|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"on (?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends?|the weekends?)|"
    r"every (?:day|night|morning|evening|week(?:end)?|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"weekends|recently|lately|just|\d+ (?:days?|weeks?|months?|years?) ago|a (?:few )?(?:days?|weeks?|months?|years?) ago|"
    r"at \d{1,2}(?::\d{2})? ?(?:am|pm)?|in (?:19|20)\d{2}|usually|always|(?:in|on) (?:january|february|march|april|may|june|july|august|september|october|november|december)\b(?: \d{1,2})?)\b",
    re.I,
)
"""An English time expression (relative day, week, month, year, routine, clock time)."""


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month(day: date, delta: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + delta
    return index // 12, index % 12 + 1


def _zh_rules(
    today: date,
) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, date | None]]]]:
    def day(n: int) -> Callable[[re.Match[str]], tuple[str, date | None]]:
        d = today + timedelta(days=n)
        return lambda m: (d.isoformat(), d)

    def week_day(m: re.Match[str]) -> tuple[str, date | None]:
        shift = {"上": -7, "下": 7}.get(m.group(1), 0)
        d = _monday(today) + timedelta(days=shift + _ZH_DAY[m.group(2)])
        return d.isoformat(), d

    def week(m: re.Match[str]) -> tuple[str, date | None]:
        shift = {"上": -7, "下": 7}.get(m.group(1), 0)
        return f"{(_monday(today) + timedelta(days=shift)).isoformat()}那一周", None

    def month(m: re.Match[str]) -> tuple[str, date | None]:
        year, mon = _month(today, {"上": -1, "下": 1}.get(m.group(1), 0))
        return f"{year}年{mon}月", None

    def year(n: int) -> Callable[[re.Match[str]], tuple[str, date | None]]:
        return lambda m: (f"{today.year + n}年", None)

    return [
        (re.compile("大后天"), day(3)),
        (re.compile("后天"), day(2)),
        (re.compile("明天"), day(1)),
        (re.compile("前天"), day(-2)),
        (re.compile("昨天"), day(-1)),
        (re.compile("今天"), day(0)),
        (re.compile(r"([上下这本])个?(?:周|星期|礼拜)([一二三四五六日天])"), week_day),
        (re.compile(r"([上下这本])个?(?:周|星期|礼拜)(?!末)"), week),
        (re.compile(r"([上下这本])个?月"), month),
        (re.compile("前年"), year(-2)),
        (re.compile("去年"), year(-1)),
        (re.compile("明年"), year(1)),
        (re.compile("今年(?!\\d)"), year(0)),
    ]


def _en_rules(
    today: date,
) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, date | None]]]]:
    def day(n: int) -> Callable[[re.Match[str]], tuple[str, date | None]]:
        d = today + timedelta(days=n)
        return lambda m: (f"on {d.isoformat()}", d)

    def week_day(m: re.Match[str]) -> tuple[str, date | None]:
        shift = {"last": -7, "next": 7}.get(m.group(1).lower(), 0)
        d = _monday(today) + timedelta(days=shift + _EN_DAY[m.group(2).lower()])
        return f"on {d.isoformat()}", d

    def week(m: re.Match[str]) -> tuple[str, date | None]:
        shift = {"last": -7, "next": 7}.get(m.group(1).lower(), 0)
        return f"the week of {(_monday(today) + timedelta(days=shift)).isoformat()}", None

    def month(m: re.Match[str]) -> tuple[str, date | None]:
        year, mon = _month(today, {"last": -1, "next": 1}.get(m.group(1).lower(), 0))
        return f"in {_MONTHS[mon - 1]} {year}", None

    def year(m: re.Match[str]) -> tuple[str, date | None]:
        return f"in {today.year + {'last': -1, 'next': 1}.get(m.group(1).lower(), 0)}", None

    def ago(m: re.Match[str]) -> tuple[str, date | None]:
        n = int(m.group(1)) if m.group(1).isdigit() else 1
        unit = m.group(2).lower().rstrip("s")
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        d = today - timedelta(days=days)
        return (
            (f"on {d.isoformat()}", d) if unit in ("day", "week") else (f"around {d.strftime('%B %Y')}", None)
        )

    days = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    return [
        (re.compile(r"\bthe day after tomorrow\b", re.I), day(2)),
        (re.compile(r"\bthe day before yesterday\b", re.I), day(-2)),
        (re.compile(r"\btomorrow\b", re.I), day(1)),
        (re.compile(r"\byesterday\b", re.I), day(-1)),
        (re.compile(r"\b(?:today|tonight)\b", re.I), day(0)),
        (re.compile(rf"\b(last|next|this) ({days})\b", re.I), week_day),
        (re.compile(r"\b(last|next|this) week\b", re.I), week),
        (re.compile(r"\b(last|next|this) month\b", re.I), month),
        (re.compile(r"\b(last|next|this) year\b", re.I), year),
        (re.compile(r"\b(\d+|a) (days?|weeks?|months?|years?) ago\b", re.I), ago),
    ]


def resolve(text: str, now: datetime, *, chinese: bool) -> tuple[str, date | None]:
    """Replace the first relative time expression of a text by an absolute one.

    "我昨天去了读书会" said on 2024-05-08 becomes "我2024-05-07去了读书会"; "I adopted a puppy
    last week" becomes "I adopted a puppy the week of 2024-04-29". A memory read months later
    must not say "yesterday".

    Args:
        text: The memory text.
        now: When it was said.
        chinese: Use the Chinese expressions (else the English ones).

    Returns:
        The text with the expression replaced, and the day it names when it names one day.
    """
    today = now.date()
    rules = _zh_rules(today) if chinese else _en_rules(today)
    for pattern, render in rules:
        m = pattern.search(text)
        if m:
            absolute, day = render(m)
            return text[: m.start()] + absolute + text[m.end() :], day
    return text, None
