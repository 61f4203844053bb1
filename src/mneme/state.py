"""The typed, checkpointed state of one conversation thread."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Protocol, Required

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from mneme.context import Context

SNAPSHOT_EVERY = 5
"""Updates between full copies of a per-turn field in the checkpoints (see `Latest`): about
one a turn, so a read replays at most five turns' writes."""
MESSAGES_SNAPSHOT_EVERY = 20
"""Message updates between full copies of the message window (about four a turn): every ~5
turns ~25 KB more, but a read walks back ~35 checkpoints instead of ~175 (LangGraph's default
of 100 updates made `get_state` on a long thread take ~150 ms here)."""


def latest(value: Any, writes: Sequence[Any]) -> Any:
    """Reducer of a field that each write replaces (the last write of a batch wins)."""
    return writes[-1] if writes else value


def Latest() -> DeltaChannel[Any]:
    """A field written once or twice a turn, checkpointed as a delta rather than at every step.

    LangGraph's SQLite saver copies every field into every checkpoint, about seven a turn;
    a `DeltaChannel` keeps only the step's own write (a full copy every `SNAPSHOT_EVERY`
    updates), and LangGraph puts the value back together on read, so a resumed run sees
    exactly what the interrupted one had.
    """
    return DeltaChannel(latest, snapshot_frequency=SNAPSHOT_EVERY)


class GroupMessage(TypedDict, total=False):
    """One line of a group chat."""

    sender: str
    content: str
    timestamp: str


class GroupInput(TypedDict, total=False):
    """A burst of group-chat messages that triggered the bot."""

    history: list[GroupMessage]
    trigger: GroupMessage
    bot_name: str


class TaskState(TypedDict, total=False):
    """Key facts of the task at hand, kept outside the message list so they survive trimming."""

    intent: str
    """What the user is trying to do (`order_status`, `return`, `preference`, `chat`)."""
    slots: dict[str, str]
    """Named values given so far: order ids, dates, addresses, amounts."""
    pending_action: str
    """What the agent still has to do or ask."""


@dataclass(kw_only=True)
class InputState:
    """What a caller sends: new messages, or a group-chat burst."""

    messages: Annotated[
        list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=MESSAGES_SNAPSHOT_EVERY)
    ] = field(default_factory=list)
    """The conversation; new user messages are appended by the caller.

    Checkpointed as a delta (LangGraph's `DeltaChannel`): each checkpoint keeps only the
    messages its step wrote, and a full copy every `MESSAGES_SNAPSHOT_EVERY` updates, instead
    of the whole list at every step, which made a thread's checkpoints grow by ~225 KB a turn."""
    group: GroupInput | None = None
    """A group-chat burst; `ingest` turns it into one structured user message."""


@dataclass(kw_only=True)
class State(InputState):
    """Everything checkpointed for a thread."""

    summary: Annotated[str, Latest()] = ""
    """Running summary of the turns folded out of `messages`."""
    memories: Annotated[list[dict[str, Any]], Latest()] = field(default_factory=list)
    """Long-term memories retrieved for this turn (what was injected)."""
    recaps: Annotated[list[dict[str, Any]], Latest()] = field(default_factory=list)
    """Summaries of the user's previous sessions, loaded when this session started
    (`id`, `thread_id`, `date`, `text`), newest first."""
    task: TaskState = field(default_factory=lambda: TaskState(slots={}))
    """Structured task state: intent, slots, pending action."""
    participants: list[str] = field(default_factory=list)
    """Whom the current turn is for: one user, or the speakers of a group chat's burst, then the
    group's other members (`members`)."""
    members: list[str] = field(default_factory=list)
    """Who has spoken in this group chat's thread, most recent first (at most `GROUP_MEMBERS`):
    a burst from one of them is for the others too ("下周团建聚餐，帮我们订个餐厅")."""
    turn_start: str = ""
    """Id of the first message of the current turn."""
    owner: str = ""
    """The user (or group) whose thread this is: set on its first turn; another user's run of
    the thread is refused, since its history and memory block are the owner's."""
    shared: bool = False
    """A group chat's thread (its first turn was a group burst): any member may address the bot
    in it with a group burst under their own user id; a one-to-one message stays the owner's."""
    prompt: Annotated[dict[str, Any], Latest()] = field(default_factory=dict)
    """What `build_context` decided: the memory block and where the history window starts."""
    token_usage: Annotated[dict[str, int], Latest()] = field(default_factory=dict)
    """Tokens per part of the last model request (for debugging budgets)."""
    memory_refs: Annotated[dict[str, str], Latest()] = field(default_factory=dict)
    """Small numbers shown to the model for memories (`"1"` -> memory id); tools map them back."""
    writes: Annotated[list[dict[str, Any]], Latest()] = field(default_factory=list)
    """Memory changes made by the last turn (operation, id, text)."""


class MemoryFields(TypedDict, total=False):
    """The keys mneme's memory stages keep beside `messages`; add them to a state of your own.

    Which stage reads and writes which key:

    | key | written by | read by |
    |---|---|---|
    | `turn_start` | `ingest` | `extract_memories` (without it: from the last user message on) |
    | `owner`, `shared` | `ingest` (first turn of a thread) | `ingest` (another user's run is refused, except a group burst in a group's thread); `retrieve_memories` (a group's thread keeps sensitive memories out) |
    | `task` | `ingest` | `retrieve_memories` (slots join the query), `build_context`, `summarize` |
    | `participants` | `ingest` | `retrieve_memories` (without it: the run's user) |
    | `members` | `ingest` (a group burst) | `ingest` (the group's members join its bursts' participants) |
    | `recaps` | `ingest` (first turn of a session) | `build_context` |
    | `memories`, `memory_refs` | `retrieve_memories`; the memory tools add refs | `build_context`, the memory tools |
    | `prompt`, `token_usage` | `build_context` | your agent (`prompt["memory_block"]`), debugging |
    | `summary` | `summarize` | `build_context` |
    | `writes` | `extract_memories` | you (what the turn stored) |

    Every stage reads `messages`; `ingest` and `summarize` also change it. Every key is
    optional: a stage that finds none uses the default of `State`. The per-turn keys are
    checkpointed as deltas (`Latest`), as in `State`.
    """

    summary: Annotated[str, Latest()]
    memories: Annotated[list[dict[str, Any]], Latest()]
    recaps: Annotated[list[dict[str, Any]], Latest()]
    task: TaskState
    participants: list[str]
    members: list[str]
    turn_start: str
    owner: str
    shared: bool
    prompt: Annotated[dict[str, Any], Latest()]
    token_usage: Annotated[dict[str, int], Latest()]
    memory_refs: Annotated[dict[str, str], Latest()]
    writes: Annotated[list[dict[str, Any]], Latest()]


class MemoryState(MemoryFields):
    """A `TypedDict` state for a graph of your own that uses mneme's nodes: extend it.

    ```python
    class MyState(MemoryState):
        mood: str
    ```
    """

    messages: Required[
        Annotated[
            list[AnyMessage],
            DeltaChannel(_messages_delta_reducer, snapshot_frequency=MESSAGES_SNAPSHOT_EVERY),
        ]
    ]
    """The conversation, with `add_messages`' semantics, checkpointed as deltas as in `State`
    (a graph that holds mneme's nodes gets their channels: the same ones, or LangGraph refuses
    the graph)."""
    group: GroupInput | None
    """A group-chat burst for `ingest` (optional)."""


def as_state(value: Any) -> State:
    """The `State` view of any state: a `State`, a dict (`MemoryState`, `AgentState`), an object.

    Keys that `State` does not know are ignored; missing or None ones take their defaults.
    """
    if isinstance(value, State):
        return value
    names = [f.name for f in fields(State)]
    if isinstance(value, Mapping):
        found = {k: value[k] for k in names if k in value}
    else:
        found = {k: getattr(value, k) for k in names if hasattr(value, k)}
    return State(**{k: v for k, v in found.items() if v is not None})


class Node(Protocol):
    """A graph node: takes the state and the run's runtime, returns a state update."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the node."""
        ...
