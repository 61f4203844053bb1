"""Chat models: the `offline` rule-based model, or any model `init_chat_model` knows."""

from __future__ import annotations

import os
import threading

from langchain_core.language_models import BaseChatModel

from mneme.errors import ConfigError
from mneme.models.offline import OfflineChatModel

_cache: dict[str, BaseChatModel] = {}
_lock = threading.Lock()


def default_model_name() -> str:
    """`openai:gpt-4o-mini` when an OpenAI key is set, else `offline`."""
    return "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline"


def model_name(spec: str | BaseChatModel | None) -> str:
    """A readable name of a model setting (used to pick the token counter)."""
    if isinstance(spec, BaseChatModel):
        for attr in ("model_name", "model"):
            value = getattr(spec, attr, None)
            if isinstance(value, str) and value:
                return value
        return type(spec).__name__
    return spec or default_model_name()


def is_offline(spec: str | BaseChatModel | None) -> bool:
    """Whether a setting resolves to the rule-based offline model."""
    if isinstance(spec, BaseChatModel):
        return isinstance(spec, OfflineChatModel)
    return model_name(spec) == "offline"


def resolve_model(spec: str | BaseChatModel | None) -> BaseChatModel:
    """Turn a model setting into a chat model.

    Args:
        spec: `"offline"`, `"provider:model"` (e.g. `"openai:gpt-4o-mini"`; `OPENAI_BASE_URL`
            points it at any OpenAI-compatible service), a chat model, or None for the default.

    Returns:
        The chat model (one instance per name and process).
    """
    if isinstance(spec, BaseChatModel):
        return spec
    name = model_name(spec)
    with _lock:
        if name in _cache:
            return _cache[name]
        if name == "offline":
            model: BaseChatModel = OfflineChatModel()
        else:
            if ":" not in name:
                raise ConfigError(f"mneme: unknown model {name!r}; use 'offline' or 'provider:model'")
            try:
                from langchain.chat_models import init_chat_model

                model = init_chat_model(name)
            except Exception as exc:  # the provider package or its key is missing
                raise ConfigError(f"mneme: cannot build model {name!r}: {exc}") from exc
        _cache[name] = model
        return model


__all__ = ["OfflineChatModel", "default_model_name", "is_offline", "model_name", "resolve_model"]
