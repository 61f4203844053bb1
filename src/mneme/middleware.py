"""`MemoryMiddleware`: mneme's memory for a LangChain `create_agent` agent you already have.

```python
agent = create_agent(model, tools, middleware=[MemoryMiddleware()], store=store, checkpointer=saver)
agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "s1"}}, context={"user_id": "alice"})
```

It runs mneme's own stages, not copies of them:

- before the first model call of a turn (`before_model`, once per user message): `ingest`
  (task state, the session record, the recaps of the user's earlier sessions),
  `retrieve_memories` and `build_context`;
- around every model call (`wrap_model_call`): the request is assembled by `build_context`'s
  `assemble` inside the token budget, with the agent's own system prompt pinned first and the
  memories, recaps, task state and summary beside it;
- after the agent (`after_agent`): the session recap, `summarize` when the history is over its
  budget (what it folds away stays searchable as episodic memory), and `extract_memories`,
  inline or deferred as `Context.extraction` says;
- the memory tools (search / save / update / forget), the user always taken from the run.

The user and every setting come from the run's context, as with mneme's graph
(`mneme.context.context_of`): `context={"user_id": ...}` or `configurable["user_id"]`.
Middleware listed before it (`PIIMiddleware`) changes the messages before mneme reads them, so
what it redacts is neither searched with nor stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from typing import Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from mneme.context import context_of
from mneme.nodes import build_context, ingest, make_extract_memories, make_summarize, retrieve_memories
from mneme.nodes.build_context import Rendered, assemble, counter_of
from mneme.state import MemoryFields, State, as_state
from mneme.tokens import message_text
from mneme.toolkit import MEMORY_TOOLS

_STATE_FIELDS = {f.name for f in fields(State)}


class MemoryAgentState(AgentState[Any], MemoryFields):
    """The agent's state with the keys mneme's stages keep (see `mneme.state.MemoryFields`)."""


def _known(update: dict[str, Any]) -> dict[str, Any]:
    """The part of a stage's update that the agent's state holds (`group` is graph-only)."""
    keys = set(MemoryAgentState.__annotations__)
    return {k: v for k, v in update.items() if k in keys}


def _apply(view: State, update: dict[str, Any]) -> State:
    """The view with a stage's update applied (messages aside: the stages' own removals)."""
    return replace(view, **{k: v for k, v in update.items() if k in _STATE_FIELDS and k != "messages"})


class MemoryMiddleware(AgentMiddleware[MemoryAgentState, Any, Any]):
    """Long-term and short-term memory for `create_agent`; see the module docstring."""

    state_schema = MemoryAgentState

    def __init__(self, model: str | BaseChatModel | None = None, *, memory_tools: bool = True) -> None:
        """Configure the middleware.

        Args:
            model: The model mneme's own calls use: LLM extraction, summaries, recaps.
                `"provider:model"` or a chat model (the agent's own, for instance); None: the
                run's `Context.model` (the offline rules unless OPENAI_API_KEY is set).
            memory_tools: Give the agent mneme's memory tools (search / save / update / forget).
        """
        super().__init__()
        self.model = model
        self.tools = list(MEMORY_TOOLS) if memory_tools else []
        self._summarize = make_summarize(model)
        self._extract = make_extract_memories(model)

    # -- before the model: once per user message --------------------------------------------

    def before_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """On a new user message: `ingest`, `retrieve_memories`, `build_context`.

        Raises:
            InputError: no user in the run's context, or an empty or over-long message.
        """
        view = as_state(state)
        last = view.messages[-1] if view.messages else None
        if not isinstance(last, HumanMessage) or (last.id is not None and last.id == view.turn_start):
            return None  # a later model call of the same turn (after tools): nothing new to fetch
        update: dict[str, Any] = {}
        for stage in (ingest, retrieve_memories, build_context):
            out = stage(view, runtime)
            view = _apply(view, out)
            update.update(out)
        return _known(update)

    async def abefore_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """`before_model` in a worker thread (the stages embed and read the store)."""
        return await asyncio.to_thread(self.before_model, state, runtime)

    # -- around every model call ------------------------------------------------------------

    def request(self, request: ModelRequest[Any]) -> tuple[ModelRequest[Any], Rendered]:
        """The budgeted request: the agent's system prompt pinned, mneme's blocks, the history that fits.

        Raises:
            InputError: the agent's system prompt alone is over `budget_system`.
        """
        ctx = replace(context_of(request.runtime), system_prompt=request.system_prompt or "")
        view = replace(as_state(request.state), messages=list(request.messages))
        out = assemble(view, ctx, counter_of(ctx, request.model))
        system, *history = out.messages
        message: SystemMessage | None = None
        if message_text(system):
            base = request.system_message or SystemMessage(content="")
            message = base.model_copy(update={"content": system.content})  # keeps its metadata
        return request.override(system_message=message, messages=history), out

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Send the budgeted request; record its tokens per part in `token_usage`."""
        budgeted, out = self.request(request)
        response = handler(budgeted)
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"token_usage": out.usage})
        )

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """`wrap_model_call` for async runs."""
        budgeted, out = self.request(request)
        response = await handler(budgeted)
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"token_usage": out.usage})
        )

    # -- after the agent: once per run ------------------------------------------------------

    def after_agent(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """`summarize` if the history is over budget, then `extract_memories` (and the session recap)."""
        view = as_state(state)
        if not view.messages:
            return None
        update: dict[str, Any] = {}
        update.update(self._summarize(view, runtime=runtime))
        update.update(self._extract(view, runtime=runtime))
        return _known(update)

    async def aafter_agent(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """`after_agent` in a worker thread."""
        return await asyncio.to_thread(self.after_agent, state, runtime)


__all__ = ["MemoryAgentState", "MemoryMiddleware"]
