"""Test doubles for unit tests only: deterministic embeddings and a scripted chat model."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field


class HashEmbeddings(Embeddings):
    """Deterministic bag-of-features embeddings: words and CJK character bigrams, hashed.

    Texts that share words get similar vectors, so ranking tests mean something, and the
    vectors are the same in every process (hashlib, not `hash`).
    """

    dims = 256

    def _features(self, text: str) -> list[str]:
        text = text.lower()
        words = re.findall(r"[a-z0-9]+", text)
        cjk = re.findall(r"[\u4e00-\u9fff]", text)
        return words + ["".join(p) for p in itertools.pairwise(cjk)] + cjk

    def _embed(self, text: str) -> list[float]:
        vec = np.zeros(self.dims, dtype=np.float32)
        for feat in self._features(text):
            h = int.from_bytes(hashlib.md5(feat.encode()).digest()[:4], "little")
            vec[h % self.dims] += 1.0 if (h >> 31) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class ScriptedChatModel(GenericFakeChatModel):
    """Replies with scripted messages in order (tool calls included) and records what it saw.

    LangChain's fake chat models raise on `bind_tools`; this one binds like a real model.
    """

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @classmethod
    def script(cls, *replies: AIMessage | str) -> ScriptedChatModel:
        """A model that answers with these replies, in order."""
        return cls(messages=iter([AIMessage(content=r) if isinstance(r, str) else r for r in replies]))

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def tool_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    """An AI message that calls one tool."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )
