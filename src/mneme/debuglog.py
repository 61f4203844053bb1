"""The debug switch: every model request, exactly as sent, with its tokens per part, as JSON lines."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from mneme.context import Context, configurable, thread_id

log = logging.getLogger("mneme.prompt")
_lock = threading.Lock()

DEBUG_FILE = Path("debug") / "prompts.jsonl"
"""Where the log goes inside the home folder when `Context.debug_path` is empty."""

HOME_KEY = "__mneme_home"
"""The `configurable` key by which a graph of `build_graph` tells its runs the home it was built with
(leading underscores: LangGraph does not copy it into every checkpoint's metadata)."""


def run_home(store: BaseStore | None = None) -> Path:
    """The home folder of the current run.

    Args:
        store: The run's store (`runtime.store`).

    Returns:
        The home the graph was built with (`build_graph(home=...)`), else the home whose store
        the run uses (`open_home(...).store` given to `create_agent` with `MemoryMiddleware`, or
        to a graph of your own), else `$MNEME_HOME` or `./.mneme`.
    """
    from mneme import home

    built = configurable().get(HOME_KEY)
    if built:
        return Path(str(built))
    opened = home.home_of(store) if store is not None else None
    return opened or home.resolve_home()


def debug_path(ctx: Context, store: BaseStore | None = None) -> Path:
    """The file the debug log of a run goes to.

    Args:
        ctx: The run's settings.
        store: The run's store (`runtime.store`), which tells its home (`run_home`).

    Returns:
        `ctx.debug_path` when set, else `debug/prompts.jsonl` in the run's home.
    """
    if ctx.debug_path:
        return Path(ctx.debug_path).expanduser()
    return run_home(store) / DEBUG_FILE


def write(ctx: Context, record: dict[str, Any], store: BaseStore | None = None) -> Path:
    """Append one record (with time, user and thread) to the debug log, and log it at DEBUG.

    Args:
        ctx: The run's settings (user, where the log goes).
        record: What to write: the stage, the token usage, the messages.
        store: The run's store (`runtime.store`): the log goes to its home (`debug_path`).

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
    path = debug_path(ctx, store)
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


__all__ = ["DEBUG_FILE", "HOME_KEY", "debug_path", "read", "run_home", "write"]
