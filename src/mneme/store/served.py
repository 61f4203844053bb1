"""The store a LangGraph server can load from `langgraph.json`: mneme's home store, with `store.ttl`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, cast

from langgraph.store.base import TTLConfig

from mneme.errors import ConfigError
from mneme.store.chroma import ChromaStore
from mneme.store.split import SplitStore

_TTL_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}


def ttl_from_config(store_config: Mapping[str, Any] | None) -> TTLConfig | None:
    """The `ttl` part of a `langgraph.json` `store` section, checked.

    Raises:
        ConfigError: `ttl` is not an object of LangGraph's TTL settings.
    """
    ttl = (store_config or {}).get("ttl")
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping) or not set(ttl) <= _TTL_KEYS:
        raise ConfigError(
            f"mneme: store.ttl must be an object with keys among {sorted(_TTL_KEYS)}, got {ttl!r}"
        )
    for key in ("default_ttl", "sweep_interval_minutes"):
        value = ttl.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
        ):
            raise ConfigError(f"mneme: store.ttl.{key} must be a positive number of minutes, got {value!r}")
    return cast(TTLConfig, dict(ttl))


def store() -> ChromaStore | SplitStore:
    """The home store for a LangGraph server: `"store": {"path": "mneme.store.served:store", "ttl": {...}}`.

    The server hands its `store` section to the process as `$LANGGRAPH_STORE` (JSON) but
    applies `ttl` only to its built-in store, so this reads it: `default_ttl` is given to
    items put without a `ttl`, reads refresh as `refresh_on_read` says, and with
    `sweep_interval_minutes` a sweeper thread deletes expired items. The memories live in
    the home folder (`$MNEME_HOME`, or a Chroma server with `$MNEME_CHROMA_URL`).
    """
    from mneme.home import open_home

    raw = os.environ.get("LANGGRAPH_STORE") or "{}"
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"mneme: $LANGGRAPH_STORE is not JSON: {exc}") from exc
    ttl = ttl_from_config(config if isinstance(config, Mapping) else None)
    chroma = open_home().store
    if not isinstance(chroma, ChromaStore | SplitStore):
        raise ConfigError("mneme: the served store must be the home's own (Chroma or the embedded home)")
    if ttl:
        chroma.ttl_config = ttl
        if ttl.get("sweep_interval_minutes"):
            chroma.start_ttl_sweeper()
    return chroma
