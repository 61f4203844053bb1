"""Tools the agent can call: memory tools, and the small order tools of the demo."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from mneme.toolkit.memory import MEMORY_TOOLS
from mneme.toolkit.shop import SHOP_TOOLS


def default_tools() -> list[BaseTool]:
    """The demo's order tools plus the memory tools."""
    return [*SHOP_TOOLS, *MEMORY_TOOLS]


__all__ = ["MEMORY_TOOLS", "SHOP_TOOLS", "default_tools"]
