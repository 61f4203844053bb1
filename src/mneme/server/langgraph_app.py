"""The app that `langgraph.json` mounts into the LangGraph server (`"http": {"app": ...}`).

The routes read and write the server's own store, the one its graph reaches through
`runtime.store`, so a memory the graph stored in a run is what `GET /v1/users/U/memories`
returns, in `langgraph dev` and in a deployment alike.
"""

from mneme.server.app import create_app
from mneme.server.backend import LangGraphServerBackend

app = create_app(LangGraphServerBackend())
