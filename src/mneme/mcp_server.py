"""An MCP server over stdio: another agent searches, saves and forgets one user's memories."""

from __future__ import annotations

import io
import json
import os
import re
from typing import IO, Annotated, Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from mneme.errors import MnemeError
from mneme.memory.aio import AsyncMemory
from mneme.memory.record import Kind, MemoryChange, MemoryHit, check_user
from mneme.validate import NOT_UNICODE, printable

INSTRUCTIONS = (
    "Long-term memory of one user ({user}). Search it before answering questions about the "
    "user's preferences, facts or past events; save what the user asks you to remember or "
    "states about themselves; forget a memory when the user asks. Memories are in the user's "
    "own language; search works across languages."
)


class Found(BaseModel):
    """Memories found by meaning, best first."""

    items: list[MemoryHit]


class Listed(BaseModel):
    """One current memory, in short."""

    id: str
    kind: Kind
    text: str
    updated_at: str


class Listing(BaseModel):
    """Current memories, oldest first."""

    items: list[Listed]
    total: int
    """How many current memories the user has (the list may be cut at `limit`)."""


def argument_errors(tool: str, exc: ValidationError) -> str:
    """A tool's refused arguments in one short line: each argument and what it needs.

    The line is pydantic's messages without their values (the caller's data) or links, in
    the library's own form for a tool error: `Error executing tool save_memory: kind: Input
    should be 'profile', 'semantic' or 'episodic'`.
    """
    said: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in error["loc"]) or "arguments"
        line = f"{printable(name, 60)}: {error['msg']}"
        if line not in said:
            said.append(line)
    return f"Error executing tool {tool}: {'; '.join(said[:5])}"


class _Server(MCPServer):
    """`MCPServer` whose tools refuse bad arguments in a short line of mneme's own.

    The library reports arguments that fail the tool's input schema as a `ToolError` holding
    pydantic's whole report: a header, each value the caller sent, and a link to pydantic's
    documentation per error. `call_tool` is the method the library itself calls for every
    `tools/call` (and documents as raising that `ToolError`); here it raises the same error,
    still caused by the `ValidationError`, with `argument_errors` as its text.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """`MCPServer.call_tool`, with a short message for arguments that do not validate."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if type(exc) is not ToolError or not isinstance(cause, ValidationError):
                raise
            raise ToolError(argument_errors(name, cause)) from cause


def build_server(memory: AsyncMemory, user_id: str) -> MCPServer:
    """An MCP server whose tools work on one user's memory.

    The user is fixed when the server starts (`mneme mcp --user U`): no tool takes a user
    argument, so the calling agent can never reach another user's memories.

    Args:
        memory: The memory to serve.
        user_id: The only user the tools can read or change.

    Returns:
        The server; run it with `run_stdio_async()`.
    """
    user = check_user(user_id)
    server: MCPServer = _Server(
        name="mneme",
        title="mneme memory",
        instructions=INSTRUCTIONS.format(user=user),
        log_level="WARNING",
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def search_memory(
        query: Annotated[str, Field(description="What to look for, in any language.")],
        limit: Annotated[int, Field(ge=1, le=50, description="At most this many memories.")] = 5,
    ) -> Found:
        """Search the user's long-term memory by meaning; returns memories with ids and scores."""
        try:
            return Found(items=await memory.search(query, user_id=user, limit=limit))
        except MnemeError as exc:
            raise ToolError(str(exc).removeprefix("mneme: ")) from exc

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    )
    async def save_memory(
        text: Annotated[str, Field(description="The memory, in the user's own words and language.")],
        kind: Annotated[
            Kind,
            Field(description="semantic: a fact or preference; episodic: an event; profile: a keyed field."),
        ] = "semantic",
    ) -> MemoryChange:
        """Remember something about the user. Duplicates are not stored twice; a changed fact replaces the old one."""
        try:
            return await memory.save(text, user_id=user, kind=kind, actor="agent")
        except MnemeError as exc:
            raise ToolError(str(exc).removeprefix("mneme: ")) from exc

    @server.tool(
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False)
    )
    async def forget_memory(
        memory_id: Annotated[
            str, Field(description="The id of the memory, from search_memory or list_memories.")
        ],
    ) -> MemoryChange:
        """Forget one memory of the user (its text is also removed from the memory's history)."""
        try:
            return await memory.delete(memory_id, user_id=user)
        except MnemeError as exc:
            raise ToolError(str(exc).removeprefix("mneme: ")) from exc

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def list_memories(
        kind: Annotated[Kind | None, Field(description="Only memories of this kind.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many memories.")] = 50,
    ) -> Listing:
        """List the user's current memories, oldest first."""
        try:
            records = await memory.get_all(user_id=user, kinds=[kind] if kind else None)
        except MnemeError as exc:
            raise ToolError(str(exc).removeprefix("mneme: ")) from exc
        items = [Listed(id=r.id, kind=r.kind, text=r.text, updated_at=r.updated_at) for r in records[:limit]]
        return Listing(items=items, total=len(records))

    return server


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


def _mend(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE.sub(NOT_UNICODE, value)
    if isinstance(value, dict):
        return {_mend(k): _mend(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mend(v) for v in value]
    return value


def mend_line(line: str) -> str:
    """A JSON-RPC line the MCP library can parse: each lone surrogate becomes U+FFFF.

    The library's JSON parser refuses an escaped lone surrogate (`U+D800` alone) and cannot tell
    which request failed, so the client never gets an answer. U+FFFF is a noncharacter that
    `mneme.validate` refuses like a lone surrogate, so the tool answers with a clear error.
    """
    if not _ESCAPED_SURROGATE.search(line):
        return line
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return line  # the library answers malformed JSON itself
    return json.dumps(_mend(parsed), ensure_ascii=False) + "\n"


class _MendedLines(io.TextIOBase):
    """A text stream whose lines went through `mend_line`."""

    def __init__(self, inner: io.TextIOBase) -> None:
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        line = self._inner.readline()
        return mend_line(line) if line else line


async def serve_stdio(memory: AsyncMemory, user_id: str) -> None:
    """Serve one user's memory over stdin/stdout until the client closes the connection.

    Like `MCPServer.run_stdio_async`, with one difference: incoming lines are mended first
    (`mend_line`), so a request holding a lone surrogate gets a tool error instead of no
    answer at all. While serving, fd 0 reads the null device and fd 1 writes to stderr, so
    stray output never reaches the wire; both are restored on exit.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(memory, user_id)
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        reader = io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace")
        writer = io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8", write_through=True)
        stdin = anyio.wrap_file(cast("IO[str]", _MendedLines(reader)))
        async with stdio_server(stdin, anyio.wrap_file(writer)) as (read_stream, write_stream):
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


__all__ = ["build_server", "serve_stdio"]
