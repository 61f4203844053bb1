"""The mneme graph: ingest → retrieve_memories → build_context → agent ⇄ tools → summarize → extract_memories."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command, StateSnapshot

from mneme.checkpoints import SharedTurnLock, shared_turn_lock
from mneme.context import Context, context_of
from mneme.debuglog import HOME_KEY
from mneme.errors import InputError
from mneme.nodes import (
    build_context,
    ingest,
    make_agent,
    make_extract_memories,
    make_summarize,
    make_tools,
    retrieve_memories,
)
from mneme.nodes.build_context import counter_of
from mneme.nodes.ingest import check_group
from mneme.state import InputState, State
from mneme.toolkit import MEMORY_TOOLS, default_tools
from mneme.window import split_turns, turn_tokens


def route_agent(state: State, runtime: Runtime[Context]) -> Literal["tools", "summarize", "extract_memories"]:
    """After a model reply: run its tool calls, else summarize if the history is over budget."""
    last = state.messages[-1] if state.messages else None
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tools"
    ctx = context_of(runtime)
    counter = counter_of(ctx)
    history = sum(turn_tokens(t, counter) for t in split_turns(state.messages))
    return "summarize" if history > ctx.history_budget() else "extract_memories"


def make_builder(
    model: str | BaseChatModel | None = None, tools: Sequence[BaseTool] | None = None
) -> StateGraph[State, Context, InputState, State]:
    """The graph's builder (uncompiled).

    Args:
        model: The chat model for every run; None lets each run choose (`Context.model`).
        tools: Domain tools for the agent; the memory tools are always added. None: the
            demo's order tools.

    Returns:
        The `StateGraph`, ready to compile with or without persistence.
    """
    chosen = list(tools) if tools is not None else default_tools()
    names = {t.name for t in chosen}
    chosen += [t for t in MEMORY_TOOLS if t.name not in names]
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    builder.add_node(ingest)
    builder.add_node(retrieve_memories)
    builder.add_node(build_context)
    builder.add_node("agent", make_agent(model, chosen))
    builder.add_node("tools", make_tools(chosen))
    builder.add_node("summarize", make_summarize(model))
    builder.add_node("extract_memories", make_extract_memories(model))
    builder.add_edge(START, "ingest")
    builder.add_edge("ingest", "retrieve_memories")
    builder.add_edge("retrieve_memories", "build_context")
    builder.add_edge("build_context", "agent")
    builder.add_conditional_edges("agent", route_agent)
    builder.add_edge("tools", "agent")
    builder.add_edge("summarize", "extract_memories")
    builder.add_edge("extract_memories", END)
    return builder


class TurnLocks:
    """One lock per thread in this process: the turns of one thread run one after the other.

    Two calls on one thread at once (a double click on "send") would each run from the same
    checkpoint, and the second would also run what is left of the first (`MnemeGraph`). A lock
    lives only while a turn holds or waits for it, so a process serving many threads keeps no
    lock per thread it ever saw. Processes sharing a checkpointer also take the thread's
    `SharedTurnLock` after this one.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[tuple[int, str], list[Any]] = {}  # key -> [lock, holders and waiters]

    def _enter(self, key: tuple[int, str]) -> threading.Lock:
        with self._guard:
            entry = self._held.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
            return cast(threading.Lock, entry[0])

    def _leave(self, key: tuple[int, str]) -> None:
        with self._guard:
            entry = self._held[key]
            entry[1] -= 1
            if entry[1] == 0:
                del self._held[key]

    @contextmanager
    def hold(self, key: tuple[int, str] | None) -> Iterator[None]:
        """Hold the lock of a thread (nothing when `key` is None)."""
        if key is None:
            yield
            return
        lock = self._enter(key)
        try:
            with lock:
                yield
        finally:
            self._leave(key)

    @asynccontextmanager
    async def ahold(self, key: tuple[int, str] | None) -> AsyncIterator[None]:
        """`hold` for a coroutine: it waits without blocking the event loop."""
        if key is None:
            yield
            return
        lock = self._enter(key)
        try:
            while not lock.acquire(blocking=False):  # a cancelled wait leaves no lock taken
                await asyncio.sleep(0.01)
            try:
                yield
            finally:
                lock.release()
        finally:
            self._leave(key)


TURNS = TurnLocks()
"""The turn locks of this process (`MnemeGraph`)."""


class MnemeGraph(CompiledStateGraph[State, Context, InputState, State]):
    """The compiled mneme graph: a new input first finishes the thread's interrupted turn.

    LangGraph discards a thread's unfinished run when new input arrives. A run killed (a
    crash, kill -9, a deploy) after its input was checkpointed would lose that input: the
    user's message, acknowledged by nothing yet, replaced by the next one. Worse, LangGraph
    1.2's `get_state` read without a checkpoint id shows such a run as finished, so a client
    cannot tell (docs/benchmarks.md, "Crashes"). Here new input on a thread whose latest
    checkpoint has steps left runs those steps first, as `invoke(None, config)` would, then the
    new input. A run that stopped on an error or an `interrupt()` is left as LangGraph leaves it:
    it was reported to its caller, and retrying it could fail again forever. The turns of one
    thread run one after the other, in a process (`TurnLocks`) and across the processes that
    share its checkpointer (`SharedTurnLock`).
    """

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """`CompiledStateGraph.stream`, after finishing the thread's interrupted turn.

        Raises:
            InputError: before anything is checkpointed: a group burst with a line that has
                no sender, or no trigger; a message that cannot be read; no `thread_id`; a
                bad `context` value.
        """
        input = checked_input(input)
        checked_call(self, config, kwargs.get("context"))
        with TURNS.hold(self._thread_key(config)), self._shared_hold(config):
            if self._resumable(input, config) and _unfinished(
                self.get_state(at_latest_checkpoint(self, config))
            ):
                for _ in super().stream(None, config, **_resume_kwargs(kwargs)):
                    pass
            yield from super().stream(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """`CompiledStateGraph.astream`, after finishing the thread's interrupted turn.

        Raises:
            InputError: as `stream`.
        """
        input = checked_input(input)
        checked_call(self, config, kwargs.get("context"))
        async with TURNS.ahold(self._thread_key(config)), self._shared_ahold(config):
            if self._resumable(input, config) and _unfinished(
                await self.aget_state(await _aat_latest(self, config))
            ):
                async for _ in super().astream(None, config, **_resume_kwargs(kwargs)):
                    pass
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk

    def _thread_key(self, config: RunnableConfig | None) -> tuple[int, str] | None:
        """Which thread of this graph's own checkpointer a call runs on (None: no such thread)."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        if thread is None or not isinstance(self.checkpointer, BaseCheckpointSaver):
            return None
        return (id(self.checkpointer), str(thread))

    def _shared(self, config: RunnableConfig | None) -> tuple[SharedTurnLock, str] | None:
        """The thread's lock across the processes sharing the checkpointer, and the thread."""
        key = self._thread_key(config)
        shared = shared_turn_lock(cast(BaseCheckpointSaver[Any], self.checkpointer)) if key else None
        return (shared, key[1]) if key and shared else None

    def _shared_hold(self, config: RunnableConfig | None) -> AbstractContextManager[None]:
        """Hold `_shared` (nothing when there is none)."""
        found = self._shared(config)
        return found[0].hold(found[1]) if found else nullcontext()

    def _shared_ahold(self, config: RunnableConfig | None) -> AbstractAsyncContextManager[None]:
        """`_shared_hold` for a coroutine."""
        found = self._shared(config)
        return found[0].ahold(found[1]) if found else nullcontext()

    def _resumable(self, input: Any, config: RunnableConfig | None) -> bool:
        """Whether this call is new input on a thread of this graph's own checkpointer."""
        return (
            input is not None
            and not isinstance(input, Command)
            and self._thread_key(config) is not None
            # a run from a chosen checkpoint forks on purpose
            and not ((config or {}).get("configurable") or {}).get("checkpoint_id")
        )


def checked_input(input: Any) -> Any:
    """A caller's input as it is checkpointed: a dict, with its group burst checked.

    LangGraph checkpoints the input as given. An `InputState` object there is a type its
    serializer does not know: the thread's next turn reads it back with a warning, and a later
    LangGraph will refuse it. The dict of its fields (those not None, as LangGraph reads an
    object) updates the state the same way. A group burst is checked here, before it is
    checkpointed: refused in `ingest`, it would stay in the thread's state and refuse every
    later input of the thread too.

    Raises:
        InputError: a group burst with a line that has no sender, or no trigger.
    """
    if isinstance(input, InputState):
        input = {f.name: value for f in fields(input) if (value := getattr(input, f.name)) is not None}
    if isinstance(input, dict) and input.get("group") is not None:
        check_group(input["group"])
    if isinstance(input, dict) and isinstance(input.get("messages"), list):
        from mneme.memory.api import read_message  # (the memory API imports the graph's modules)

        for i, message in enumerate(input["messages"]):  # checkpointed, a bad one breaks the thread
            read_message(message, i)
    return input


def checked_call(
    graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig | None, context: Any
) -> None:
    """Refuse a run without a thread or with bad settings before LangGraph checkpoints its input.

    Raises:
        InputError: no `thread_id` for a graph with a checkpointer, or a `context` value of the
            wrong type or out of its allowed values (`Context`).
    """
    conf = (config or {}).get("configurable") or {}
    if isinstance(graph.checkpointer, BaseCheckpointSaver) and not conf.get("thread_id"):
        raise InputError(
            "mneme: a thread_id is required in config['configurable']: "
            "graph.invoke(input, {'configurable': {'thread_id': '...'}}, context={'user_id': '...'})"
        )
    Context.from_any(context, dict(conf))


def at_latest_checkpoint(
    graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig | None
) -> RunnableConfig:
    """The config of the thread's latest checkpoint, named by its id.

    Read without an id, LangGraph 1.2 applies the checkpoint's pending writes and can report a
    run killed after its input checkpoint as finished; by its id it shows the steps left.
    """
    conf = dict((config or {}).get("configurable") or {})
    saver = graph.checkpointer
    assert isinstance(saver, BaseCheckpointSaver)  # checked by `_resumable`
    return _by_id(conf, saver.get_tuple({"configurable": conf}))


async def _aat_latest(
    graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig | None
) -> RunnableConfig:
    """`at_latest_checkpoint` through the checkpointer's async API."""
    conf = dict((config or {}).get("configurable") or {})
    saver = graph.checkpointer
    assert isinstance(saver, BaseCheckpointSaver)  # checked by `_resumable`
    return _by_id(conf, await saver.aget_tuple({"configurable": conf}))


def _by_id(conf: dict[str, Any], found: CheckpointTuple | None) -> RunnableConfig:
    """A thread's config naming the checkpoint found (unchanged when it has none)."""
    if found is not None:
        conf["checkpoint_id"] = found.config["configurable"]["checkpoint_id"]
    return {"configurable": conf}


def _unfinished(snapshot: StateSnapshot) -> bool:
    """Whether a checkpoint has steps left that no error or interrupt stopped."""
    return bool(snapshot.next) and not any(t.error or t.interrupts for t in snapshot.tasks)


def _resume_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a resumed run keeps of the new call's arguments: its context and durability."""
    return {k: v for k, v in kwargs.items() if k in ("context", "durability")}


def build_graph(
    *,
    model: str | BaseChatModel | None = None,
    embeddings: str | Embeddings | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
    home: str | Path | None = None,
    tools: Sequence[BaseTool] | None = None,
    postgres: str | None = None,
) -> MnemeGraph:
    """Compile the memory agent with persistence.

    Args:
        model: `"offline"`, `"provider:model"` (any `init_chat_model` name), or a chat model.
            Default: `openai:gpt-4o-mini` when OPENAI_API_KEY is set, else `offline`.
        embeddings: `"local"` (bundled multilingual-e5-small, default), `"provider:model"`,
            or an `Embeddings` instance; used by the default store.
        checkpointer: Thread persistence; default SQLite in `home`.
        store: Long-term memory store; default Chroma on disk in `home`.
        home: Data folder (default `$MNEME_HOME` or `./.mneme`); the runs' debug log
            (`Context.debug`) goes to its `debug/prompts.jsonl` too.
        tools: Domain tools (the memory tools are always added).
        postgres: A Postgres with pgvector (`postgresql://...`, or `$MNEME_POSTGRES_URL`):
            threads in LangGraph's `PostgresSaver`, memory in its `PostgresStore`, shared by
            every process that names the same database. Default: the embedded home.

    Returns:
        The compiled graph: `graph.invoke({"messages": [...]}, {"configurable":
        {"thread_id": ...}}, context={"user_id": ...})`.
    """
    folder: Path | None = None
    if checkpointer is None or store is None:
        from mneme.home import open_home

        opened = open_home(home, embeddings=embeddings, postgres=postgres)
        checkpointer = checkpointer or opened.checkpointer()
        store = store or opened.store
        folder = opened.path
    elif home is not None:
        from mneme.home import resolve_home

        folder = resolve_home(home)
    compiled = make_builder(model, tools).compile(checkpointer=checkpointer, store=store, name="mneme")
    if folder is not None:  # the runs' debug log goes there (`debuglog.run_home`), whatever the cwd
        compiled = compiled.with_config(configurable={HOME_KEY: str(folder)})
    compiled.__class__ = MnemeGraph  # LangGraph's compile builds the base class; copies keep this one
    return compiled  # type: ignore[return-value]


graph = make_builder().compile(name="mneme")
"""The graph that `langgraph.json` serves: no checkpointer or store (the server injects both)."""
