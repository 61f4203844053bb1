"""The debug switch: every model request, exactly as sent, with its tokens per part, as JSON lines."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mneme.context import Context, configurable, thread_id

log = logging.getLogger("mneme.prompt")
_lock = threading.Lock()

DEBUG_FILE = Path("debug") / "prompts.jsonl"
"""Where the log goes inside the home folder when `Context.debug_path` is empty."""


def debug_path(ctx: Context) -> Path:
    """The file the debug log of a run goes to: `ctx.debug_path`, else `<home>/debug/prompts.jsonl`."""
    if ctx.debug_path:
        return Path(ctx.debug_path).expanduser()
    from mneme.home import resolve_home

    return resolve_home() / DEBUG_FILE


def write(ctx: Context, record: dict[str, Any]) -> Path:
    """Append one record (with time, user and thread) to the debug log, and log it at DEBUG.

    Args:
        ctx: The run's settings (user, where the log goes).
        record: What to write: the stage, the token usage, the messages.

    Returns:
        The file written.
    """
    row = {
        "at": datetime.now(UTC).isoformat(),
        "user_id": ctx.user_id,
        "thread_id": thread_id(),
        "run_id": str(configurable().get("run_id") or ""),
        **record,
    }
    line = json.dumps(row, ensure_ascii=False, default=str)
    path = debug_path(ctx)
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    log.debug(line)
    return path


def read(path: str | Path) -> list[dict[str, Any]]:
    """The records of a debug log, oldest first."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


__all__ = ["debug_path", "read", "write"]
