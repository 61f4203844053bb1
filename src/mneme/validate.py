"""What every door accepts: the size limits and the checks that the API, REST, MCP and CLI share.

`Memory` runs these checks before it does any work, so the REST routes, the MCP tools, the
agent's memory tools and the CLI (all of which call `Memory`) refuse the same input with the
same message: an `InputError`, which REST answers with 422, MCP with a tool error and the CLI
with exit code 2. A value is refused rather than repaired: a lone surrogate, a NUL character,
NaN or infinity, a wrong type, a text or a request over its limit, JSON nested too deeply.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from mneme.errors import InputError

MAX_TEXT_CHARS = 10_000
"""One memory, or one message, may not be longer than this (characters). Chroma's embedded
store makes every later write of a collection slower, holding the GIL, the longer the values
it already keeps: with one 100,000-character memory, each write of its user took about 1 s
and stalled every other request meanwhile (docs/benchmarks.md, "Fairness")."""
MAX_REQUEST_CHARS = 100_000
"""All the texts of one `add` call (its messages and metadata) together, at most (characters)."""
MAX_MESSAGES = 500
"""Messages in one `add` call, at most."""
MAX_QUERY_CHARS = 10_000
"""A search query, at most (characters; the REST route allows 2,000)."""
MAX_NAME_CHARS = 256
"""An id (user, memory, session, agent), a subject, an actor or a metadata key, at most."""
MAX_VALUE_CHARS = 2_000
"""The structured value of a profile field, at most (characters)."""
MAX_METADATA_CHARS = 20_000
"""The metadata of one write, as JSON, at most (characters)."""
MAX_DEPTH = 10
"""Nesting of metadata, filters and import rows (dicts and lists inside each other), at most."""
MAX_LIMIT = 1_000
"""Hits one search may ask for, at most."""
MAX_TTL_DAYS = 36_500.0
"""A time to live, at most (100 years)."""
MAX_IMPORT_ROWS = 5_000
"""Rows (memories, archived versions, history rows, sessions, pending jobs) in one import, at
most; `mneme memories import` loads a larger export in parts, after checking all of it."""
MAX_IMPORT_CHARS = 10_000_000
"""One import, as JSON, at most (characters)."""
_INT64 = 2**63 - 1

NOT_UNICODE = "\uffff"
"""A noncharacter, refused like a lone surrogate: what a transport that cannot carry a lone
surrogate puts in its place (`mcp_server.mend_line`)."""
_NOT_TEXT = re.compile("[\x00\ud800-\udfff\ufffe\uffff]")
_NOT_NAME = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")

T = TypeVar("T")


def _why(found: str) -> str:
    if found == "\x00":
        return "holds a NUL character"
    if "\ud800" <= found <= "\udfff" or found in "\ufffe\uffff":
        return "is not valid Unicode (it holds a lone surrogate, half of a broken emoji)"
    return f"holds the control character U+{ord(found):04X}"


def clean_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS, blank: bool = False) -> str:
    """Check a text (a memory, a message, a query) and return it.

    Args:
        value: The text.
        what: What it is, for the message ("the memory text").
        limit: Its longest length, in characters.
        blank: Whether an empty or blank text is accepted.

    Raises:
        InputError: if it is not a string, blank (unless `blank`), too long, or holds a NUL
            character or a lone surrogate.
    """
    if not isinstance(value, str):
        raise InputError(f"mneme: {what} must be a string, not {type(value).__name__}")
    if not blank and not value.strip():
        raise InputError(f"mneme: {what} is empty")
    if len(value) > limit:
        raise InputError(f"mneme: {what} may be at most {limit:,} characters (it has {len(value):,})")
    if bad := _NOT_TEXT.search(value):
        raise InputError(f"mneme: {what} {_why(bad.group())}")
    return value


def clean_name(value: Any, what: str, *, limit: int = MAX_NAME_CHARS) -> str:
    """Check an id, a key or a name (no control characters, not blank) and return it.

    Raises:
        InputError: if it is not a non-blank string of at most `limit` characters without
            control characters or lone surrogates.
    """
    if not isinstance(value, str):
        raise InputError(f"mneme: {what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InputError(f"mneme: {what} is empty")
    if len(value) > limit:
        raise InputError(f"mneme: {what} may be at most {limit} characters (it has {len(value):,})")
    if bad := _NOT_NAME.search(value):
        raise InputError(f"mneme: {what} {_why(bad.group())}")
    return value


def optional_name(value: Any, what: str, *, limit: int = MAX_NAME_CHARS) -> str | None:
    """`clean_name`, where None is accepted (and returned)."""
    return None if value is None else clean_name(value, what, limit=limit)


def check_bool(value: Any, what: str) -> bool:
    """Check a flag (a real `bool`, not 0/1 or "false").

    Raises:
        InputError: if it is not a bool.
    """
    if not isinstance(value, bool):
        raise InputError(f"mneme: {what} must be true or false, not {type(value).__name__}")
    return value


def check_number(value: Any, what: str, low: float, high: float) -> float:
    """Check a finite number within [low, high] and return it as a float.

    Raises:
        InputError: if it is not a number (a bool is not), is NaN or infinite, or is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"mneme: {what} must be a number, not {type(value).__name__}")
    number = float(value) if not isinstance(value, int) or abs(value) <= _INT64 else math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise InputError(f"mneme: {what} must be between {low:g} and {high:g}")
    return number


def check_int(value: Any, what: str, low: int, high: int) -> int:
    """Check a whole number within [low, high].

    Raises:
        InputError: if it is not an int (a bool is not) or is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"mneme: {what} must be a whole number, not {type(value).__name__}")
    if not low <= value <= high:
        raise InputError(f"mneme: {what} must be between {low} and {high}")
    return value


def check_choice(value: Any, what: str, choices: Sequence[T]) -> T:
    """Check that a value is one of `choices`.

    Raises:
        InputError: if it is not.
    """
    if not isinstance(value, str | int) or isinstance(value, bool) or value not in choices:
        shown = value if isinstance(value, str | int) else type(value).__name__
        raise InputError(f"mneme: unknown {what} {shown!r}; use one of {', '.join(map(str, choices))}")
    return value  # type: ignore[return-value]


def check_choices(value: Any, what: str, choices: Sequence[T]) -> tuple[T, ...] | None:
    """Check an optional list of choices; one choice given alone counts as a list of one.

    Raises:
        InputError: if it is not None, one choice, or a list of choices.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return (check_choice(value, what, choices),)
    if not isinstance(value, list | tuple | set | frozenset):
        raise InputError(f"mneme: {what} must be a list such as [{choices[0]!r}]")
    return tuple(check_choice(v, what, choices) for v in value)


def check_json(value: Any, what: str, *, limit: int, depth: int = MAX_DEPTH) -> Any:
    """Check a JSON-ready value: plain types, finite numbers, clean strings, bounded size and depth.

    Args:
        value: Dicts (with string keys), lists, strings, numbers, booleans and None.
        what: What it is, for the message.
        limit: Its longest length as JSON, in characters.
        depth: How deeply dicts and lists may nest.

    Returns:
        The value, unchanged.

    Raises:
        InputError: if it holds another type, NaN or infinity, an int beyond 64 bits, a string
            with a NUL or a lone surrogate, nests deeper than `depth`, or is longer than `limit`.
    """
    budget = [limit]

    def walk(v: Any, level: int) -> None:
        if level > depth:
            raise InputError(f"mneme: {what} nests deeper than {depth} levels")
        if v is None or isinstance(v, bool):
            budget[0] -= 5
        elif isinstance(v, int):
            if abs(v) > _INT64:
                raise InputError(f"mneme: {what} holds a number beyond 64 bits")
            budget[0] -= 20
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InputError(f"mneme: {what} holds NaN or infinity, which JSON cannot carry")
            budget[0] -= 24
        elif isinstance(v, str):
            if bad := _NOT_TEXT.search(v):
                raise InputError(f"mneme: a string in {what} {_why(bad.group())}")
            budget[0] -= len(v) + 2
        elif isinstance(v, dict):
            for key, item in v.items():
                if not isinstance(key, str):
                    raise InputError(f"mneme: the keys of {what} must be strings, not {type(key).__name__}")
                clean_name(key, f"a key of {what}")
                budget[0] -= len(key) + 4
                walk(item, level + 1)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item, level + 1)
                budget[0] -= 1
        else:
            raise InputError(f"mneme: {what} may hold only JSON values, not {type(v).__name__}")
        if budget[0] < 0:
            raise InputError(f"mneme: {what} may be at most {limit:,} characters as JSON")

    walk(value, 0)
    return value


def check_metadata(value: Any) -> dict[str, Any]:
    """Check the metadata of a write (a dict of JSON values) and return a copy (None: empty).

    Raises:
        InputError: if it is not a dict, or `check_json` refuses it.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"mneme: metadata must be a dict, not {type(value).__name__}")
    return dict(check_json(value, "metadata", limit=MAX_METADATA_CHARS))


def check_total(texts: Sequence[str], extra: int = 0) -> None:
    """Check the total size of one request's texts (plus `extra` characters of metadata).

    Raises:
        InputError: if together they are longer than `MAX_REQUEST_CHARS`.
    """
    total = sum(len(t) for t in texts) + extra
    if total > MAX_REQUEST_CHARS:
        raise InputError(
            f"mneme: one request may carry at most {MAX_REQUEST_CHARS:,} characters (this one has "
            f"{total:,}); split it into several"
        )


def check_time(value: Any, what: str) -> datetime | None:
    """Check an optional point in time (a naive one is read as UTC).

    Raises:
        InputError: if it is not None or a `datetime`.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InputError(f"mneme: {what} must be a datetime, not {type(value).__name__}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def json_size(value: Any) -> int:
    """Length of a (checked) JSON value as JSON, in characters."""
    return len(json.dumps(value, ensure_ascii=False, default=str))


def printable(text: str, limit: int = 80) -> str:
    """A text made safe to put in an error message: cut, with NULs and lone surrogates escaped."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return _NOT_NAME.sub(lambda m: f"\\u{ord(m.group()):04x}", cut)


__all__ = [
    "MAX_DEPTH",
    "MAX_IMPORT_CHARS",
    "MAX_IMPORT_ROWS",
    "MAX_LIMIT",
    "MAX_MESSAGES",
    "MAX_METADATA_CHARS",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_REQUEST_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_TTL_DAYS",
    "MAX_VALUE_CHARS",
    "NOT_UNICODE",
    "check_bool",
    "check_choice",
    "check_choices",
    "check_int",
    "check_json",
    "check_metadata",
    "check_number",
    "check_time",
    "check_total",
    "clean_name",
    "clean_text",
    "json_size",
    "optional_name",
    "printable",
]
