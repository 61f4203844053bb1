"""mneme: memory for LangGraph agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mneme.context import Context
    from mneme.graph import build_graph
    from mneme.memory.api import Memory

__all__ = ["Context", "Memory", "__version__", "build_graph"]


def __getattr__(name: str) -> Any:
    """Import the public names lazily, so `import mneme` stays cheap for the CLI."""
    if name == "build_graph":
        from mneme.graph import build_graph

        return build_graph
    if name == "Memory":
        from mneme.memory.api import Memory

        return Memory
    if name == "Context":
        from mneme.context import Context

        return Context
    raise AttributeError(f"module 'mneme' has no attribute {name!r}")
