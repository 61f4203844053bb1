"""`agent`: one model call of the ReAct loop, on the budgeted context."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, messages_to_dict
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from mneme import debuglog, recap
from mneme.context import Context, context_of, thread_id
from mneme.errors import MnemeError, ModelError
from mneme.models import model_name, resolve_model
from mneme.nodes.build_context import assemble, counter_of
from mneme.state import Node, State, as_state

log = logging.getLogger("mneme.agent")


def bound_model(model: str | BaseChatModel | None, tools: Sequence[BaseTool]) -> Runnable[Any, Any]:
    """The chat model with the tools bound (cached per model and tool set)."""
    chat = resolve_model(model)
    key = (id(chat), tuple(t.name for t in tools))
    cached = _bound.get(key)
    if cached is None:
        cached = chat.bind_tools(list(tools)) if tools else chat
        _bound[key] = cached
    return cached


_bound: dict[tuple[int, tuple[str, ...]], Runnable[Any, Any]] = {}


def model_input(
    state: Any,
    runtime: Runtime[Any],
    model: str | BaseChatModel | None = None,
    *,
    system_prompt: str | None = None,
) -> list[AnyMessage]:
    """The budgeted request for your own agent node: system prompt, memories, summary, history.

    Args:
        state: The graph's state (`State`, a `MemoryState` dict, or any object with its keys).
        runtime: The node's runtime (its context gives the user and the budgets).
        model: The model the request is for (picks the token counter); None: `Context.model`.
        system_prompt: Your agent's system prompt, pinned first; None: `Context.system_prompt`.

    Returns:
        The messages to send, inside `context_window - budget_output` tokens.

    Raises:
        InputError: the system prompt alone is over `budget_system`.
    """
    ctx = context_of(runtime)
    if system_prompt is not None:
        ctx = replace(ctx, system_prompt=system_prompt)
    return assemble(as_state(state), ctx, counter_of(ctx, model)).messages


def call_model(chat: Runnable[Any, Any], messages: list[AnyMessage], spec: str | BaseChatModel | None) -> Any:
    """Invoke the model; a failure (server down, timeout, refusal) becomes a clear `ModelError`."""
    try:
        return chat.invoke(messages)
    except (MnemeError, GraphBubbleUp):
        raise
    except Exception as exc:
        where = getattr(resolve_model(spec), "openai_api_base", None)
        at = f" at {where}" if where else ""
        raise ModelError(
            f"mneme: the chat model {model_name(spec)!r}{at} did not answer: {type(exc).__name__}: {exc}"
        ) from exc


def note_session(state: State, reply: AIMessage, ctx: Context, runtime: Runtime[Context]) -> None:
    """After the final reply of a turn, record the session's recap (what a next session sees)."""
    thread = thread_id()
    if runtime.store is None or not thread or not ctx.user_id:
        return
    values = {"messages": [*state.messages, reply], "summary": state.summary, "task": state.task}
    try:
        recap.note_turn(runtime.store, ctx.user_id, thread, values)
    except Exception as exc:  # the reply matters more than its recap
        log.warning("mneme: could not record the recap of session %s: %s", thread, exc)


def make_agent(model: str | BaseChatModel | None, tools: Sequence[BaseTool]) -> Node:
    """Build the `agent` node for a model (None: the run's `Context.model`) and tools."""

    def agent(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Call the model on the system prompt, memories, summary, task state and history."""
        ctx = context_of(runtime)
        spec = model if model is not None else (ctx.model or None)
        counter = counter_of(ctx, spec)
        out = assemble(state, ctx, counter)
        messages, usage = out.messages, out.usage
        if ctx.debug:
            debuglog.write(
                ctx,
                {
                    "stage": "agent",
                    "model": model_name(spec),
                    "usage": usage,
                    "messages": messages_to_dict(messages),
                },
                runtime.store,
            )
        response = call_model(bound_model(spec, tools), messages, spec)
        if not isinstance(response, AIMessage):
            response = AIMessage(content=str(getattr(response, "content", response)))
        if not response.tool_calls:
            note_session(state, response, ctx, runtime)
        return {"messages": [response], "token_usage": usage}

    return agent
