"""Redaction of personal data before anything is stored, by policy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Policy = Literal["keep", "mask", "drop"]

_CN_ID = re.compile(
    r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
)
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PHONE = re.compile(
    r"(?<![\d+])(?:\+?86[- ]?)?1[3-9]\d{9}(?!\d)|(?<![\w+])\+\d{1,3}[ -]?\d(?:[ -]?\d){6,12}(?!\d)"
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


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


@dataclass(frozen=True)
class RedactionPolicy:
    """What happens to each kind of personal data found in a memory."""

    cn_id: Policy = "mask"
    bank_card: Policy = "mask"
    phone: Policy = "mask"
    email: Policy = "mask"

    def __post_init__(self) -> None:
        """Identity and card numbers are never stored in clear, whatever the setting."""
        for name in ("cn_id", "bank_card"):
            if getattr(self, name) == "keep":
                raise ValueError(f"mneme: {name} cannot be kept in clear; use 'mask' or 'drop'")


@dataclass
class Redaction:
    """The result of redacting one text."""

    text: str
    found: list[str]
    """Kinds of data found (`cn_id`, `bank_card`, `phone`, `email`)."""
    drop: bool
    """The policy says a memory with this data must not be stored at all."""


def _mask_digits(value: str, keep: int = 4) -> str:
    digits = re.sub(r"\D", "", value)
    return f"[{'*' * max(0, len(digits) - keep)}{digits[-keep:]}]"


def redact(text: str, policy: RedactionPolicy | None = None) -> Redaction:
    """Mask or flag personal data in a text according to a policy.

    Masked values keep a marker (`[身份证号已隐藏]`-style tags are language neutral here:
    `[ID ****1234]`) so the model knows the value exists without seeing it.

    Args:
        text: The memory text.
        policy: What to do with each kind; the default masks everything.

    Returns:
        The redacted text, what was found, and whether to drop the memory.
    """
    policy = policy or RedactionPolicy()
    found: list[str] = []
    drop = False

    def apply(kind: str, rule: Policy, pattern: re.Pattern[str], label: str, check=None) -> None:  # type: ignore[no-untyped-def]
        nonlocal text, drop

        def sub(m: re.Match[str]) -> str:
            nonlocal drop
            raw = m.group(0)
            if check is not None and not check(raw):
                return raw
            found.append(kind)
            if rule == "drop":
                drop = True
            if rule == "keep":
                return raw
            return f"[{label} {_mask_digits(raw)[1:-1]}]" if kind != "email" else _mask_email(raw)

        text = pattern.sub(sub, text)

    apply("cn_id", policy.cn_id, _CN_ID, "ID", lambda v: valid_cn_id(v))
    apply(
        "bank_card",
        policy.bank_card,
        _CARD,
        "card",
        lambda v: luhn_ok(re.sub(r"\D", "", v)) and 13 <= len(re.sub(r"\D", "", v)) <= 19,
    )
    apply("phone", policy.phone, _PHONE, "phone")
    apply("email", policy.email, _EMAIL, "email")
    return Redaction(text=text, found=found, drop=drop)


def _mask_email(value: str) -> str:
    user, _, domain = value.partition("@")
    return f"[email {user[:1]}***@{domain}]"
