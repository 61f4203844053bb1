"""Who may call the HTTP app: API keys mapped to the users each key may reach."""

from __future__ import annotations

import hmac
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mneme.errors import ConfigError

ALL_USERS = "*"
ADMIN_PERMISSION = "mneme:admin"
"""A LangGraph-server auth permission that lets a caller reach every user."""


@dataclass(frozen=True)
class Caller:
    """An authenticated caller and the users it may reach.

    Attributes:
        name: Who it is, for messages and logs (never the key itself).
        users: The user ids it may reach; None means every user.
    """

    name: str
    users: frozenset[str] | None

    def allows(self, user_id: str) -> bool:
        """Whether this caller may read and change this user's memories."""
        return self.users is None or user_id in self.users


_ENTRY = re.compile(r"^([^=\s]+)=(.+)$")


class KeyRing:
    """The API keys of a deployment.

    Two environment variables configure it:

    - `MNEME_API_KEY`: one key that reaches every user (the operator's key).
    - `MNEME_API_KEYS`: keys restricted to some users, as `KEY=USER[,USER...]` entries
      separated by `;` or whitespace, e.g. `k1=alice,bob; k2=carol; k3=*` (`*` is every user).
      Keys cannot contain `=`, `;`, `,` or spaces.
    """

    def __init__(self, keys: Mapping[str, frozenset[str] | None]) -> None:
        """Use these keys.

        Args:
            keys: Key to the users it may reach (None: every user).
        """
        for key in keys:
            if len(key) < 8:
                raise ConfigError("mneme: an API key must be at least 8 characters long")
        self._keys = [(k.encode(), users, i) for i, (k, users) in enumerate(keys.items(), 1)]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KeyRing:
        """The keys named by `MNEME_API_KEY` and `MNEME_API_KEYS`.

        Raises:
            ConfigError: if `MNEME_API_KEYS` is malformed.
        """
        env = os.environ if environ is None else environ
        keys: dict[str, frozenset[str] | None] = {}
        if admin := env.get("MNEME_API_KEY", "").strip():
            keys[admin] = None
        for entry in re.split(r"[;\s]+", env.get("MNEME_API_KEYS", "").strip()):
            if not entry:
                continue
            match = _ENTRY.match(entry)
            if match is None:
                raise ConfigError(
                    f"mneme: MNEME_API_KEYS entry {entry[:4]}... is not KEY=USER[,USER...] (or KEY=*)"
                )
            key, users = match.group(1), [u for u in match.group(2).split(",") if u]
            if not users:
                raise ConfigError("mneme: a MNEME_API_KEYS entry names no user")
            keys[key] = None if ALL_USERS in users else frozenset(users)
        return cls(keys)

    @classmethod
    def generated(cls) -> tuple[KeyRing, str]:
        """A key ring with one fresh random operator key, and that key (for `mneme serve`)."""
        key = secrets.token_urlsafe(24)
        return cls({key: None}), key

    @property
    def empty(self) -> bool:
        """Whether no key is configured (then every request is refused)."""
        return not self._keys

    def caller(self, token: str) -> Caller | None:
        """The caller a bearer token identifies, or None (compared in constant time)."""
        given = token.encode()
        found: Caller | None = None
        for key, users, number in self._keys:
            if hmac.compare_digest(key, given):
                found = Caller(name=f"api key #{number}", users=users)
        return found


def server_caller(scope: Mapping[str, Any]) -> Caller | None:
    """The caller the LangGraph server's own auth authenticated, if it ran on this route.

    With `"auth"` and `"http": {"enable_custom_route_auth": true}` in `langgraph.json`, the
    server authenticates requests to mneme's routes: the identity it returns may reach its own
    memories, and a caller with the `mneme:admin` permission every user's.
    """
    user = scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    identity = str(getattr(user, "identity", "") or "")
    if not identity:
        return None
    auth = scope.get("auth")
    permissions = set(getattr(auth, "scopes", None) or [])
    permissions |= set(getattr(user, "permissions", None) or [])
    if ADMIN_PERMISSION in permissions:
        return Caller(name=f"server user {identity}", users=None)
    return Caller(name=f"server user {identity}", users=frozenset({identity}))


__all__ = ["ADMIN_PERMISSION", "Caller", "KeyRing", "server_caller"]
