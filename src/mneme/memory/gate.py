"""A cheap gate that decides whether a user turn is worth an LLM extraction call.

Most turns of a conversation carry nothing to remember about the speaker ("ok", "thanks!",
"what time do you close?", "that's so cool, how did it go?"). Calling a model on each of them
is what makes other memory layers slow and costly. The gate costs microseconds: a turn goes
to the model only when the offline rules already see a fact in it, when it asks to forget or
correct something, or when it is a statement in which the speaker talks about themselves
(first person beyond stock phrases such as "I think" or "I'm glad") or gives an identifier.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from mneme.memory.extract import MAX_EXTRACT_CHARS, extract, is_chinese

_SMALL_TALK = re.compile(
    r"^(?:ok(?:ay)?|k|yes|yeah|yep|no|nope|sure|thanks?(?: you)?(?: so much)?|thx|cool|great|nice|wow|lol|haha+|"
    r"hi|hello|hey|bye|good (?:morning|night|evening)|got it|i see|sounds good|me too|same|right|true|"
    r"好的?|嗯+|哦+|谢谢(?:你|您)?|多谢|好滴|可以|行|没问题|明白了?|知道了|收到|哈+|嗨|你好|您好|再见|拜拜|在吗|是的|对的?|不用了?)"
    r"[\s!！.。,，~?？]*$",
    re.I,
)
_CUE = re.compile(
    r"忘掉|忘记|删除|删掉|别再记|不要记|不再|改成|改为|换成|现在更|以后|今后|默认|"
    r"\b(?:forget|delete|erase|no longer|anymore|actually|from now on|instead|changed my mind|remember that)\b",
    re.I,
)
_EN_SELF = re.compile(
    r"\b(?:I|I'm|I've|I'll|I'd|(?i:my|me|mine|myself|we|we're|we've|we'll|our|ours|ourselves))\b"
)
_ZH_SELF = re.compile(r"我|咱")
_EN_STOCK = re.compile(
    r"\b(?:I|we) (?:think|guess|mean|agree|see|know|hope|wish|believe|suppose|bet|wonder|understand|appreciate)\b|"
    r"\bI(?:'m| am) (?:so |really |very )?(?:glad|happy|sorry|sure|not sure|excited|proud|thrilled|curious)(?: (?:for|to hear|that|about) you)?\b|"
    r"\b(?:I|we) (?:love|like) (?:that|this|it|how|your|the way)\b|\bI can't wait\b(?! to)|\blet me\b|\bfor me\b|"
    r"\bthank(?:s| you)\b|\b(?:tell|show|help|give|send) me\b|\bremind(?:s|ed)? me\b",
    re.I,
)
_ZH_STOCK = re.compile(
    r"我觉得|我想问|我看看|我知道|我明白|我同意|我也是|我也觉得|我猜|我不知道|我不确定|告诉我|帮我|给我|请问我"
)
_QUESTION_END = re.compile(r"[?？吗呢]\s*$")
_ID = re.compile(r"[A-Za-z]*\d[\dA-Za-z-]{5,}|\d{3,}")


@dataclass(frozen=True)
class GateDecision:
    """Whether a turn goes to the LLM extractor, and why."""

    send: bool
    reason: str


def gate(text: str) -> GateDecision:
    """Decide whether a user turn is worth an LLM extraction call.

    Args:
        text: The user's message.

    Returns:
        The decision and its reason (`rules`, `cue`, `identifier`, `self`, or why not).
    """
    head = text[:MAX_EXTRACT_CHARS].strip()
    if not head:
        return GateDecision(False, "empty")
    if _SMALL_TALK.match(head):
        return GateDecision(False, "small talk")
    if extract(head):
        return GateDecision(True, "rules")
    if _CUE.search(head):
        return GateDecision(True, "cue")
    zh = is_chinese(head)
    statements = [s for s in re.split(r"(?<=[.!?。！？])\s*", head) if s.strip()]
    if all(_QUESTION_END.search(s) for s in statements):
        return GateDecision(False, "question")
    if _ID.search(head) and (
        _ZH_SELF.search(head) or _EN_SELF.search(head) or re.search(r"订单|order", head, re.I)
    ):
        return GateDecision(True, "identifier")
    body = _ZH_STOCK.sub("", head) if zh else _EN_STOCK.sub("", head)
    statements_body = [
        s for s in re.split(r"(?<=[.!?。！？])\s*", body) if s.strip() and not _QUESTION_END.search(s)
    ]
    said = " ".join(statements_body)
    if (_ZH_SELF.search(said) if zh else _EN_SELF.search(said)) and len(said.strip()) >= (4 if zh else 12):
        return GateDecision(True, "self")
    return GateDecision(False, "nothing about the speaker")


@dataclass
class GateStats:
    """How many turns the gate saw, sent to the model and saved a call for (thread-safe)."""

    turns: int = 0
    sent: int = 0
    saved: int = 0
    llm_calls: int = 0
    """Model calls made, retries included."""
    retries: int = 0
    """Calls repeated after a reply failed validation."""
    valid_first: int = 0
    """Extractions whose first reply passed validation."""
    queued: int = 0
    """Turns whose extraction failed and wait in the pending queue."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def count(self, **deltas: int) -> None:
        """Add to counters by name."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> dict[str, int | float]:
        """The counters, and the share of turns sent to the model."""
        with self._lock:
            return {
                "turns": self.turns,
                "sent": self.sent,
                "saved": self.saved,
                "llm_calls": self.llm_calls,
                "retries": self.retries,
                "valid_first": self.valid_first,
                "queued": self.queued,
                "sent_share": round(self.sent / self.turns, 4) if self.turns else 0.0,
            }


STATS = GateStats()
"""Counters of this process (all `Memory` objects and graph runs)."""
