"""What a tool needs from its run: the settings and, above all, the user (never a tool argument)."""

from __future__ import annotations

from typing import Any

from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import BaseStore

from mneme.context import Context
from mneme.errors import InputError
from mneme.memory.record import check_user


def tool_context(runtime: ToolRuntime[Any, Any]) -> Context:
    """The run's `Context`, with `user_id` also read from `configurable`."""
    configurable = (runtime.config or {}).get("configurable", {})
    return Context.from_any(runtime.context, configurable)


def tool_user(runtime: ToolRuntime[Any, Any]) -> tuple[Context, str, BaseStore]:
    """The settings, the user and the store of a tool call.

    Raises:
        InputError: when the run has no user or no store.
    """
    ctx = tool_context(runtime)
    user = check_user(ctx.user_id)
    if runtime.store is None:
        raise InputError("mneme: memory tools need a store (compile the graph with one)")
    return ctx, user, runtime.store
