"""Budgeting the conversation window: turns, token counts, trimming that keeps tool pairs whole."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage

from mneme.errors import InputError
from mneme.prompts import OMITTED_ROUNDS_NOTE, TRUNCATION_MARKER
from mneme.tokens import TokenCounter, message_text

MIN_SHORTENED = 32
"""A shortened message keeps at least about this many tokens of its text (when it had them)."""


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


def pair_tools(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages with every tool call answered and every tool result called.

    A tool result whose call is not in the sequence is left out, and a tool call that got no
    result (a run interrupted between the model and the tools) is taken off its AI message
    (the message goes if nothing else is left), because chat APIs reject both. Returns copies
    where something changed; the originals are not touched.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    out: list[AnyMessage] = []
    seen_calls: set[str] = set()
    for msg in messages:
        if isinstance(msg, ToolMessage):
            if msg.tool_call_id in seen_calls:
                out.append(msg)
            continue
        if isinstance(msg, AIMessage) and msg.tool_calls:
            calls = [c for c in msg.tool_calls if c.get("id") in answered]
            seen_calls.update(str(c["id"]) for c in calls)
            if len(calls) != len(msg.tool_calls):
                if not calls and not message_text(msg).strip():
                    continue
                msg = msg.model_copy(update={"tool_calls": calls})
        out.append(msg)
    return out


def window_start(messages: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> int:
    """Index of the first message of the newest turns that fit in `budget` tokens.

    The newest turn is always included, even when it alone is over budget (it is then
    shortened by `fit_messages`, never dropped).
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
    """Cut a text to about `max_tokens`, keeping its head and tail around a visible marker.

    The result never has more than `max_tokens` tokens, except that the marker itself is
    always kept (so a cut is never silent).
    """
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


def shortest_form(message: AnyMessage, counter: TokenCounter) -> int:
    """Tokens of a message cut down to the marker alone (what no budget can go under)."""
    text = message_text(message)
    if not text:
        return counter.count_message(message)
    marker = TRUNCATION_MARKER.format(omitted=len(text)).strip()
    return counter.count_message(message.model_copy(update={"content": marker}))


def tool_rounds(turn: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """A turn cut into its user message, then each AI message with the tool results after it."""
    rounds: list[list[AnyMessage]] = []
    for msg in turn:
        if isinstance(msg, ToolMessage) and rounds:
            rounds[-1].append(msg)
        else:
            rounds.append([msg])
    return rounds


def _shorten_largest(window: list[AnyMessage], budget: int, counter: TokenCounter) -> list[AnyMessage]:
    """Shorten the largest messages' texts (with a marker) until the window fits or no more can go."""
    window = list(window)
    sizes = [counter.count_message(m) for m in window]
    total = sum(sizes)
    for i in sorted(range(len(window)), key=lambda k: sizes[k], reverse=True):
        if total <= budget:
            break
        msg = window[i]
        text = message_text(msg)
        if not text:
            continue
        overhead = sizes[i] - counter.count(text)
        target = max(MIN_SHORTENED, sizes[i] - (total - budget) - overhead)
        if counter.count(text) <= target:
            continue
        window[i] = msg.model_copy(update={"content": shorten_text(text, target, counter)})
        new = counter.count_message(window[i])
        total += new - sizes[i]
        sizes[i] = new
    if total > budget:  # even MIN_SHORTENED per message is too much: down to the markers
        for i in sorted(range(len(window)), key=lambda k: sizes[k], reverse=True):
            if total <= budget:
                break
            text = message_text(window[i])
            if not text:
                continue
            window[i] = window[i].model_copy(update={"content": shorten_text(text, 0, counter)})
            new = counter.count_message(window[i])
            total += new - sizes[i]
            sizes[i] = new
    return window


def fit_turn(turn: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> list[AnyMessage]:
    """One turn (the newest) made to fit `budget`, never separating a tool call from its results.

    First the largest texts are shortened with a visible marker. If the turn is still too big
    (many tool rounds in one turn), its oldest tool rounds (an AI message with all of its tool
    results) are left out whole, and a note in the user message says how many; the user
    message and the latest round always stay.

    Raises:
        InputError: even the user message and the latest tool round, cut down to markers,
            do not fit: the history budget is too small for this turn.
    """
    window = list(turn)
    if turn_tokens(window, counter) <= budget:
        return window
    shortened = _shorten_largest(window, budget, counter)
    if turn_tokens(shortened, counter) <= budget:
        return shortened
    rounds = tool_rounds(window)
    head = rounds[0] if isinstance(rounds[0][0], HumanMessage) else []
    body = rounds[1:] if head else rounds
    last_round = body[-1] if body else []
    floor = sum(shortest_form(m, counter) for m in [*head, *last_round])
    dropped = 0
    while len(body) > 1:
        body = body[1:]
        dropped += 1
        msgs = [m for r in body for m in r]
        lead = list(head)
        if lead:
            note = OMITTED_ROUNDS_NOTE.format(rounds=dropped)
            lead = [lead[0].model_copy(update={"content": message_text(lead[0]) + note})]
        candidate = [*lead, *msgs]
        if turn_tokens(candidate, counter) <= budget:
            return candidate
        candidate = _shorten_largest(candidate, budget, counter)
        if turn_tokens(candidate, counter) <= budget:
            return candidate
    raise InputError(
        f"mneme: the newest turn needs at least {floor} tokens even shortened, more than the "
        f"{budget} tokens left for history; raise budget_history (or context_window)"
    )


def fit_messages(messages: Sequence[AnyMessage], budget: int, counter: TokenCounter) -> list[AnyMessage]:
    """The newest whole turns within `budget`; the newest turn shortened if it alone is too big.

    Tool calls without results and results without calls are left out first (see
    `pair_tools`). Returns copies where content was shortened; the originals (and the
    checkpoint) are not changed.

    Raises:
        InputError: the newest turn cannot be made to fit (see `fit_turn`).
    """
    paired = pair_tools(messages)
    start = window_start(paired, budget, counter)
    window = list(paired[start:])
    if turn_tokens(window, counter) <= budget:
        return window
    # Only the newest turn is left and it is too big.
    return fit_turn(window, budget, counter)
