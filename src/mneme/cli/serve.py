"""`mneme serve` (the HTTP app on its own) and `mneme mcp` (the MCP server over stdio)."""

from __future__ import annotations

import os
from types import FrameType
from typing import Annotated

import typer

from mneme.cli.common import HomeOpt, UserOpt, app, err, guarded

ChromaOpt = Annotated[
    str | None,
    typer.Option(
        "--chroma-url",
        envvar="MNEME_CHROMA_URL",
        help="Use a Chroma server (shared by several processes) instead of the home's embedded store.",
    ),
]
PostgresOpt = Annotated[
    str | None,
    typer.Option(
        "--postgres",
        envvar="MNEME_POSTGRES_URL",
        help="Keep threads and memory in a Postgres with pgvector (postgresql://...), shared by several processes.",
    ),
]


GRACE_S = 1
"""On SIGTERM, requests still running after this many seconds are cancelled."""


def _stopping_server() -> type:
    import uvicorn

    from mneme import shutdown

    class StoppingServer(uvicorn.Server):
        """uvicorn's server, which also tells mneme's long work to stop when a signal comes."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            shutdown.begin()  # embedding calls and queued jobs stop at their next step
            super().handle_exit(sig, frame)

    return StoppingServer


def _server_threads() -> None:
    """Keep the embedding model's OpenMP threads from spinning while they wait.

    A server shares its cores between requests, Chroma and the model: spinning threads made
    a 16-token query 10-20 times slower on a busy 2-core machine (p50 0.8-2 s instead of 80 ms).
    Must run before the model is loaded; an explicit `OMP_WAIT_POLICY` wins.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on.")] = 8000,
    home: HomeOpt = None,
    chroma_url: ChromaOpt = None,
    postgres: PostgresOpt = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Server processes (more than 1 needs a shared store: --postgres or --chroma-url).",
        ),
    ] = 1,
) -> None:
    """Serve the REST routes and the admin page (/admin) of a home's memory.

    Keys come from MNEME_API_KEY (every user) and MNEME_API_KEYS ("KEY=USER,USER; KEY2=*");
    with neither set, a key is generated for this run and printed.
    """

    def start() -> None:
        from mneme.validate import clean_name

        clean_name(host, "--host")
        _server_threads()
        import uvicorn

        from mneme.errors import InputError
        from mneme.home import resolve_backends
        from mneme.server.app import create_app
        from mneme.server.auth import KeyRing
        from mneme.server.backend import HomeBackend

        chroma, pg = resolve_backends(chroma_url, postgres)
        if workers > 1 and not (chroma or pg):
            raise InputError(
                "mneme: --workers needs memory that several processes can share: a Postgres "
                "(--postgres / MNEME_POSTGRES_URL) or a Chroma server (--chroma-url / MNEME_CHROMA_URL); "
                "an embedded home belongs to one process"
            )
        keys = KeyRing.from_env()
        generated = None
        if keys.empty:
            keys, generated = KeyRing.generated()
        backend = HomeBackend(home, chroma_url=chroma, postgres=pg)
        backend.open_now()  # fail now if the home is in use or the Postgres unreachable
        shown = "localhost" if host in ("0.0.0.0", "::") else host
        err.print(
            f"mneme: serving http://{shown}:{port}  ·  admin page http://{shown}:{port}/admin",
            highlight=False,
            soft_wrap=True,
        )
        if generated:
            err.print(
                f"mneme: API key for this run (set MNEME_API_KEY to choose one): {generated}",
                highlight=False,
                soft_wrap=True,
            )
        if workers == 1:
            config = uvicorn.Config(
                create_app(backend, keys=keys),
                host=host,
                port=port,
                log_level="warning",
                timeout_graceful_shutdown=GRACE_S,
            )
            _stopping_server()(config).run()
            return
        # Each worker process opens the same store itself (`app_from_env`): hand it the settings.
        backend.close_now()
        if generated:
            os.environ["MNEME_API_KEY"] = generated
        if home is not None:
            os.environ["MNEME_HOME"] = str(home)
        os.environ.pop("MNEME_CHROMA_URL" if pg else "MNEME_POSTGRES_URL", None)
        os.environ["MNEME_POSTGRES_URL" if pg else "MNEME_CHROMA_URL"] = str(pg or chroma)
        uvicorn.run(
            "mneme.server.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="warning",
            timeout_graceful_shutdown=GRACE_S,
        )

    guarded(start)


@app.command("mcp")
def mcp_command(
    user: UserOpt, home: HomeOpt = None, chroma_url: ChromaOpt = None, postgres: PostgresOpt = None
) -> None:
    """Serve one user's memory to another agent over MCP (stdio): search, save, forget, list.

    Configure it in an MCP client as the command `mneme mcp --user U`.
    """

    def start() -> None:
        _server_threads()
        import asyncio

        from mneme.mcp_server import serve_stdio
        from mneme.memory.aio import AsyncMemory
        from mneme.memory.api import Memory
        from mneme.memory.record import check_user

        check_user(user)
        memory = AsyncMemory(Memory.open(home, chroma_url=chroma_url, postgres=postgres))
        try:
            asyncio.run(serve_stdio(memory, user))
        finally:
            memory.close()

    guarded(start)
