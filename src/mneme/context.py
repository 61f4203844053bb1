"""Runtime settings of a mneme graph run (LangGraph `context_schema`)."""

from __future__ import annotations

import functools
import math
import os
import types
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from mneme import prompts
from mneme.errors import InputError
from mneme.validate import printable

BUDGET_PARTS = ("system", "summary", "memory", "history")
"""The parts of the model input that `budget_order` arranges (the output reserve comes off the top)."""


@dataclass(kw_only=True)
class Context:
    """Settings for one run of the memory agent; shown as a form in LangGraph Studio.

    Any field left at its default can be set from the environment as `MNEME_<FIELD>`
    (for example `MNEME_MODEL=openai:gpt-4o-mini`).
    """

    user_id: str = ""
    """Whose memory this run reads and writes. Required: runs without it are refused."""

    agent_id: str = ""
    """Optional agent scope recorded on every memory written by this agent."""

    model: str = ""
    """Chat model: `offline`, `provider:model` (e.g. `openai:gpt-4o-mini`). Empty: the default
    (`openai:gpt-4o-mini` when OPENAI_API_KEY is set, else `offline`)."""

    system_prompt: str = prompts.SYSTEM_PROMPT
    """The pinned system prompt; never summarized or trimmed."""

    context_window: int = 8192
    """Total tokens the assembled model input plus the output reserve may use."""

    budget_system: int = 1024
    """Tokens reserved for the system prompt."""

    budget_memory: int = 768
    """Tokens for long-term memories injected this turn."""

    budget_summary: int = 512
    """Tokens for the running summary of older turns."""

    budget_history: int = 4096
    """Tokens for recent conversation turns (older ones are summarized)."""

    budget_output: int = 1024
    """Tokens kept free for the model's reply."""

    budget_order: str = "system,summary,memory,history"
    """The order in which the parts are filled (comma-separated; `system` first). Each part takes
    what it needs, at most its own budget and at most what the parts before it left of
    `context_window - budget_output`; so when the parts add up to more than the window, the
    last ones are cut. `summary` holds the task state and the running summary; `memory` the
    previous sessions' summaries and the long-term memories."""

    memory_position: Literal["system", "user"] = "system"
    """Where memories go: a block in the system message, or next to the newest user input."""

    retrieval_limit: int = 5
    """At most this many long-term memories are injected per turn."""

    memory_max_chars: int = 100
    """Each injected memory is cut to about this many characters."""

    min_relevance: float = 0.5
    """Memories whose absolute relevance (0..1: the calibrated dense similarity or the share of
    the query's words they contain, the better of the two) is below this are not injected, so a
    cold start injects nothing rather than noise."""

    query_turns: int = 2
    """How many earlier user turns are added to the new input to build the retrieval query."""

    profile_limit: int = 3
    """At most this many memories of a person's user model are injected per turn besides the
    relevant memories: what the request's domain touches of the person (a restaurant: their
    diet and allergies), hard constraints first. 3 kept the PrefEval tuning topics' noise under
    one unrelated preference per request (docs/benchmarks.md)."""

    max_sensitivity: int = 2
    """Memories above this sensitivity level (0 ordinary, 1 personal, 2 sensitive: health,
    finance, identity) are neither injected nor returned by the memory tools. The default
    shows a user their own memories, an allergy included; lower it where others may read."""

    group_max_sensitivity: int = 1
    """The same limit in a group chat, where everyone reads the reply: by default a
    participant's health, finance or identity memories are not injected there."""

    retrieval_mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    """`hybrid`: dense and lexical evidence fused and read in context (the default);
    `dense` / `lexical`: one retriever alone, as the baselines of the benchmark."""

    retrieval_candidates: int = 50
    """Dense candidates fetched per query text and kind before re-ranking (lexical: twice this).
    Re-ranking can only promote what the first cut found; see docs/benchmarks.md for 25 and 100."""

    dense_weight_en: float = 0.6
    """Share of the dense (embedding) score in the fused score of an English query; the rest is
    BM25, both standardized first. 0.6 was best on LoCoMo's tuning conversations (0.5 and 0.7
    each lost about 0.01 recall@10; docs/benchmarks.md)."""

    dense_weight_zh: float = 0.8
    """Share of the dense score for a Chinese query. Chinese questions paraphrase more and jieba
    segments imperfectly, so BM25 gets less weight than in English; on the Chinese set 0.8 kept
    the fused recall above dense-only at every k (0.5 fell below it at k=1 and 3)."""

    w_prev_turn: float = 0.5
    """A memory gains this share of the relevance of the turn before it in the same session
    (an answer sits after the question that matches the query); the turn two back counts 0.4
    of this. Reading turns in context is the largest single gain on LoCoMo (+0.05 recall@10);
    0.3 and 0.7 were each worse than 0.5 on the tuning conversations."""

    w_next_turn: float = 0.3
    """Same for the turn after it (0.1 and 0.5 were each slightly worse)."""

    w_session: float = 0.4
    """Weight of the relevance of the session a memory belongs to (the mean of its best three
    candidates, standardized across sessions): related facts are told in the same session.
    0.2 to 0.4 were equal within noise on LoCoMo; 0 lost about 0.008 recall@10."""

    w_speaker: float = 1.5
    """Boost (in standard deviations) of memories said by the one known speaker the query names
    (96% of LoCoMo's evidence for such questions is said by that person; 0 loses about 0.02
    recall@10). Speakers come from `metadata["speaker"]` or the source's speaker."""

    w_date: float = 2.0
    """Boost of memories said within a date, month or year the query names ("in May 2023",
    "上周"); when a memory was said is `metadata["said_at"]`, else its source time. Helps the
    14% of LoCoMo questions that name a date (+0.02 recall@10 overall)."""

    date_slack_days: int = 3
    """A memory said up to this many days after a named period still counts as in it."""

    w_recency: float = 0.1
    """Weight of recency in the final score (0..1), counted from the newest candidate, so the
    later of two statements about the same thing ranks higher. 0.2 put the current answer
    before the superseded one more often on the Chinese set but cost 0.03 LoCoMo recall@5."""

    w_recency_present: float = 0.2
    """Weight of recency instead of `w_recency` when the query asks how things stand now
    ("目前在哪里办公", "现在还…吗", "does she still…"): such a question wants the latest of
    several statements. On the Chinese set (14 of 61 questions carry such a cue) 0.2 raised the
    changed-answer questions' recall@5 from 0.75 to 0.85 and the whole set's from 0.885 to
    0.902; 0.3 and 0.4 helped the changed answers no more and cost recall@5 elsewhere. LoCoMo
    has 9 such questions in 1,535."""

    w_importance: float = 0.1
    """Weight of importance (set by the write path), which decays with time unless the memory
    is used. Neutral on the benchmarks (every turn there has the same importance)."""

    w_use: float = 0.05
    """Weight of use: memories injected or returned by a tool often gain weight (a tie-breaker
    between equally relevant memories; neutral on the benchmarks, where nothing is used)."""

    recency_half_life_days: float = 90.0
    """Recency halves every this many days (30 barely separated statements months apart)."""

    importance_half_life_days: float = 90.0
    """Importance halves after this many days without an update or a use."""

    extraction: Literal["inline", "deferred", "off"] = "inline"
    """When memories are extracted: in the turn, in a background worker, or never."""

    redact_phone: Literal["keep", "mask", "drop"] = "mask"
    """Policy for phone numbers found in memories."""

    redact_email: Literal["keep", "mask", "drop"] = "mask"
    """Policy for e-mail addresses found in memories."""

    redact_cn_id: Literal["mask", "drop"] = "mask"
    """Policy for identity numbers (Chinese resident ID in its 18- and 15-digit forms, checked;
    Hong Kong and Taiwan ID; US SSN); never kept in clear."""

    redact_bank_card: Literal["mask", "drop"] = "mask"
    """Policy for bank card numbers (Luhn-checked) and IBANs; never kept in clear."""

    redact_passport: Literal["mask", "drop"] = "mask"
    """Policy for passport and driving licence numbers; never kept in clear."""

    redact_address: Literal["keep", "mask", "drop"] = "mask"
    """Policy for home addresses (a street with its number, a compound with its building, unit
    or room); the city and district stay."""

    redact_plate: Literal["keep", "mask", "drop"] = "mask"
    """Policy for Chinese licence plates."""

    redact_birth_date: Literal["keep", "mask", "drop"] = "mask"
    """Policy for full dates of birth (masked: the year is hidden, the day and month stay)."""

    extractor: Literal["auto", "rules", "llm"] = "auto"
    """How memories are extracted from a turn: `auto` (the chat model when it is a real one,
    the offline rules with the `offline` model or a test fake), `rules` (the offline rules
    only, never a model call), `llm` (the chat model, whatever it is). A model is called only
    for turns the cheap gate finds worth it."""

    ttl_profile_days: float = 0.0
    """Default time to live of profile fields, in days (0: never expire)."""

    ttl_semantic_days: float = 0.0
    """Default time to live of facts and preferences, in days (0: never expire)."""

    ttl_episodic_days: float = 365.0
    """Default time to live of episodes (events, verbatim turns), in days (0: never expire).
    Expired memories leave the current view with an EXPIRE history row."""

    max_message_chars: int = 2_000_000
    """Inputs longer than this are refused with a clear error; shorter ones are accepted and
    shortened with a visible marker if they exceed the history budget."""

    recap_sessions: int = 3
    """A new session starts with the summaries of this many of the user's previous sessions
    (within the memory budget; 0: none)."""

    debug: bool = False
    """Write the exact model input with per-part token counts to the debug log (also
    `MNEME_DEBUG=1`)."""

    debug_path: str = ""
    """The debug log (JSON lines). Empty: `debug/prompts.jsonl` in the run's home (`debuglog.run_home`)."""

    def __post_init__(self) -> None:
        """Fill defaults from `MNEME_*` environment variables, then check every field.

        Raises:
            InputError: a field of the wrong type or not one of its allowed values (the
                message names the field, the value and what it accepts), or settings that
                do not fit together (budgets, weights).
        """
        from_env: set[str] = set()
        for f in fields(self):
            env = os.environ.get(f"MNEME_{f.name.upper()}")
            if env is None or getattr(self, f.name) != f.default:
                continue
            setattr(self, f.name, _coerce(env, f.default))
            from_env.add(f.name)
        hints = _field_types()
        for f in fields(self):
            value = _checked(f.name, getattr(self, f.name), hints[f.name], f.name in from_env)
            setattr(self, f.name, value)
        budgets = [self.budget_system, self.budget_memory, self.budget_summary, self.budget_history]
        if min(*budgets, self.budget_output) < 0:
            raise InputError("mneme: token budgets cannot be negative")
        if self.budget_system + self.budget_output > self.context_window:
            raise InputError(
                f"mneme: budget_system + budget_output = {self.budget_system + self.budget_output} "
                f"tokens, more than context_window={self.context_window}; the pinned system "
                "prompt and the reply must always fit"
            )
        self.budget_parts()  # checks budget_order
        if self.retrieval_limit < 0 or self.memory_max_chars < 10:
            raise InputError("mneme: retrieval_limit must be >= 0 and memory_max_chars >= 10")
        if not (0.0 <= self.dense_weight_en <= 1.0 and 0.0 <= self.dense_weight_zh <= 1.0):
            raise InputError("mneme: dense_weight_en and dense_weight_zh must be between 0 and 1")
        if not 0.0 <= self.w_recency + self.w_importance + self.w_use < 1.0:
            raise InputError("mneme: w_recency + w_importance + w_use must be at least 0 and below 1")
        if not 0.0 <= self.w_recency_present + self.w_importance + self.w_use < 1.0:
            raise InputError("mneme: w_recency_present + w_importance + w_use must be at least 0 and below 1")
        if self.retrieval_candidates < 1 or self.profile_limit < 0:
            raise InputError("mneme: retrieval_candidates must be >= 1 and profile_limit >= 0")
        if min(self.ttl_profile_days, self.ttl_semantic_days, self.ttl_episodic_days) < 0:
            raise InputError("mneme: ttl_*_days cannot be negative (0 means never expire)")
        from mneme.memory.redact import RedactionPolicy

        RedactionPolicy.from_context(self)  # raises a clear InputError for a bad policy

    def budget_parts(self) -> list[str]:
        """The parts in `budget_order`, checked.

        Raises:
            InputError: unknown or repeated parts, a missing part, or `system` not first.
        """
        parts = [p.strip() for p in self.budget_order.split(",") if p.strip()]
        if sorted(parts) != sorted(BUDGET_PARTS) or parts[0] != "system":
            raise InputError(
                f"mneme: budget_order must list {', '.join(BUDGET_PARTS)} once each, system "
                f"first; got {self.budget_order!r}"
            )
        return parts

    def part_budget(self, part: str) -> int:
        """The budget of one part (`system`, `summary`, `memory`, `history`)."""
        return int(getattr(self, f"budget_{part}"))

    def history_budget(self) -> int:
        """Tokens the recent history can count on whatever the other parts hold.

        `budget_history`, less what the parts before it in `budget_order` may take when the
        parts add up to more than the window. The history is summarized above this.
        """
        room = self.context_window - self.budget_output
        for part in self.budget_parts():
            if part == "history":
                break
            room -= self.part_budget(part)
        return max(0, min(self.budget_history, room))

    @classmethod
    def from_any(cls, value: Any, configurable: dict[str, Any] | None = None) -> Context:
        """Build a `Context` from what a run received.

        Args:
            value: `runtime.context`: a `Context`, a dict, or None.
            configurable: The run's `configurable`; its keys fill fields left at their
                defaults (the LangGraph server copies context there, and users often put
                `user_id` there).

        Returns:
            The resolved settings.
        """
        names = {f.name for f in fields(cls)}
        if isinstance(value, cls):
            ctx = value
        elif isinstance(value, dict):
            ctx = cls(**{k: v for k, v in value.items() if k in names})
        elif value is None:
            ctx = cls()
        else:
            raise InputError(f"mneme: context must be a dict or Context, not {type(value)!r}")
        if configurable:
            defaults = {f.name: f.default for f in fields(cls)}
            updates = {
                k: v
                for k, v in configurable.items()
                if k in names and getattr(ctx, k) == defaults[k] and v not in (None, "")
            }
            if updates:
                ctx = replace(ctx, **updates)
        return ctx


def _coerce(raw: str, default: Any) -> Any:
    """Turn an environment string into the type of a field's default.

    A string that is not a number is returned as it is, so that `_checked` refuses it with
    the field's name.
    """
    if isinstance(default, bool):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    try:
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        return raw
    return raw


@functools.cache
def _field_types() -> dict[str, Any]:
    """The resolved type of each `Context` field (the annotations are strings here)."""
    return get_type_hints(Context)


def _accepts(value: Any, kind: Any) -> bool:
    """Whether a value fits a field type: `str`, `int`, `float`, `bool`, a `Literal` or a union."""
    origin = get_origin(kind)
    if origin is Literal:
        return any(type(value) is type(choice) and value == choice for choice in get_args(kind))
    if origin in (Union, types.UnionType):
        return any(_accepts(value, member) for member in get_args(kind))
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:  # an int is a float here (JSON writes 1.0 as 1); NaN and infinity are not
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if isinstance(kind, type):
        return isinstance(value, kind)
    return True  # a type this check does not know: left to the code that reads the field


def _allowed(kind: Any) -> str:
    """What a field type accepts, in words."""
    origin = get_origin(kind)
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(kind))
    if origin in (Union, types.UnionType):
        return " or ".join(_allowed(member) for member in get_args(kind))
    names = {
        type(None): "None",
        bool: "true or false",
        int: "a whole number",
        float: "a finite number",
        str: "a string",
    }
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def _checked(name: str, value: Any, kind: Any, from_env: bool) -> Any:
    """A field's value if it fits the field's type (an int given for a float becomes a float).

    Raises:
        InputError: naming the field, the value and what the field accepts.
    """
    if not _accepts(value, kind):
        source = f" (from MNEME_{name.upper()})" if from_env else ""
        shown = printable(repr(value), 60)
        raise InputError(
            f"mneme: context field {name}{source} must be {_allowed(kind)}, "
            f"not {shown} ({type(value).__name__})"
        )
    if kind is float and not isinstance(value, float):
        return float(value)
    return value


def configurable() -> dict[str, Any]:
    """The `configurable` of the current run (empty outside a run)."""
    from langgraph.config import get_config

    try:
        return dict(get_config().get("configurable", {}))
    except RuntimeError:  # called outside a run (unit tests, scripts)
        return {}


def thread_id() -> str:
    """The thread id of the current run ("" outside a run or without a checkpointer)."""
    return str(configurable().get("thread_id") or "")


def context_of(runtime: Any) -> Context:
    """The settings of the current run: `runtime.context`, completed from `configurable`.

    Args:
        runtime: The LangGraph `Runtime` given to a node.

    Returns:
        The resolved `Context` (defaults when the run passed none).
    """
    return Context.from_any(getattr(runtime, "context", None), configurable())


__all__ = ["Context", "configurable", "context_of", "thread_id"]
