"""Redaction of personal data before anything is stored, by policy (keep, mask or drop)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mneme.errors import InputError

Policy = Literal["keep", "mask", "drop"]
"""`keep`: stored as said. `mask`: replaced by a marker that keeps the last characters
(`[phone ****5678]`), so the model knows the value exists. `drop`: removed, leaving a bare
marker (`[phone removed]`); a memory that is only that value (a phone field) is not stored."""

POLICIES: tuple[str, ...] = ("keep", "mask", "drop")
NEVER_IN_CLEAR: tuple[str, ...] = ("cn_id", "bank_card")
"""Kinds of data that are never stored in clear, whatever the policy says."""

_CN_ID = re.compile(
    r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
)
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PHONE = re.compile(
    r"(?<![\d+])(?:\+?86[- ]?)?1[3-9]\d{9}(?!\d)|(?<![\w+])\+\d{1,3}[ -]?\d(?:[ -]?\d){6,12}(?!\d)"
)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# The look-behind starts a match only where a run of address characters starts: without it,
# every position of a long run (Chinese characters count as \w) was tried, scanning to the run's
# end each time, and a 100,000-character text took minutes. The matches are the same.

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_LABELS = {"cn_id": "ID", "bank_card": "card", "phone": "phone", "email": "email"}


def valid_cn_id(number: str) -> bool:
    """Whether an 18-character Chinese resident ID number has a valid check digit."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


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


def _card_ok(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


@dataclass(frozen=True)
class RedactionPolicy:
    """What happens to each kind of personal data found in a memory."""

    cn_id: Policy = "mask"
    bank_card: Policy = "mask"
    phone: Policy = "mask"
    email: Policy = "mask"

    def __post_init__(self) -> None:
        """Check the policies; identity and card numbers are never kept in clear."""
        for name in ("cn_id", "bank_card", "phone", "email"):
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
        return cls(
            cn_id=getattr(context, "redact_cn_id", "mask"),
            bank_card=getattr(context, "redact_bank_card", "mask"),
            phone=getattr(context, "redact_phone", "mask"),
            email=getattr(context, "redact_email", "mask"),
        )


@dataclass
class Redaction:
    """The result of redacting one text."""

    text: str
    found: list[str] = field(default_factory=list)
    """Kinds of data found (`cn_id`, `bank_card`, `phone`, `email`), kept or not."""
    hidden: list[str] = field(default_factory=list)
    """Kinds masked or removed: the text shows a marker instead of the value."""
    dropped: list[str] = field(default_factory=list)
    """Kinds removed entirely (policy `drop`)."""

    @property
    def drop(self) -> bool:
        """Whether the policy removed some value entirely."""
        return bool(self.dropped)


def _mask_digits(value: str, keep: int = 4) -> str:
    digits = re.sub(r"[^0-9Xx]", "", value)
    return "*" * max(0, len(digits) - keep) + digits[-keep:]


def _mask_email(value: str) -> str:
    user, _, domain = value.partition("@")
    return f"[email {user[:1]}***@{domain}]"


def redact(text: str, policy: RedactionPolicy | None = None) -> Redaction:
    """Mask or remove personal data in a text according to a policy.

    Masked values keep a marker (`[ID ****002X]`, `[card ****3446]`, `[phone ****5678]`,
    `[email a***@example.com]`) so the model knows the value exists without seeing it;
    dropped ones leave `[phone removed]`.

    Args:
        text: The memory text.
        policy: What to do with each kind; the default masks everything.

    Returns:
        The redacted text, and what was found, hidden and dropped.
    """
    policy = policy or RedactionPolicy()
    out = Redaction(text=text)

    def apply(kind: str, pattern: re.Pattern[str], check: Callable[[str], bool] | None = None) -> None:
        rule: Policy = getattr(policy, kind)

        def sub(m: re.Match[str]) -> str:
            raw = m.group(0)
            if check is not None and not check(raw):
                return raw
            out.found.append(kind)
            if rule == "keep":
                return raw
            out.hidden.append(kind)
            if rule == "drop":
                out.dropped.append(kind)
                return f"[{_LABELS[kind]} removed]"
            return _mask_email(raw) if kind == "email" else f"[{_LABELS[kind]} {_mask_digits(raw)}]"

        out.text = pattern.sub(sub, out.text)

    apply("cn_id", _CN_ID, valid_cn_id)
    apply("bank_card", _CARD, _card_ok)
    apply("phone", _PHONE)
    apply("email", _EMAIL)
    return out


def only_markers(text: str) -> bool:
    """Whether nothing but redaction markers, labels and punctuation is left in a text."""
    rest = re.sub(r"\[(?:ID|card|phone|email) [^\]]*\]", "", text)
    rest = re.sub(
        r"(?i)电话|手机号?|号码|邮箱|身份证号?|银行卡号?|卡号|phone|number|email|e-mail|id|card|my|is|我的|是|[:：\s,，.。]",
        "",
        rest,
    )
    return not rest.strip()
