"""The LLM extractor: structured, schema-validated operations on a user's memory, with one retry.

The model sees the user's newest message(s) and the related memories it may change, numbered
1..n (never their real ids), and answers with JSON operations (add / update N / delete N /
none N). The reply is validated against a pydantic schema and against the numbers shown; an
unknown number, a missing text or a memory written in another language than the user's is a
validation error. The first error is sent back to the model once; if the second reply fails
too, `ExtractionFailed` is raised and the caller queues the input for a later retry, so a
malformed reply never loses what the user said.

Each memory also carries what the user model's read path needs: its `aspect` and `domains`
(enums generated from `data/user_model.json`) and whether it is a hard `constraint`. A name
outside the taxonomy is dropped, not retried (the memory is kept and the writer tags it as one
without an aspect), so an off-list tag never costs a call or queues the turn.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, BeforeValidator, Field, ValidationError, WithJsonSchema

from mneme import prompts
from mneme.memory.extract import MAX_EXTRACT_CHARS, Candidate
from mneme.memory.gate import STATS
from mneme.memory.record import Kind, MemoryRecord, lang_of
from mneme.memory.usermodel.taxonomy import OTHERS_ASPECT, taxonomy

log = logging.getLogger("mneme.extract")

MAX_SHOWN = 10
"""At most this many existing memories are shown to the model."""
MAX_MEMORY_CHARS = 500
"""A memory the model proposes may not be longer than this."""
_SUBJECT = re.compile(r"^[a-z][a-z0-9_]{0,40}(?::[\w-]{1,60})?$")
_LANG_NAMES = {"zh": "Chinese", "en": "English"}
_SCHEMA_REFUSED = re.compile(r"response_format|json_schema|structured output", re.I)
"""A provider's 400 that refuses the JSON-schema request itself (not, say, a context overflow)."""
MAX_DOMAINS = 3
"""At most this many request domains are kept per memory the model proposes."""

ASPECTS = tuple(taxonomy().aspects)
"""The aspect names the model may give (the user model's taxonomy, `data/user_model.json`)."""
DOMAINS = tuple(taxonomy().domains)
"""The request domain names the model may give."""


def _name(raw: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(raw).strip().lower())


def _known_aspect(raw: Any) -> str | None:
    """An aspect the taxonomy knows, else None: an unknown one loses only the tag, not the memory.

    The writer then tags the memory as it tags one without an aspect (`tag_aspect`).
    """
    if raw is None or raw == "":
        return None
    name = _name(raw)
    if name in ASPECTS:
        return name
    log.info("mneme: the extractor gave an aspect outside the taxonomy (%r); dropped", raw)
    return None


def _known_domains(raw: Any) -> list[str]:
    """The known domains of a reply's list (unknown ones and repeats dropped, at most `MAX_DOMAINS`)."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list | tuple) else []
    names = [_name(d) for d in items if d is not None]
    return list(dict.fromkeys(n for n in names if n in DOMAINS))[:MAX_DOMAINS]


AspectName = Annotated[
    str | None,
    BeforeValidator(_known_aspect),
    WithJsonSchema({"anyOf": [{"enum": list(ASPECTS), "type": "string"}, {"type": "null"}]}),
]
"""An aspect of the taxonomy or null (the JSON schema lists them; an unknown one reads as null)."""
DomainNames = Annotated[
    list[str],
    BeforeValidator(_known_domains),
    WithJsonSchema(
        {"items": {"enum": list(DOMAINS), "type": "string"}, "maxItems": MAX_DOMAINS, "type": "array"}
    ),
]
"""Request domains of the taxonomy (the JSON schema lists them; unknown ones are dropped)."""
Flag = Annotated[bool, BeforeValidator(lambda raw: False if raw is None else raw)]
"""A boolean where null reads as false."""


class MemoryOp(BaseModel):
    """One operation the model proposes."""

    op: Literal["add", "update", "delete", "none"]
    id: int | None = None
    """For update / delete / none: the number of an existing memory, as shown."""
    text: str | None = Field(default=None, max_length=MAX_MEMORY_CHARS)
    """For add / update: the memory, one short statement in the user's language."""
    kind: Kind = "semantic"
    subject: str | None = None
    """For a keyed profile fact: its snake_case field name."""
    value: str | None = None
    """For a keyed profile fact: its structured value."""
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    explicit: bool = True
    """The user said it (False: inferred)."""
    aspect: AspectName = None
    """What the memory says about the user (a taxonomy aspect); null for events, orders, others."""
    constraint: Flag = False
    """A hard limit (allergy, diet, health, boundary) rather than a like."""
    others: Flag = False
    """It states a fact about someone else in the user's life ("my brother lives in Perth")."""
    domains: DomainNames = Field(default_factory=list)
    """The kinds of request it matters for."""


class ExtractionResult(BaseModel):
    """What the model answers: a list of operations (empty when nothing is worth keeping)."""

    memories: list[MemoryOp] = Field(default_factory=list)


class ExtractionFailed(Exception):
    """The model's replies could not be used (after the retry); the input must be queued."""

    def __init__(self, error: str, raw: str = "") -> None:
        super().__init__(f"mneme: memory extraction failed: {error}")
        self.error = error
        self.raw = raw


@dataclass(frozen=True)
class RefMap:
    """The small integers shown to the model, mapped to memory ids."""

    records: tuple[MemoryRecord, ...]

    def id_of(self, ref: int | None) -> str:
        """The memory id of a number shown to the model.

        Raises:
            ValueError: for a number that was not shown (never guessed).
        """
        if ref is None:
            raise ValueError("this operation needs the `id` of an existing memory")
        if not 1 <= ref <= len(self.records):
            shown = f"1-{len(self.records)}" if self.records else "none"
            raise ValueError(f"memory id {ref} is not one of the ids shown ({shown})")
        return self.records[ref - 1].id

    def record(self, ref: int) -> MemoryRecord:
        """The memory behind a (validated) number."""
        return self.records[ref - 1]

    def render(self) -> str:
        """The numbered list shown to the model."""
        if not self.records:
            return prompts.EXTRACT_NO_MEMORIES
        lines = []
        for i, r in enumerate(self.records, 1):
            key = f", {r.subject}={r.value}" if r.subject and r.value else ""
            lines.append(f"[{i}] {r.text} ({r.kind}{key})")
        return "\n".join(lines)


def _content(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str | dict)
    )


def _json_of(text: str) -> Any:
    """The JSON object in a reply (fences and prose around it are tolerated)."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = (fenced.group(1) if fenced else text).strip()
    if body.startswith("["):
        return json.loads(body)
    start, end = body.find("{"), body.rfind("}")
    if start < 0:
        raise ValueError("the reply contains no JSON object")
    return json.loads(body[start : end + 1] if end > start else body[start:])


def parse(reply: str | ExtractionResult, refs: RefMap, lang: str) -> list[Candidate]:
    """Validate a reply and turn it into candidates.

    Args:
        reply: The model's text, or the result its structured output already parsed.
        refs: The numbers that were shown.
        lang: The user's language (`zh`, `en`); memories must be written in it.

    Returns:
        Candidates for the writer (`target` set for update / delete).

    Raises:
        ValueError: with a message fit to send back to the model.
    """
    try:
        if isinstance(reply, ExtractionResult):
            result = reply
        else:
            data = _json_of(reply)
            if isinstance(data, list):
                data = {"memories": data}
            result = ExtractionResult.model_validate(data)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON ({exc.msg} at position {exc.pos})") from None
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"the JSON does not match the schema: {errors}") from None
    out: list[Candidate] = []
    for n, op in enumerate(result.memories):
        where = f"memories[{n}]"
        if op.op == "none":
            if op.id is not None:
                refs.id_of(op.id)  # a number that was not shown is an error, even here
            continue
        target = refs.id_of(op.id) if op.op in ("update", "delete") else None
        if op.op == "delete":
            old = refs.record(op.id or 0)
            out.append(
                Candidate(kind=old.kind, text=old.text, action="forget", topic=old.text, target=target)
            )
            continue
        text = (op.text or "").strip()
        if not text:
            raise ValueError(f"{where}: `{op.op}` needs a non-empty `text`")
        if lang == "zh" and lang_of(text) != "zh" and not re.search(r"[\u4e00-\u9fff]", text):
            raise ValueError(
                f"{where}: the user wrote in Chinese; write the memory in Chinese, not translated"
            )
        if lang == "en" and lang_of(text) == "zh":
            raise ValueError(f"{where}: the user wrote in English; write the memory in English")
        subject = op.subject.strip() if op.subject else None
        if op.kind == "profile" and not subject:
            raise ValueError(f"{where}: a profile memory needs a snake_case `subject`")
        if subject and not _SUBJECT.match(subject):
            raise ValueError(f"{where}: subject {subject!r} must be snake_case, like shipping_preference")
        tax = taxonomy()
        if op.others:  # the brother's home: theirs, never one of the user's fields, nor replacing one
            subject = None
            if target is not None and refs.record(op.id or 0).aspect != OTHERS_ASPECT:
                target = None
        aspect = (
            tax.aspect(OTHERS_ASPECT) if op.others else tax.by_subject(subject) or tax.aspect(op.aspect)
        )  # a known field names its aspect
        if aspect is not None and aspect.single and tax.by_subject(subject) is None:
            subject = None  # keyed as the aspect's own field by the writer, whatever the model named it
        out.append(
            Candidate(
                kind="semantic" if op.others and op.kind == "profile" else op.kind,
                text=text,
                subject=subject,
                value=op.value,
                importance=op.importance,
                action="correct" if op.op == "update" else "add",
                target=target,
                confirmed=op.explicit,
                aspect=aspect.key if aspect else None,
                constraint=op.constraint or (aspect is not None and aspect.constraint),
                sensitivity=aspect.sensitivity if aspect else 0,
                domains=tuple(op.domains),
                others=op.others,
            )
        )
    return out


CUT_OFF = (
    "the reply was cut off at the output token limit, so it is not complete JSON: "
    "reply with fewer and shorter memories"
)
"""The validation error of a reply that stopped at `max_tokens`."""


@dataclass
class Reply:
    """One answer of the model: its text and, from structured output, the parsed result."""

    text: str
    parsed: ExtractionResult | None = None
    cut_off: bool = False


class LLMExtractor:
    """Extracts memory operations with a chat model; see the module docstring."""

    def __init__(self, model: BaseChatModel) -> None:
        """Wrap a chat model (structured output in JSON-schema mode when it is OpenAI-compatible)."""
        self.model = model
        self._runnable: Any = model
        self._structured: Any = None
        try:
            from langchain_openai import ChatOpenAI

            if isinstance(model, ChatOpenAI):
                self._runnable = model.bind(response_format={"type": "json_object"})
                self._structured = model.with_structured_output(
                    ExtractionResult, method="json_schema", include_raw=True
                )
        except ImportError:  # pragma: no cover - langchain-openai is a dependency
            pass

    def ask(self, messages: list[BaseMessage]) -> Reply:
        """One model call.

        Raises:
            Exception: whatever the model call raised (network, quota, provider errors).
        """
        import openai

        try:
            return self._ask(messages)
        except openai.LengthFinishReasonError as exc:  # the OpenAI SDK's word for a cut-off reply
            choice = exc.completion.choices[0] if exc.completion.choices else None
            return Reply(text=(choice.message.content or "") if choice else "", cut_off=True)

    def _ask(self, messages: list[BaseMessage]) -> Reply:
        if self._structured is not None:
            import openai

            try:
                out = self._structured.invoke(messages)
            except openai.BadRequestError as exc:
                if not _SCHEMA_REFUSED.search(str(exc)):
                    raise
                # The provider takes no JSON schema (DeepSeek, older servers): JSON mode from now on.
                log.warning("mneme: structured output refused (%s); extraction uses JSON mode", exc)
                self._structured = None
                return self._ask(messages)
            parsed = out.get("parsed")
            raw = out.get("raw")
            text = _content(raw) if isinstance(raw, BaseMessage) else str(raw or "")
            return Reply(text=text, parsed=parsed if isinstance(parsed, ExtractionResult) else None)
        reply = self._runnable.invoke(messages)
        if isinstance(reply, BaseMessage):
            cut = (reply.response_metadata or {}).get("finish_reason") == "length"
            return Reply(text=_content(reply), cut_off=cut)
        return Reply(text=str(reply))

    def prompt(
        self, texts: Sequence[str], refs: RefMap, now: datetime, before: Sequence[str] = ()
    ) -> list[BaseMessage]:
        """The messages sent to the model (`before`: what the user said just before, for pronouns)."""
        lang = lang_of(" ".join(texts))
        system = prompts.EXTRACT_SYSTEM.format(
            lang_name=_LANG_NAMES.get(lang, lang),
            today=now.date().isoformat(),
            schema=json.dumps(ExtractionResult.model_json_schema(), ensure_ascii=False),
        )
        said = "\n".join(f"- {t[:MAX_EXTRACT_CHARS]}" for t in texts)
        earlier = "\n".join(f"- {t[:MAX_EXTRACT_CHARS]}" for t in before)
        context = prompts.EXTRACT_BEFORE.format(before=earlier) if earlier else ""
        return [
            SystemMessage(content=system),
            HumanMessage(
                content=prompts.EXTRACT_INPUT.format(memories=refs.render(), before=context, messages=said)
            ),
        ]

    def extract(
        self,
        texts: Sequence[str],
        existing: Sequence[MemoryRecord],
        now: datetime | None = None,
        before: Sequence[str] = (),
    ) -> list[Candidate]:
        """Ask the model what to remember from `texts`, given the memories it may change.

        Args:
            texts: What the user said this turn.
            existing: Related current memories, shown numbered 1..n (at most `MAX_SHOWN`).
            now: Today, for relative dates.
            before: What the user said just before in the thread (only shown, for pronouns).

        Returns:
            Validated candidates (updates and deletes carry the real id of their target).

        Raises:
            ExtractionFailed: when the model errs, or both replies fail validation.
        """
        now = now or datetime.now(UTC)
        refs = RefMap(tuple(existing[:MAX_SHOWN]))
        lang = lang_of(" ".join(texts))
        messages = self.prompt(texts, refs, now, before)
        error = ""
        reply_text = ""
        for attempt in range(2):
            STATS.count(llm_calls=1, retries=1 if attempt else 0)
            try:
                reply = self.ask(messages)
            except Exception as exc:  # network, quota, provider errors: queue and retry later
                raise ExtractionFailed(f"the model call failed: {type(exc).__name__}: {exc}") from exc
            reply_text = reply.text
            try:
                if reply.cut_off:
                    raise ValueError(CUT_OFF)
                candidates = parse(reply.parsed if reply.parsed is not None else reply_text, refs, lang)
            except ValueError as exc:
                error = str(exc)
                messages = [
                    *messages,
                    AIMessage(content=reply_text),
                    HumanMessage(content=prompts.EXTRACT_RETRY.format(error=error)),
                ]
                continue
            if attempt == 0:
                STATS.count(valid_first=1)
            return candidates
        raise ExtractionFailed(error, reply_text)
