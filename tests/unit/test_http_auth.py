"""API keys of the HTTP app: which users each key (or server identity) may reach."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mneme.errors import ConfigError
from mneme.server.auth import KeyRing, server_caller


def test_keys_from_the_environment_reach_their_users() -> None:
    ring = KeyRing.from_env(
        {
            "MNEME_API_KEY": "operator-0001",
            "MNEME_API_KEYS": "alice-key-01=alice,bob;  carol-key-1=carol\nall-key-0001=*",
        }
    )
    operator = ring.caller("operator-0001")
    assert operator is not None and operator.users is None and operator.allows("anyone")
    alice = ring.caller("alice-key-01")
    assert alice is not None and alice.allows("alice") and alice.allows("bob") and not alice.allows("carol")
    carol = ring.caller("carol-key-1")
    assert carol is not None and carol.users == frozenset({"carol"})
    everyone = ring.caller("all-key-0001")
    assert everyone is not None and everyone.users is None
    assert ring.caller("alice-key-0") is None and ring.caller("") is None
    assert "alice-key" not in (alice.name + operator.name)  # names never carry the key


def test_no_key_configured_means_an_empty_ring() -> None:
    assert KeyRing.from_env({}).empty
    ring, key = KeyRing.generated()
    assert not ring.empty and len(key) >= 24 and ring.caller(key) is not None


@pytest.mark.parametrize(
    "value",
    ["just-a-key-without-users", "k=", "short=alice"],
)
def test_malformed_key_lists_are_refused_clearly(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^mneme: "):
        KeyRing.from_env({"MNEME_API_KEYS": value})


def test_the_langgraph_servers_identity_reaches_its_own_user_or_all_with_admin() -> None:
    user = SimpleNamespace(is_authenticated=True, identity="alice", permissions=[])
    own = server_caller({"user": user, "auth": SimpleNamespace(scopes=[])})
    assert own is not None and own.allows("alice") and not own.allows("bob")
    admin = server_caller({"user": user, "auth": SimpleNamespace(scopes=["mneme:admin"])})
    assert admin is not None and admin.allows("bob")
    anonymous = SimpleNamespace(is_authenticated=False, identity="")
    assert server_caller({"user": anonymous}) is None
    assert server_caller({}) is None
