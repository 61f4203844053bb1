"""One module per memory stage of the graph; each node is named after its function.

The stages are building blocks for a graph of your own too: add them with
`builder.add_node(retrieve_memories)` and give your state the keys of `mneme.state.MemoryState`
(the table in `MemoryFields` says which stage reads and writes which). Your agent node sends
`model_input(state, runtime)`, the budgeted request with the memories in it.
"""

from mneme.nodes.agent import make_agent, model_input
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
    "model_input",
    "retrieve_memories",
]
