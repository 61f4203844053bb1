"""Errors that mneme raises on purpose, each with a message a user can act on."""

from __future__ import annotations


class MnemeError(Exception):
    """Base class of every error mneme raises deliberately."""


class InputError(MnemeError, ValueError):
    """The caller passed something mneme cannot accept (empty text, bad id, missing user)."""


class NotFoundError(MnemeError, KeyError):
    """A memory, session or user that does not exist (or belongs to another user)."""

    def __str__(self) -> str:
        # KeyError quotes its argument; a user wants the plain sentence.
        return str(self.args[0]) if self.args else "not found"


class HomeLockedError(MnemeError, RuntimeError):
    """Another process already owns this embedded home folder."""


class ConfigError(MnemeError, ValueError):
    """A setting names something mneme cannot build (unknown model, missing package)."""


class ModelError(MnemeError, RuntimeError):
    """The chat model could not answer: its server is down, too slow, or refused the request."""


class ShuttingDown(MnemeError, RuntimeError):
    """The process is stopping: the call was not done (nothing was acknowledged); retry later."""


class RateLimited(MnemeError):
    """A caller sent more requests than its rate allows."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after
