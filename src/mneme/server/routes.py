"""REST routes under `/v1`: a user's memories, their history, their profile, export/import, and sessions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Path, Query, Request, status

from mneme.memory.aio import AsyncMemory
from mneme.memory.record import Kind, MemoryRecord, check_user
from mneme.memory.usermodel.view import UserModelView
from mneme.server.auth import Caller, KeyRing, server_caller
from mneme.server.backend import Backend
from mneme.server.ratelimit import RateLimiter
from mneme.server.schemas import (
    Changes,
    Deleted,
    Edited,
    History,
    MemoryIn,
    MemoryPage,
    MemoryPatch,
    SearchResult,
    Sessions,
    Users,
)
from mneme.validate import printable

router = APIRouter(prefix="/v1", tags=["memories"])

UserId = Annotated[str, Path(min_length=1, max_length=256, description="Whose memories.")]
MemoryId = Annotated[str, Path(min_length=1, max_length=200)]
_NO_LIMIT = RateLimiter(0.0, 1)


def backend_of(request: Request) -> Backend:
    """The app's memory backend."""
    backend: Backend = request.app.state.mneme_backend
    return backend


def caller_of(request: Request) -> Caller:
    """Authenticate a request: the LangGraph server's auth, else `Authorization: Bearer <key>`.

    Raises:
        HTTPException: 401 without a valid key.
        RateLimited: 429 if this key sent more requests than the rate limit allows.
    """
    found = server_caller(request.scope)
    if found is not None:
        return found
    keys: KeyRing = request.app.state.mneme_keys
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if keys.empty:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "no API key is configured on this server: set MNEME_API_KEY",
            headers={"WWW-Authenticate": "Bearer"},
        )
    caller = keys.caller(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
    if caller is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a valid API key is required: Authorization: Bearer <key>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    limiter(request).hit(caller.name)
    return caller


def limiter(request: Request) -> RateLimiter:
    """The app's rate limiter (none for an app built without one)."""
    found: RateLimiter | None = getattr(request.app.state, "mneme_rate", None)
    return found if found is not None else _NO_LIMIT


async def user_of(user_id: UserId, caller: Annotated[Caller, Depends(caller_of)], request: Request) -> str:
    """The user in the path, once the caller is allowed to reach it.

    Raises:
        HTTPException: 403 if the caller's key does not reach this user.
        RateLimited: 429 if this user got more requests than the rate limit allows.
    """
    check_user(user_id)
    if not caller.allows(user_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"{caller.name} may not reach user {user_id!r}")
    limiter(request).hit(f"user {printable(user_id, 40)!r}")
    return user_id


async def memory_of(request: Request) -> AsyncMemory:
    """The app's memory, opened on first use."""
    return await backend_of(request).memory()


User = Annotated[str, Depends(user_of)]
Mem = Annotated[AsyncMemory, Depends(memory_of)]


@router.get("/users", response_model=Users)
async def list_users(caller: Annotated[Caller, Depends(caller_of)], mem: Mem) -> Users:
    """Users the caller may reach (an operator key: every user that has memories)."""
    if caller.users is None:
        return Users(users=await mem.users(), all_users=True)
    return Users(users=sorted(caller.users), all_users=False)


@router.get("/users/{user_id}/memories", response_model=MemoryPage | SearchResult)
async def list_memories(
    user: User,
    mem: Mem,
    q: Annotated[
        str | None, Query(max_length=2000, description="Search by meaning instead of listing.")
    ] = None,
    kind: Annotated[list[Kind] | None, Query(description="Only these kinds.")] = None,
    limit: Annotated[
        int | None,
        Query(ge=1, le=1000, description="Page size (default 100), or hits (default 10, at most 100)."),
    ] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> MemoryPage | SearchResult:
    """List a user's current memories (oldest first), or with `q`, search them (best first)."""
    if q is not None:
        hits = await mem.search(q, user_id=user, limit=min(limit or 10, 100), kinds=kind)
        return SearchResult(query=q, items=hits)
    limit = limit or 100
    records = await mem.get_all(user_id=user, kinds=kind)
    return MemoryPage(items=records[offset : offset + limit], total=len(records), offset=offset, limit=limit)


@router.post("/users/{user_id}/memories", response_model=Changes, status_code=status.HTTP_201_CREATED)
async def add_memory(user: User, mem: Mem, body: MemoryIn) -> Changes:
    """Remember a text (as given, or extracted with `infer`) or a conversation."""
    if body.messages is not None:
        changes = await mem.add(
            body.messages,
            user_id=user,
            infer=True if body.infer is None else body.infer,
            metadata=body.metadata,
            session_id=body.session_id,
        )
        return Changes(changes=changes)
    assert body.text is not None
    if body.infer:
        changes = await mem.add(body.text, user_id=user, metadata=body.metadata, session_id=body.session_id)
        return Changes(changes=changes)
    change = await mem.save(
        body.text,
        user_id=user,
        kind=body.kind,
        subject=body.subject,
        value=body.value,
        importance=body.importance,
        metadata=body.metadata,
        session_id=body.session_id,
    )
    return Changes(changes=[change])


@router.get("/users/{user_id}/memories/{memory_id}", response_model=MemoryRecord)
async def get_memory(user: User, memory_id: MemoryId, mem: Mem) -> MemoryRecord:
    """One current memory (404 for an unknown id or another user's)."""
    return await mem.get(memory_id, user_id=user)


@router.patch("/users/{user_id}/memories/{memory_id}", response_model=Edited)
async def edit_memory(user: User, memory_id: MemoryId, mem: Mem, body: MemoryPatch) -> Edited:
    """Correct a memory's text; the old text stays in its history."""
    change = await mem.update(memory_id, body.text, user_id=user)
    record = await mem.get(change.id or memory_id, user_id=user)
    return Edited(change=change, memory=record)


@router.delete("/users/{user_id}/memories/{memory_id}")
async def delete_memory(user: User, memory_id: MemoryId, mem: Mem) -> dict[str, Any]:
    """Forget one memory (its text is scrubbed from its history too)."""
    change = await mem.delete(memory_id, user_id=user)
    return change.model_dump(mode="json")


@router.get("/users/{user_id}/memories/{memory_id}/history", response_model=History)
async def memory_history(user: User, memory_id: MemoryId, mem: Mem) -> History:
    """Every change of one memory, oldest first."""
    return History(items=await mem.history(memory_id, user_id=user))


@router.get("/users/{user_id}/profile", response_model=UserModelView)
async def user_profile(user: User, mem: Mem) -> UserModelView:
    """What mneme believes about a user, by aspect (hard limits first), with the values each replaced.

    Correct a memory with `PATCH .../memories/{memory_id}`, forget it with `DELETE`. A user
    with no memories has an empty profile.
    """
    return await mem.user_model(user_id=user)


@router.delete("/users/{user_id}/memories", response_model=Deleted)
async def delete_all(user: User, mem: Mem) -> Deleted:
    """Forget everything about a user: memories, old versions and history."""
    return Deleted(deleted=await mem.delete_all(user_id=user))


@router.get("/users/{user_id}/export")
async def export(user: User, mem: Mem) -> dict[str, Any]:
    """Everything kept about a user, in the format `POST import` loads back."""
    return await mem.export(user_id=user)


@router.post("/users/{user_id}/import", response_model=Changes)
async def import_data(user: User, mem: Mem, data: Annotated[dict[str, Any], Body()]) -> Changes:
    """Load an export into this user (ids are kept: importing twice changes nothing)."""
    return Changes(changes=await mem.import_data(data, user_id=user))


@router.get("/users/{user_id}/sessions", response_model=Sessions)
async def list_sessions(user: User, request: Request) -> Sessions:
    """A user's conversation threads, most recent first."""
    return Sessions(items=await backend_of(request).sessions(user))


__all__ = ["router"]
