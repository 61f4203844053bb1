"""`tools`: run the tool calls of the last model reply; every result joins the state at once."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode


def make_tools(tools: Sequence[BaseTool]) -> ToolNode:
    """The `tools` node: LangGraph's `ToolNode`, with errors returned to the model as results.

    A failing tool yields an error message paired with its call (never an orphan call), so
    the model can recover and the thread stays valid.
    """
    return ToolNode(list(tools), name="tools", handle_tool_errors=True)
