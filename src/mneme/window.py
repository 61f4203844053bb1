"""Budgeting the conversation window: turns, token counts, trimming that keeps tool pairs whole."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage

from mneme.prompts import TRUNCATION_MARKER
from mneme.tokens import TokenCounter, message_text


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Group messages into turns, each starting at a user message.

    An AI message's tool calls and their results always belong to the same turn, so cutting
    between turns can never orphan a tool call or a tool result. Messages before the first
    user message form a turn of their own.
    """
    turns: list[list[AnyMessage]] = []
    for msg in messages:
        if isinstance(msg, HumanMessage) or not turns:
            turns.append([msg])
        else:
            turns[-1].append(msg)
    return turns


def turn_tokens(turn: Sequence[BaseMessage], counter: TokenCounter) -> int:
    """Tokens of a whole turn."""
    return sum(counter.count_message(m) for m in turn)


def window_start(messages: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> int:
    """Index of the first message of the newest turns that fit in `budget` tokens.

    The newest turn is always included, even when it alone is over budget (it is then
    shortened by `shorten`, never dropped).
    """
    turns = split_turns(messages)
    if not turns:
        return 0
    used = 0
    start = len(messages)
    for turn in reversed(turns):
        cost = turn_tokens(turn, counter)
        if start < len(messages) and used + cost > budget:
            break
        used += cost
        start -= len(turn)
    return start


def shorten_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Cut a text to about `max_tokens`, keeping its head and tail around a visible marker."""
    if counter.count(text) <= max_tokens:
        return text
    # Characters per token of this text, measured on a sample, to size the cut.
    sample = text[:4000]
    ratio = max(1.0, len(sample) / max(1, counter.count(sample)))
    keep = max(16, int(max_tokens * ratio * 0.9) - 64)
    while keep > 16:
        head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
        out = head + TRUNCATION_MARKER.format(omitted=len(text) - len(head) - len(tail)) + tail
        if counter.count(out) <= max_tokens:
            return out
        keep = int(keep * 0.8)
    return TRUNCATION_MARKER.format(omitted=len(text)).strip()


def fit_messages(messages: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> list[AnyMessage]:
    """The newest whole turns within `budget`; over-long messages of the newest turn shortened.

    Returns copies where content was shortened; the originals (and the checkpoint) are not
    changed.
    """
    start = window_start(messages, budget, counter)
    window = list(messages[start:])
    total = sum(counter.count_message(m) for m in window)
    if total <= budget:
        return window
    # Only the newest turn is left and it is too big: shorten its largest messages.
    sizes = sorted(range(len(window)), key=lambda i: counter.count_message(window[i]), reverse=True)
    for i in sizes:
        if total <= budget:
            break
        msg = window[i]
        cost = counter.count_message(msg)
        excess = total - budget
        target = max(32, cost - excess - 8)
        text = shorten_text(message_text(msg), target, counter)
        window[i] = msg.model_copy(update={"content": text})
        total += counter.count_message(window[i]) - cost
    return window
