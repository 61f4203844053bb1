"""The `mneme` command line: demo, chat, memories, sessions, serve and mcp."""

from mneme.cli import chat, memories, serve, sessions
from mneme.cli.common import app

__all__ = ["app", "chat", "main", "memories", "serve", "sessions"]


def main() -> None:
    """Entry point of the `mneme` script."""
    app()
