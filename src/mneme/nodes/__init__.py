"""One module per memory stage of the graph; each node is named after its function."""

from mneme.nodes.agent import make_agent
from mneme.nodes.build_context import build_context
from mneme.nodes.extract_memories import make_extract_memories
from mneme.nodes.ingest import ingest
from mneme.nodes.retrieve_memories import retrieve_memories
from mneme.nodes.summarize import make_summarize
from mneme.nodes.tools import make_tools

__all__ = [
    "build_context",
    "ingest",
    "make_agent",
    "make_extract_memories",
    "make_summarize",
    "make_tools",
    "retrieve_memories",
]
