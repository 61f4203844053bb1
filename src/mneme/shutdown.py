"""The process is stopping: long work ends at its next step instead of holding the exit.

`mneme serve` calls `begin()` when it gets SIGTERM (or SIGINT). From then on no new embedding
call starts (`check_running` raises `ShuttingDown`, which REST answers with 503), the background
extraction worker takes no new job, and its exit flush does not wait: jobs not run yet stay in
the store's pending queue, where the next start finds them.
"""

from __future__ import annotations

import threading

from mneme.errors import ShuttingDown

_stopping = threading.Event()


def begin() -> None:
    """Mark the process as stopping."""
    _stopping.set()


def stopping() -> bool:
    """Whether the process is stopping."""
    return _stopping.is_set()


def check_running() -> None:
    """Raise `ShuttingDown` if the process is stopping (called between bounded steps of work).

    Raises:
        ShuttingDown: if `begin()` was called.
    """
    if _stopping.is_set():
        raise ShuttingDown("mneme: the server is shutting down; try again once it is back")


def reset() -> None:
    """Clear the mark (for tests that stop and restart in one process)."""
    _stopping.clear()


__all__ = ["begin", "check_running", "reset", "stopping"]
