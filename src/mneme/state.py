"""The typed, checkpointed state of one conversation thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from mneme.context import Context


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

    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)] = field(default_factory=list)
    """The conversation; new user messages are appended by the caller.

    Checkpointed as a delta (LangGraph's `DeltaChannel`): each checkpoint keeps only the
    messages its step wrote, and a full copy every 100 updates, instead of the whole list at
    every step, which made a thread's checkpoints grow by ~225 KB a turn."""
    group: GroupInput | None = None
    """A group-chat burst; `ingest` turns it into one structured user message."""


@dataclass(kw_only=True)
class State(InputState):
    """Everything checkpointed for a thread."""

    summary: str = ""
    """Running summary of the turns folded out of `messages`."""
    memories: list[dict[str, Any]] = field(default_factory=list)
    """Long-term memories retrieved for this turn (what was injected)."""
    recaps: list[dict[str, Any]] = field(default_factory=list)
    """Summaries of the user's previous sessions, loaded when this session started
    (`id`, `thread_id`, `date`, `text`), newest first."""
    task: TaskState = field(default_factory=lambda: TaskState(slots={}))
    """Structured task state: intent, slots, pending action."""
    participants: list[str] = field(default_factory=list)
    """Speakers of the current turn (one user, or the people of a group chat)."""
    turn_start: str = ""
    """Id of the first message of the current turn."""
    prompt: dict[str, Any] = field(default_factory=dict)
    """What `build_context` decided: the memory block and where the history window starts."""
    token_usage: dict[str, int] = field(default_factory=dict)
    """Tokens per part of the last model request (for debugging budgets)."""
    memory_refs: dict[str, str] = field(default_factory=dict)
    """Small numbers shown to the model for memories (`"1"` -> memory id); tools map them back."""
    writes: list[dict[str, Any]] = field(default_factory=list)
    """Memory changes made by the last turn (operation, id, text)."""


class Node(Protocol):
    """A graph node: takes the state and the run's runtime, returns a state update."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the node."""
        ...
