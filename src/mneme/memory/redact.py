"""Redaction of personal data before anything is stored, by policy (keep, mask or drop).

Detection runs on a normalized view of the text (NFKC: full-width digits and letters, `＠`,
ideographic spaces; dash-like characters; zero-width characters removed; runs of Chinese
numerals read as digits), and what it finds is replaced in the original text, so the rest of
the text keeps its own punctuation. Numbers are read with the separators people write
(spaces, dashes, dots, parentheses) and checked where the format has a check (resident ID
check digit, Luhn, IBAN mod 97, HK and Taiwan ID check letters), so that an order number is
not taken for a card; a number without a check counts only in its usual shape or after a
word that names it (`电话`, `card number`, `护照`).

A home address is the part that finds the door: a street with its number, a compound with
its building, unit or room (`文三路478号`, `阳光花园3栋2单元501室`, `221B Baker Street, Apt 4`).
The city or district before it is a useful fact about the user and stays (`杭州市西湖区`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

from mneme.errors import InputError

Policy = Literal["keep", "mask", "drop"]
"""`keep`: stored as said. `mask`: replaced by a marker that keeps the last characters
(`[phone ****5678]`), so the model knows the value exists. `drop`: removed, leaving a bare
marker (`[phone removed]`); a memory that is only that value (a phone field) is not stored."""

POLICIES: tuple[str, ...] = ("keep", "mask", "drop")
KINDS: tuple[str, ...] = (
    "cn_id",
    "bank_card",
    "passport",
    "phone",
    "email",
    "address",
    "plate",
    "birth_date",
)
"""Kinds of personal data, each with its own policy. `cn_id` covers identity numbers (Chinese
resident ID in its 18- and 15-digit forms, Hong Kong and Taiwan ID, US SSN); `bank_card`
covers card and account numbers (Luhn, IBAN, an account number named as one); `passport`
covers passport and driving licence numbers; `plate` Chinese licence plates; `birth_date` a
full date of birth (its year is masked: the day and month stay, a birthday is worth
remembering)."""
NEVER_IN_CLEAR: tuple[str, ...] = ("cn_id", "bank_card", "passport")
"""Kinds of data that are never stored in clear, whatever the policy says."""
LABELS: dict[str, str] = {
    "ID": "cn_id",
    "card": "bank_card",
    "account": "bank_card",
    "passport": "passport",
    "phone": "phone",
    "email": "email",
    "address": "address",
    "licence": "passport",
    "plate": "plate",
    "birthday": "birth_date",
}
"""Marker label (`[card ****3446]`) -> kind."""
MARKER = re.compile(r"\[(ID|card|account|passport|licence|phone|email|address|plate|birthday) [^\]]*\]")
"""A redaction marker in a stored text."""

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_PROVINCES = frozenset(
    {*map(str, [11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46])}
    | {*map(str, [50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83, 91])}
)

# -- the normalized view ---------------------------------------------------------------------

_DASHES = dict.fromkeys(map(ord, "‐‑‒–—―−﹣－ー"), "-")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), "")
_EXTRA = {**_DASHES, **_ZERO_WIDTH, ord("。"): ".", ord("．"): ".", ord("･"): ".", ord("·"): "."}
_CN_DIGITS = {"〇": "0", "零": "0", "一": "1", "幺": "1", "二": "2", "两": "2", "三": "3", "四": "4"}
_CN_DIGITS |= {"五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
_CN_RUN = re.compile(
    r"[〇零一幺二两三四五六七八九][〇零一幺二两三四五六七八九\s-]{5,}[〇零一幺二两三四五六七八九]"
)


@dataclass
class _View:
    """A normalized copy of a text, with the original position of each of its characters."""

    text: str
    origin: list[int]

    @classmethod
    def of(cls, text: str) -> _View:
        if text.isascii():  # NFKC changes nothing in ASCII
            return cls(text, list(range(len(text))))
        spelled = {i for m in _CN_RUN.finditer(text) for i in range(m.start(), m.end())}
        out: list[str] = []
        origin: list[int] = []
        for i, ch in enumerate(text):
            if i in spelled and ch in _CN_DIGITS:
                norm = _CN_DIGITS[ch]
            else:
                norm = unicodedata.normalize("NFKC", ch).translate(_EXTRA)
            for c in norm:
                out.append(c)
                origin.append(i)
        return cls("".join(out), origin)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the normalized span `[start, end)`."""
        return self.origin[start], self.origin[end - 1] + 1


# -- checks ------------------------------------------------------------------------------------


def valid_cn_id(number: str) -> bool:
    """Whether an 18-character Chinese resident ID number has a valid check digit."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


def _valid_date(yyyy: int, mm: int, dd: int) -> bool:
    return 1900 <= yyyy <= 2100 and 1 <= mm <= 12 and 1 <= dd <= 31


def _cn_id_18(digits: str) -> bool:
    return (
        valid_cn_id(digits)
        and digits[:2] in _PROVINCES
        and _valid_date(int(digits[6:10]), int(digits[10:12]), int(digits[12:14]))
    )


def _cn_id_15(digits: str) -> bool:
    """The first-generation ID (15 digits, no check digit): province code and a real date."""
    return (
        len(digits) == 15
        and digits.isdigit()
        and digits[:2] in _PROVINCES
        and _valid_date(1900 + int(digits[6:8]), int(digits[8:10]), int(digits[10:12]))
    )


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn check used by bank card numbers."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban_ok(value: str) -> bool:
    raw = re.sub(r"\s", "", value).upper()
    if not 15 <= len(raw) <= 34:
        return False
    moved = raw[4:] + raw[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _hk_id_ok(value: str) -> bool:
    m = re.fullmatch(r"([A-Z]{1,2})(\d{6})\(?([0-9A])\)?", value.upper())
    if not m:
        return False
    letters = m.group(1).rjust(2, " ")
    total = sum((9 - i) * (36 if c == " " else ord(c) - 55) for i, c in enumerate(letters))
    total += sum((7 - i) * int(d) for i, d in enumerate(m.group(2)))
    check = (11 - total % 11) % 11
    return m.group(3) == ("A" if check == 10 else str(check))


_TW_LETTERS = "ABCDEFGHJKLMNPQRSTUVXYWZIO"


def _tw_id_ok(value: str) -> bool:
    v = value.upper()
    if not re.fullmatch(r"[A-Z][12]\d{8}", v):
        return False
    code = _TW_LETTERS.index(v[0]) + 10
    total = (
        code // 10 + (code % 10) * 9 + sum(int(d) * w for d, w in zip(v[1:9], range(8, 0, -1), strict=True))
    )
    return (total + int(v[9])) % 10 == 0


def _ssn_ok(digits: str) -> bool:
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# -- detectors -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """One value of personal data in a normalized text."""

    kind: str
    label: str
    start: int
    end: int
    value: str


_NUM = re.compile(
    r"(?<![0-9A-Za-z_])(?:\+|00)?\s?(?:\(\d{1,4}\)\s?)?\d(?:(?:\s?[.\-/]\s?|\s|\)\s?|\s?\()?\d)*[Xx]?(?![0-9A-Za-z_])"
)
"""A run of digits with the single separators people write inside numbers (and an ID's X)."""

_CTX_PHONE = re.compile(
    r"(电话|手机|座机|固话|联系方式|致电|打给|打我|微信|whatsapp|signal|telegram|"
    r"\bphone|\btel\b|\bmobile|\bcell\b|\bcall|\btext me|\bfax|\breach me|号码|"
    r"\b(?:my|new|your|his|her|our|their)\s+(?:new\s+|contact\s+|home\s+|work\s+)?number\b)",
    re.I,
)
_CTX_CARD = re.compile(
    r"(卡号|银行卡|信用卡|储蓄卡|借记卡|账号|帐号|账户|帐户|\bcard|\baccount|\bacct\b|\biban\b)", re.I
)
_CTX_ORDER = re.compile(
    r"(订单|单号|运单|快递|物流|发票|流水号|\border|\btracking|\binvoice|\bref\b|\breference)", re.I
)
_CTX_ID = re.compile(
    r"(身份证|证件号|身份号|社安号|社会安全号|社會安全號|社保号|\bID\b|\b(?:my|your|his|her|their) social\b(?!\s+(?:media|life|work|skills?|circle|events?))|\bidentity|\bSSN\b|social security|\bnational id)",
    re.I,
)
_CTX_PASSPORT = re.compile(r"(护照|passport)", re.I)
_CTX_LICENCE = re.compile(
    r"(驾照|驾驶证|driver'?s? licen[cs]e|driving licen[cs]e|licen[cs]e\s*(?:no\b|number|#)|\bDL\b)", re.I
)
_CTX_BIRTH = re.compile(r"(生日|出生|生于|\bDOB\b|D\.O\.B|date of birth|birthday|\bborn\b)", re.I)
_CONTEXT_CHARS = 24
"""A word that names a number counts when it ends at most this many characters before it."""
_WORD_CHARS = 24
"""How far before that a word naming a number may start ("social security number is ...")."""
_AFTER_CHARS = 3
"""A word that names a date of birth may also follow it this closely ("1994年8月21日出生")."""

_PASSPORT_CN = re.compile(
    r"(?<![0-9A-Za-z])(?:[EG](?:[\s-]?\d{4}[\s-]?\d{4})|E[A-HJ-NP-Z]\d{7}|[DSP]E?\d{7})(?![0-9A-Za-z])"
)
"""A Chinese passport number (`E12345678`, also written in groups: `E 1234 5678`)."""
_LICENCE_CTX = re.compile(
    r"(?<![0-9A-Za-z])(?:[A-Z]{0,2}(?:\d{6,14}|\d{3,5}(?:[\s-]\d{3,5}){1,3})"
    r"|(?=(?:[A-Z]*\d){4})[A-Z0-9]{10,18})(?![0-9A-Za-z])"
)
"""A licence number after a word naming it, in one piece or in groups (`123 456 789`), or
letters and digits mixed as in a UK licence (`MORGA657054SM9IJ`)."""
_PLATE = re.compile(
    r"[京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼][A-HJ-NP-Z][\s.-]?[A-HJ-NP-Z0-9]{5,6}(?![0-9A-Za-z])"
)
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"(?<!\d)(?:(?P<y1>(?:19|20)\d{{2}})\s?[-/.年]\s?\d{{1,2}}\s?[-/.月]\s?\d{{1,2}}日?"
    rf"|\d{{1,2}}[-/.]\d{{1,2}}[-/.](?P<y2>(?:19|20)\d{{2}})"
    rf"|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?P<y3>(?:19|20)\d{{2}})"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS},?\s+(?P<y4>(?:19|20)\d{{2}}))(?!\d)",
    re.I,
)
_PASSPORT_CTX = re.compile(
    r"(?<![0-9A-Za-z])[A-Z]{0,2}(?:\d{6,9}|\d{3}[\s-]\d{3}[\s-]\d{3}|\d{4}[\s-]\d{4,5})[A-Z]?(?![0-9A-Za-z])",
    re.I,
)
"""A passport number after a word naming it, in one piece or in groups (`910 274 635`)."""
_HK_ID = re.compile(r"(?<![0-9A-Za-z])[A-Z]{1,2}\d{6}\(?[0-9A]\)?(?![0-9A-Za-z])")
_TW_ID = re.compile(r"(?<![0-9A-Za-z])[A-Z][12]\d{8}(?![0-9A-Za-z])")
_IBAN = re.compile(r"(?<![0-9A-Za-z])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![0-9A-Za-z])")

_TLD = r"(?:com|net|org|edu|gov|cn|io|co|uk|de|fr|jp|me|info|biz|hk|tw|us|ca|au|sg|ai|app|dev)"
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_AT_WORD = r"\s*(?:[(\[{<]\s*(?:at|艾特|@)\s*[)\]}>]|艾特|#)\s*"
"""`(at)`, `[at]`, `艾特`, `#`: an @ written so that address harvesters miss it."""
_AT_ANY = r"(?:\s*(?:[(\[{<]\s*(?:at|艾特|@)\s*[)\]}>]|艾特|#|@)\s*|\s+at\s+)"
_DOT_WORD = r"(?:\s*(?:[(\[{<]\s*(?:dot|点)\s*[)\]}>]|点)\s*|\s+dot\s+)"
_DOT_ANY = rf"(?:{_DOT_WORD}|\.)"
_USER = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*"
_LABEL = r"[A-Za-z0-9][A-Za-z0-9-]*"
_EMAIL_OBFUSCATED = re.compile(
    rf"{_USER}{_AT_WORD}{_LABEL}(?:{_DOT_ANY}{_LABEL})*?{_DOT_ANY}{_TLD}\b"
    rf"|{_USER}\s+at\s+{_LABEL}(?:{_DOT_WORD}{_LABEL})*?{_DOT_WORD}{_TLD}\b",
    re.I,
)

_CJK = "\u4e00-\u9fff"
_ROAD_SUFFIX = "大道|大街|胡同|路|街|道|巷|弄|里"
_COMPOUND_SUFFIX = "小区|社区|花园|家园|公寓|新村|大厦|广场|苑|府|湾|庭|园|村|城|中心"
_ZH_ROAD = rf"[{_CJK}A-Za-z0-9]{{1,10}}?(?:{_ROAD_SUFFIX})\s*\d+(?:-\d+)?(?:号|號)(?:院|楼|樓)?"
_ZH_COMPOUND = rf"[{_CJK}A-Za-z0-9]{{2,12}}?(?:{_COMPOUND_SUFFIX})"
_ZH_PART = (
    r"(?:\d+|[A-Za-z]|[一二三四五六七八九十]+)\s*(?:号楼|號樓|栋|棟|幢|座|单元|單元|层|楼|樓|室|房|户|號|号)"
)
_ZH_SECTION = r"(?:[一二三四五六七八九十\d]{1,3}\s*(?:区|區|期|组团|組團|街区))"
"""A section of a housing estate (`翠苑一区`, `二期`), between its name and the building."""
_ZH_ROOM = r"(?:\d{1,4}(?:-\d{1,4}){1,3}|[A-Za-z]?\d{2,5}(?:室|房)?)(?![\d-])"
_ZH_ADDRESS = re.compile(
    rf"(?:{_ZH_ROAD}|{_ZH_COMPOUND}\s*{_ZH_SECTION}?\s*{_ZH_PART}|门牌号?\s*[:：是为]?\s*\d+\s*(?:号|號)?)"
    rf"(?:[\s,，、-]*(?:{_ZH_SECTION}|{_ZH_PART}|{_ZH_ROOM}|{_ZH_COMPOUND}(?=\s*[0-9A-Za-z一二三四五六七八九十])))*"
)
_ZH_SUFFIX = re.compile(rf"(?:{_ROAD_SUFFIX}|{_COMPOUND_SUFFIX}|门牌)")
_ZH_STOP = re.compile(
    r".*(?:省|市|区|區|县|縣|镇|鎮|乡|鄉|街道|住在|住|地址|寄到|送到|搬到|在|是|为|[:：,，.\s])"
)

_EN_STREET = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
    r"Crescent|Close|Square|Sq|Highway|Hwy|Parkway|Pkwy|Circle|Cir|Row|Alley|Gardens|Walk)\b\.?"
)
_EN_UNIT = (
    r"(?:(?:Apt|Apartment|Suite|Ste|Unit|Flat|Room|Rm|Floor|Fl)\.?\s*#?\s*[A-Za-z0-9-]+|#\s*[A-Za-z0-9-]+)"
)
_EN_ADDRESS = re.compile(
    rf"(?:\b{_EN_UNIT},?\s+)?(?<![0-9A-Za-z])\d{{1,6}}[A-Za-z]?(?:-\d{{1,4}})?\s+"
    rf"(?:(?:[A-Z][A-Za-z'.-]*|\d+(?:st|nd|rd|th))\s+){{1,4}}{_EN_STREET}(?:\s+(?:NW|NE|SW|SE))?(?:,?\s*{_EN_UNIT})?"
)
_EN_ADDRESS_LOOSE = re.compile(
    rf"(?i:\b(?:live at|lives at|living at|address is|address:|ship to|deliver to|send it to|send to|mail to)\s+)"
    rf"(\d{{1,6}}[A-Za-z]?\s+(?:[A-Za-z'.-]+\s+){{1,4}}(?i:{_EN_STREET})(?:,?\s*(?i:{_EN_UNIT}))?)"
)


def _context(view: str, start: int, pattern: re.Pattern[str]) -> bool:
    """Whether a word of `pattern` ends at most `_CONTEXT_CHARS` characters before `start`."""
    window = view[max(0, start - _CONTEXT_CHARS - _WORD_CHARS) : start]
    return any(m.end() >= len(window) - _CONTEXT_CHARS for m in pattern.finditer(window))


def _after(view: str, end: int, pattern: re.Pattern[str]) -> bool:
    """Whether a word of `pattern` starts at most `_AFTER_CHARS` characters after `end`."""
    m = pattern.search(view[end : end + _AFTER_CHARS + 16])
    return m is not None and m.start() <= _AFTER_CHARS


def _groups(raw: str) -> list[int]:
    return [len(g) for g in re.split(r"[^0-9Xx]+", raw.lstrip("+(")) if g]


_CARD_ISSUER = re.compile(r"4|5[1-5]|2[2-7]|3[47]|62|6011|65")
"""The first digits of the cards most people carry (Visa, Mastercard, Amex, UnionPay, Discover)."""
_GLUED = re.compile(r"(?<=[A-Za-z_])\d{15,18}[Xx]?|\d{15,18}[Xx]?(?=[A-Za-z_])")
"""A long run of digits written against letters, which the word-bounded number reader skips."""


def _card_shape(raw: str) -> bool:
    """Whether digits are grouped as a card number is.

    That is in one piece or in groups of four (4-6-5 for Amex); a card issuer's 15 to 19
    digits (UnionPay's run to 19) count however they are grouped.
    """
    groups = _groups(raw)
    digits = re.sub(r"\D", "", raw)
    if len(groups) == 1 or (15 <= len(digits) <= 19 and _CARD_ISSUER.match(digits)):
        return True
    if groups in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4


def _date_like(raw: str) -> bool:
    return bool(re.fullmatch(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", raw.strip()))


def _public(digits: str) -> bool:
    """Numbers published for everyone: toll-free 1-800 numbers, Chinese 400/800 service lines."""
    national = digits[1:] if len(digits) == 11 and digits[0] == "1" else digits
    if len(national) == 10 and national[:3] in ("800", "833", "844", "855", "866", "877", "888"):
        return True
    return len(digits) == 10 and digits[:3] in ("400", "800")


def _phone(raw: str, digits: str) -> bool:
    """Phone numbers in the shapes they are written without a word naming them."""
    raw = raw.strip()
    if raw.startswith(("+", "00")):
        national = digits[2:] if raw.startswith("00") else digits
        return 8 <= len(national) <= 15
    if re.fullmatch(r"(?:86)?1[3-9]\d{9}", digits):
        return True
    # Chinese landline: 0 + area code + 7-8 digits, with a separator, parentheses, or a big city's code
    if re.fullmatch(r"\(?0\d{2,3}\)?[ -]?\d{3,4}[ -]?\d{4}", raw):
        return bool(re.search(r"[ ()-]", raw)) or bool(re.fullmatch(r"0(?:10|2\d)\d{8}", digits))
    # North American: (415) 555-2671, 415-555-2671, 415.555.2671, 1-415-555-2671
    return bool(re.fullmatch(r"(?:1[ .-]?)?(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}", raw))


def _number_kind(raw: str, view: str, start: int) -> tuple[str, str] | None:
    """What a run of digits is (kind, label), or None for an ordinary number."""
    digits = re.sub(r"[^0-9Xx]", "", raw)
    if "X" in digits[:-1].upper():
        return None
    intl = raw.startswith(("+", "00"))
    if len(digits) == 18 and _cn_id_18(digits):
        return "cn_id", "ID"
    if digits[-1] in "Xx":  # an ID number only, if not a valid one then one named as one (a typo in it)
        return ("cn_id", "ID") if len(digits) in (15, 18) and _context(view, start, _CTX_ID) else None
    if len(digits) == 15 and not intl and _cn_id_15(digits):
        return "cn_id", "ID"
    ssn_shape = re.fullmatch(r"\d{3}([- ])\d{2}\1\d{4}", raw) or _context(view, start, _CTX_ID)
    if len(digits) == 9 and ssn_shape and _ssn_ok(digits):
        return "cn_id", "ID"
    card_ctx = _context(view, start, _CTX_CARD)
    order_ctx = not card_ctx and _context(view, start, _CTX_ORDER)
    if (
        not intl
        and not order_ctx
        and 13 <= len(digits) <= 19
        and luhn_ok(digits)
        and (_card_shape(raw) or card_ctx)
    ):
        return "bank_card", "card"
    if not intl and 12 <= len(digits) <= 19 and card_ctx:
        return "bank_card", "card"
    if _public(digits):
        return None
    if _phone(raw, digits):
        return "phone", "phone"
    if (
        7 <= len(digits) <= 15
        and _context(view, start, _CTX_PHONE)
        and not _context(view, start, _CTX_ORDER)
        and not _date_like(raw)
    ):
        return "phone", "phone"
    if len(digits) in (15, 18) and _context(view, start, _CTX_ID):
        return "cn_id", "ID"
    return None


def _zh_address_start(view: str, start: int, end: int) -> int:
    """Move an address's start past the city, district or verb that its name swallowed."""
    head = view[start:end]
    m = _ZH_SUFFIX.search(head)
    stop = _ZH_STOP.match(head[: m.start() if m else 0])
    return start + (stop.end() if stop else 0)


def detect(text: str) -> list[Found]:
    """Every value of personal data in a normalized text (non-overlapping, in order)."""
    found: list[Found] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, label: str, start: int, end: int) -> None:
        while start < end and text[start] in " ,，、":
            start += 1
        while end > start and text[end - 1] in " ,，、.-":
            end -= 1
        if start >= end or any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append(Found(kind, label, start, end, text[start:end]))

    for rx in (_EMAIL, _EMAIL_OBFUSCATED):
        for m in rx.finditer(text):
            add("email", "email", m.start(), m.end())
    for m in _IBAN.finditer(text):
        if _iban_ok(m.group(0)):
            add("bank_card", "account", m.start(), m.end())
    for rx, check in ((_HK_ID, _hk_id_ok), (_TW_ID, _tw_id_ok)):
        for m in rx.finditer(text):
            if check(m.group(0)):
                add("cn_id", "ID", m.start(), m.end())
    for m in _PASSPORT_CN.finditer(text):
        add("passport", "passport", m.start(), m.end())
    for m in _PASSPORT_CTX.finditer(text):
        if _context(text, m.start(), _CTX_PASSPORT):
            add("passport", "passport", m.start(), m.end())
    for m in _LICENCE_CTX.finditer(text):
        if _context(text, m.start(), _CTX_LICENCE) and not _cn_id_18(m.group(0)):
            add("passport", "licence", m.start(), m.end())
    for m in _PLATE.finditer(text):
        add("plate", "plate", m.start(), m.end())
    for m in _DATE.finditer(text):
        if _context(text, m.start(), _CTX_BIRTH) or _after(text, m.end(), _CTX_BIRTH):
            add("birth_date", "birthday", m.start(), m.end())
    for m in _NUM.finditer(text):
        raw = m.group(0).strip()
        if sum(c.isdigit() for c in raw) < 7:
            continue
        begin = m.start() + m.group(0).index(raw)
        kind = _number_kind(raw, text, begin)
        if kind is not None:
            add(kind[0], kind[1], begin, begin + len(raw))
    for m in _GLUED.finditer(text):  # "card4539148803436467thanks": no boundary around it
        kind = _number_kind(m.group(0), text, m.start())
        if kind is not None and kind[0] in NEVER_IN_CLEAR:  # an ID or a card, by its check digits
            add(kind[0], kind[1], m.start(), m.end())
    for m in _ZH_ADDRESS.finditer(text):
        add("address", "address", _zh_address_start(text, m.start(), m.end()), m.end())
    for m in _EN_ADDRESS.finditer(text):
        add("address", "address", m.start(), m.end())
    for m in _EN_ADDRESS_LOOSE.finditer(text):
        add("address", "address", m.start(1), m.end(1))
    found.sort(key=lambda f: f.start)
    merged: list[Found] = []
    for f in found:  # a street and the building on it are one address
        prev = merged[-1] if merged else None
        if prev and prev.kind == f.kind == "address" and not text[prev.end : f.start].strip(" ,，、-"):
            merged[-1] = Found("address", "address", prev.start, f.end, text[prev.start : f.end])
        else:
            merged.append(f)
    return merged


# -- policy ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RedactionPolicy:
    """What happens to each kind of personal data found in a memory."""

    cn_id: Policy = "mask"
    bank_card: Policy = "mask"
    phone: Policy = "mask"
    email: Policy = "mask"
    passport: Policy = "mask"
    address: Policy = "mask"
    plate: Policy = "mask"
    birth_date: Policy = "mask"

    def __post_init__(self) -> None:
        """Check the policies; identity, card and passport numbers are never kept in clear."""
        for name in KINDS:
            rule = getattr(self, name)
            if rule not in POLICIES:
                raise InputError(
                    f"mneme: redaction policy for {name} must be one of {POLICIES}, not {rule!r}"
                )
            if name in NEVER_IN_CLEAR and rule == "keep":
                raise InputError(f"mneme: {name} cannot be kept in clear; use 'mask' or 'drop'")

    @classmethod
    def from_context(cls, context: Any) -> RedactionPolicy:
        """The policy a `Context` (or anything with `redact_*` attributes) asks for."""
        rules: dict[str, Any] = {kind: getattr(context, f"redact_{kind}", "mask") for kind in KINDS}
        return cls(**rules)


@dataclass
class Redaction:
    """The result of redacting one text."""

    text: str
    found: list[str] = field(default_factory=list)
    """Kinds of data found (`cn_id`, `bank_card`, `phone`, `email`, ...), kept or not."""
    hidden: list[str] = field(default_factory=list)
    """Kinds masked or removed: the text shows a marker instead of the value."""
    dropped: list[str] = field(default_factory=list)
    """Kinds removed entirely (policy `drop`)."""
    values: list[str] = field(default_factory=list)
    """The values masked or removed, as written (kept in memory only: never stored)."""

    @property
    def drop(self) -> bool:
        """Whether the policy removed some value entirely."""
        return bool(self.dropped)


def _mask_digits(value: str, keep: int = 4) -> str:
    digits = re.sub(r"[^0-9A-Za-z]", "", value)
    return "*" * max(0, len(digits) - keep) + digits[-keep:]


def _mask_email(value: str) -> str:
    if "@" in value:
        user, _, domain = value.partition("@")
    else:
        parts = re.split(_AT_ANY, value, maxsplit=1, flags=re.I)
        user, domain = parts[0], parts[1] if len(parts) > 1 else ""
    domain = re.sub(_DOT_WORD, ".", domain, flags=re.I).strip()
    return f"[email {user.strip()[:1]}***@{domain}]"


def _marker(found: Found, rule: Policy) -> str:
    if rule == "drop":
        return f"[{found.label} removed]"
    if found.kind == "email":
        return _mask_email(found.value)
    if found.kind == "address":
        return "[address ***]"
    if found.kind == "birth_date":  # the day and month stay: a birthday is worth remembering
        return "[birthday " + re.sub(r"(?:19|20)\d{2}", "****", found.value) + "]"
    return f"[{found.label} {_mask_digits(found.value)}]"


def redact(text: str, policy: RedactionPolicy | None = None) -> Redaction:
    """Mask or remove personal data in a text according to a policy.

    Masked values keep a marker (`[ID ****002X]`, `[card ****3446]`, `[phone ****5678]`,
    `[email a***@example.com]`, `[passport ****5678]`, `[address ***]`) so the model knows the
    value exists without seeing it; dropped ones leave `[phone removed]`. Existing markers
    are left as they are, so redacting twice changes nothing.

    Args:
        text: The memory text.
        policy: What to do with each kind; the default masks everything.

    Returns:
        The redacted text, and what was found, hidden and dropped.
    """
    policy = policy or RedactionPolicy()
    out = Redaction(text=text)
    if not text.strip():
        return out
    view = _View.of(text)
    markers = [(m.start(), m.end()) for m in MARKER.finditer(view.text)]
    pieces: list[str] = []
    last = 0
    for found in detect(view.text):
        if any(s < found.end and found.start < e for s, e in markers):
            continue
        rule: Policy = getattr(policy, found.kind)
        out.found.append(found.kind)
        if rule == "keep":
            continue
        out.hidden.append(found.kind)
        out.values.append(found.value)
        if rule == "drop":
            out.dropped.append(found.kind)
        start, end = view.span(found.start, found.end)
        pieces += [text[last:start], _marker(found, rule)]
        last = end
    if pieces:
        out.text = "".join(pieces) + text[last:]
    return out


def redact_field(value: str, text: str, policy: RedactionPolicy | None = None) -> str:
    """The structured value of a memory, masked the way its text was.

    A value alone ("548213976") often lacks the words that made its text's number personal
    data ("my passport number is 548213976"); it is masked like the value found in the text.
    """
    policy = policy or RedactionPolicy()
    own = redact(value, policy).text
    if own != value:
        return own
    squash = re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", value)).upper()
    for found in detect(_View.of(text).text):
        rule: Policy = getattr(policy, found.kind)
        if rule != "keep" and squash and squash == re.sub(r"[\W_]+", "", found.value).upper():
            return _marker(found, rule)
    return value


def redact_text(text: str, policy: RedactionPolicy | None = None) -> str:
    """Only the redacted text (for titles, summaries, ids)."""
    return redact(text, policy).text


def redact_value(value: Any, policy: RedactionPolicy | None = None, *, depth: int = 0) -> Any:
    """Redact every string inside a JSON-like value (metadata): dict values, list items.

    Keys are kept as they are (they name fields, they do not hold personal data).
    """
    if isinstance(value, str):
        return redact(value, policy).text
    if depth > 20:
        return value
    if isinstance(value, dict):
        return {k: redact_value(v, policy, depth=depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, policy, depth=depth + 1) for v in value]
    return value


def only_markers(text: str) -> bool:
    """Whether nothing but redaction markers, labels and punctuation is left in a text."""
    rest = MARKER.sub("", text)
    rest = re.sub(
        r"(?i)电话|手机号?|号码|邮箱|身份证号?|银行卡号?|卡号|护照号?|地址|住址|车牌号?|生日|驾照|phone|number|email|"
        r"e-mail|passport|licen[cs]e|address|plate|birthday|id|card|my|is|我的|是|[:：\s,，.。]",
        "",
        rest,
    )
    return not rest.strip()


def values_in(text: str, kind: str) -> list[str]:
    """The values of one kind of personal data in a text, as written there (`detect`'s reading).

    The extractor reads a phone or an e-mail to keep as a profile field with this, so that it
    never calls an ID, a card or an order number a phone.
    """
    if not text.strip():
        return []
    view = _View.of(text)
    out = []
    for found in detect(view.text):
        if found.kind == kind:
            start, end = view.span(found.start, found.end)
            out.append(text[start:end])
    return out


def kinds_in(text: str) -> list[str]:
    """Kinds of personal data a text shows only as a redaction marker."""
    return sorted({LABELS[m.group(1)] for m in MARKER.finditer(text)})
