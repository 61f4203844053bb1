"""Hostile input for every door (the `Memory` API, REST, MCP, the CLI), and a tally of what broke.

Shared by the fuzz tests (`tests/unit/test_fuzz.py`, a few examples per door) and the
benchmark (`benchmarks/fuzz.py`, many more). Each door gets calls whose arguments are drawn
from valid values and from hostile ones: lone surrogates, NUL and control characters, NaN and
infinity, numbers beyond 64 bits, wrong types, texts and lists over every limit, JSON nested
thousands of levels deep. What counts as broken, per door:

- a 5xx answer (REST);
- an exception that is not a `MnemeError`, raised to the caller or inside a tool or a route;
- a call that failed but changed the store anyway.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore

from mneme.errors import MnemeError
from mneme.memory.usage import flush_uses
from mneme.validate import MAX_MESSAGES, MAX_REQUEST_CHARS, MAX_TEXT_CHARS


@dataclass(frozen=True)
class Deep:
    """A marker for a value nested `depth` levels deep, built only when the call is made.

    Hypothesis prints failing examples (and `describe` prints calls) by recursion, which a
    value thousands of levels deep would break; the marker prints as `Deep(list, 3000)`.
    """

    shape: str
    depth: int

    def build(self) -> Any:
        """The nested value itself."""
        return deep_list(self.depth) if self.shape == "list" else deep_dict(self.depth)


def expand(value: Any) -> Any:
    """`value` with every `Deep` marker in it replaced by the nested value."""
    if isinstance(value, Deep):
        return value.build()
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, tuple):
        return tuple(expand(v) for v in value)
    return value


def deep_list(depth: int) -> Any:
    """`[[[...]]]`, `depth` levels."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def deep_dict(depth: int) -> Any:
    """`{"a": {"a": ...}}`, `depth` levels."""
    value: Any = {}
    for _ in range(depth):
        value = {"a": value}
    return value


NASTY_TEXTS = [
    "\ud800",
    "I like tea \udfff",
    "emoji half \ud83d",
    "\udc80\udcff",  # what a non-UTF-8 command-line argument decodes to
    "\x00",
    "I like \x00 tea",
    "",
    " ",
    "\u3000\n\t",
    "\x1b[31mred\x1b[0m",
    "\u202eevil",
    "x" * (MAX_TEXT_CHARS + 1),
    "测" * (MAX_TEXT_CHARS + 1),
    "$gt",
    "../../etc/passwd",
    "%2E%2E",
    "<script>alert(1)</script>",
]
NASTY_NUMBERS: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    -1,
    -0.5,
    1.5,
    2**64,
    -(2**70),
    10**400,
    True,
    False,
    1e-320,
]
WRONG_TYPES: list[Any] = [None, b"bytes", ["a", "list"], {"a": 1}, {1, 2}, object(), 3.5, 7, ("t",)]


def nasty_json() -> st.SearchStrategy[Any]:
    """JSON-ish values with hostile leaves, keys and nesting."""
    leaves = st.one_of(
        st.sampled_from(NASTY_TEXTS[:11]),
        st.sampled_from([math.nan, math.inf, 2**70, True, None, 1.5, -3]),
        st.text(max_size=20),
    )
    keys = st.one_of(
        st.sampled_from(["", "\x00", "\ud800", "$or", "a.b", "user_id", "id"]), st.text(max_size=8)
    )
    tree = st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
        max_leaves=8,
    )
    return st.one_of(
        tree,
        st.builds(Deep, st.sampled_from(["list", "dict"]), st.integers(11, 3000)),
        st.sampled_from(WRONG_TYPES),
    )


def hostile() -> st.SearchStrategy[Any]:
    """Any hostile value: a nasty text, number, wrong type or JSON value."""
    return st.one_of(
        st.sampled_from(NASTY_TEXTS),
        st.sampled_from(NASTY_NUMBERS),
        st.sampled_from(WRONG_TYPES),
        st.text(max_size=30),
        nasty_json(),
    )


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value about three times in four, else a hostile one."""
    return st.one_of(valid, valid, valid, hostile())


def message_lists() -> st.SearchStrategy[Any]:
    """What `add` takes, valid and hostile: texts, message dicts, lists over the limits."""
    message = st.one_of(
        st.sampled_from(["I like green tea", "我不吃辣", "My cat is called Mimi"]),
        st.builds(lambda c: {"role": "user", "content": c}, either(st.just("I live in Paris"))),
        st.builds(lambda r: {"role": r, "content": "hello"}, hostile()),
        st.just({"role": "assistant", "content": "x", "tool_calls": "junk"}),
        st.just({"role": "assistant", "content": "x", "tool_calls": [{"args": {}}]}),
        st.just({"role": "user", "content": [{"type": "text", "text": "\ud800"}]}),
        st.just({"role": "user", "content": "hi", "id": "\x00"}),
        hostile(),
    )
    return st.one_of(
        message,
        st.lists(message, min_size=0, max_size=4),
        st.just(["x"] * (MAX_MESSAGES + 1)),
        st.just(["y" * MAX_TEXT_CHARS] * (MAX_REQUEST_CHARS // MAX_TEXT_CHARS + 1)),  # each fits, not all
        st.just([{"role": "user", "content": "z" * (MAX_REQUEST_CHARS // 2 + 1)}] * 2),
    )


@dataclass
class Tally:
    """What one door did with the hostile input it got."""

    tried: int = 0
    refused: int = 0
    server_errors: int = 0
    other_exceptions: int = 0
    changed_on_error: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether nothing broke."""
        return not (self.server_errors or self.other_exceptions or self.changed_on_error)


class Fuzz:
    """Counts per door; with `strict`, the first broken call fails (hypothesis then shrinks it)."""

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        self.tallies: dict[str, Tally] = defaultdict(Tally)

    def note(
        self,
        door: str,
        what: str,
        *,
        refused: bool = False,
        server_error: bool = False,
        other: BaseException | None = None,
        changed: bool = False,
    ) -> None:
        """Record one call and what came of it."""
        tally = self.tallies[door]
        tally.tried += 1
        tally.refused += int(refused)
        tally.server_errors += int(server_error)
        tally.other_exceptions += int(other is not None)
        tally.changed_on_error += int(changed)
        if server_error or other is not None or changed:
            problem = f"{door}: {what}: " + (
                f"{type(other).__name__}: {other}"
                if other is not None
                else "5xx"
                if server_error
                else "changed"
            )
            if len(tally.failures) < 10:
                tally.failures.append(problem[:500])
            if self.strict:
                raise AssertionError(problem[:2000])

    def report(self) -> dict[str, dict[str, int]]:
        """The counts per door, JSON-ready."""
        return {
            door: {
                "inputs": t.tried,
                "refused": t.refused,
                "5xx": t.server_errors,
                "other_exceptions": t.other_exceptions,
                "changed_on_error": t.changed_on_error,
            }
            for door, t in sorted(self.tallies.items())
        }


def snapshot(store: BaseStore) -> dict[tuple[tuple[str, ...], str], str]:
    """Every item of a store as (namespace, key) -> JSON of its value (use counts written first)."""
    flush_uses(10.0)
    out: dict[tuple[tuple[str, ...], str], str] = {}
    for ns in store.list_namespaces(limit=1_000_000):
        if ns[0] in ("memory_usage",):
            continue
        for item in store.search(ns, limit=1_000_000):
            out[(tuple(item.namespace), item.key)] = json.dumps(item.value, sort_keys=True, default=str)
    return out


def describe(args: Any) -> str:
    """A short, printable description of a call's arguments."""
    text = ascii(args)
    return text if len(text) <= 300 else text[:300] + "..."


class Watched:
    """A `Memory` whose calls record any exception that is not a `MnemeError` (then re-raise it).

    Routes and tools turn exceptions into answers (a 500, an MCP error), which would hide the
    kind of exception; this keeps it.
    """

    def __init__(self, memory: Any, seen: list[BaseException]) -> None:
        self._memory = memory
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._memory, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except MnemeError:
                raise
            except Exception as exc:
                self._seen.append(exc)
                raise

        return call


def run_examples(examples: int, strategy: st.SearchStrategy[Any], body: Callable[[Any], None]) -> None:
    """Run `body` on `examples` values drawn from `strategy` (hypothesis, no deadline)."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(strategy)
    def each(value: Any) -> None:
        body(value)

    each()


@contextmanager
def quiet_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop for driving async doors from a sync test."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def write_file(folder: Path, name: str, content: bytes) -> Path:
    """Write bytes to a file in a folder and return its path."""
    path = folder / name
    path.write_bytes(content)
    return path


# -- the doors ---------------------------------------------------------------------------------

USERS = st.sampled_from(["ann", "bob"])
TEXTS = st.sampled_from(["I like green tea", "我不吃辣", "My sister lives in Lyon", "喜欢跑步"])
KINDS = st.sampled_from(["profile", "semantic", "episodic"])
MAYBE_SESSION = st.sampled_from([None, "s-1"])
METADATA = st.sampled_from([None, {}, {"topic": "food"}, {"source": {"app": "web", "n": 3}}])
FILTERS = st.sampled_from(
    [None, {"topic": "food"}, {"importance": {"$gte": 0.5}}, {"kind": {"$in": ["semantic"]}}]
)


def export_variants(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A real export of a user, as is or with one hostile change."""

    def spoil(section: str, row: int, field_name: str, value: Any) -> Any:
        data = json.loads(json.dumps(base))
        rows = data.get(section)
        if field_name == "*":
            data[section] = value  # the whole section ("sessions": 5)
        elif isinstance(rows, list) and rows:
            target = rows[row % len(rows)]
            if isinstance(target, dict):
                target[field_name] = value
        else:
            data[section] = [{field_name: value}]
        return data

    sections = st.sampled_from(["memories", "archive", "history", "sessions", "pending"])
    fields = st.sampled_from(
        ["*", "id", "text", "kind", "importance", "metadata", "memory_id", "thread_id", "messages"]
    )
    return st.one_of(
        st.just(base),
        st.builds(spoil, sections, st.integers(0, 5), fields, hostile()),
        st.builds(lambda v: {**base, "format": v}, hostile()),
        st.just(
            {**base, "memories": [dict(base["memories"][0], id=f"m{i}") for i in range(6000)]}
            if base["memories"]
            else base
        ),
        hostile(),
    )


def spoiled(name: str, **args: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(name, arguments): valid arguments, then none, one or two of them replaced by hostile values.

    Calls with one bad argument among good ones are what show whether a door checks everything
    before it starts to write.
    """
    keys = list(args)
    valid = st.fixed_dictionaries(args)
    if not keys:
        return valid.map(lambda kw: (name, kw))
    bad = st.lists(st.tuples(st.sampled_from(keys), hostile()), max_size=2, unique_by=lambda kv: kv[0])
    return st.tuples(valid, bad).map(lambda t: (name, {**t[0], **dict(t[1])}))


def memory_calls(ids: list[str], export: dict[str, Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(method, keyword arguments) pairs for every public `Memory` method."""
    user = USERS
    mid = st.sampled_from(ids)
    call = spoiled

    return st.one_of(
        call(
            "add",
            messages_or_text=message_lists(),
            user_id=user,
            session_id=MAYBE_SESSION,
            metadata=METADATA,
            infer=st.booleans(),
            agent_id=st.sampled_from([None, "agent-1"]),
        ),
        call(
            "save",
            text=TEXTS,
            user_id=user,
            kind=KINDS,
            subject=st.sampled_from([None, "diet"]),
            value=st.sampled_from([None, "VEGAN"]),
            importance=st.floats(0, 1),
            metadata=METADATA,
            actor=st.just("api"),
            session_id=MAYBE_SESSION,
            ttl_days=st.sampled_from([None, 0, 30.5]),
            confirmed=st.booleans(),
        ),
        call(
            "set_field",
            subject=st.just("shipping"),
            value=st.just("SF_EXPRESS"),
            user_id=user,
            text=st.sampled_from([None, "ships with SF"]),
            confirmed=st.booleans(),
        ),
        call("profile", user_id=user),
        call("user_model", user_id=user),
        call("update", memory_id=mid, text=TEXTS, user_id=user, actor=st.just("api")),
        call("delete", memory_id=mid, user_id=user, actor=st.just("admin")),
        call("delete_all", user_id=st.just("zed")),
        call("sweep_expired", user_id=st.sampled_from([None, "ann"]), now=st.sampled_from([None])),
        call("pending", user_id=st.sampled_from([None, "ann"])),
        call("retry_pending", user_id=st.sampled_from([None, "ann"]), force=st.booleans()),
        call("extraction_stats"),
        call(
            "search",
            query=TEXTS,
            user_id=user,
            limit=st.integers(1, 20),
            kinds=st.sampled_from([None, ["semantic"], ("profile", "episodic"), "profile"]),
            include_history=st.booleans(),
            filters=FILTERS,
            min_relevance=st.floats(0, 1),
            session_id=MAYBE_SESSION,
            max_sensitivity=st.sampled_from([None, 0, 1, 2]),
        ),
        call("get", memory_id=mid, user_id=user),
        call("get_all", user_id=user, kinds=st.sampled_from([None, ["semantic"], "profile"])),
        call("history", memory_id=mid, user_id=user),
        call("users"),
        call("export", user_id=user),
        call("check_import", data=export_variants(export), user_id=user),
        call("import_data", data=export_variants(export), user_id=st.just("imp")),
        # never spoiled: a valid home would be opened (and created) in the working folder
        st.tuples(
            st.just("open"),
            st.fixed_dictionaries({"home": st.sampled_from(["\x00", "home\x00x", 5, b"x", ["a"], "\ud800"])}),
        ),
        st.tuples(
            st.just("open"),
            st.fixed_dictionaries(
                {"home": st.just(None), "embeddings": st.sampled_from(["\x00", "nope", 5, "no-such:model"])}
            ),
        ),
    )


def check_call(fuzz: Fuzz, door: str, store: BaseStore, what: str, run: Callable[[], Any]) -> Any:
    """Run one call; note a non-`MnemeError` exception, or a store changed by a failed call."""
    before = snapshot(store)
    try:
        result = run()
    except MnemeError:
        fuzz.note(door, what, refused=True, changed=snapshot(store) != before)
        return None
    except Exception as exc:
        fuzz.note(door, what, other=exc)
        return None
    fuzz.note(door, what)
    return result


def fuzz_memory(fuzz: Fuzz, memory: Any, examples: int, ids: list[str], export: dict[str, Any]) -> None:
    """Every `Memory` method with hostile arguments."""
    from mneme.memory.api import Memory

    def one(drawn: tuple[str, dict[str, Any]]) -> None:
        name, kwargs = drawn
        method = getattr(Memory, name) if name == "open" else getattr(memory, name)

        def run() -> Any:
            result = method(**expand(kwargs))
            if name == "open":
                result.close()
            return result

        check_call(fuzz, f"Memory.{name}", memory.store, f"{name}({describe(kwargs)})", run)

    run_examples(examples, memory_calls(ids, export), one)


def _seg(value: Any) -> str:
    """A path or query segment as a hostile client would send it (raw bytes, percent-encoded)."""
    from urllib.parse import quote

    if isinstance(value, str):  # cut: HTTP clients refuse URLs over 64 KiB themselves
        return quote(value[:3000].encode("utf-8", "surrogatepass"), safe="")
    return quote(ascii(value)[:200], safe="")


def _dump(value: Any) -> str:
    """JSON text of a value, with `Deep` markers written out (no recursion) and junk as strings."""
    if isinstance(value, Deep):
        if value.shape == "list":
            return "[" * value.depth + "]" * value.depth
        return '{"a":' * value.depth + "{}" + "}" * value.depth
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + _dump(v) for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    try:
        return json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        return json.dumps(ascii(value))


def _body(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return _dump(value).encode("utf-8", "surrogatepass")


def rest_requests(ids: list[str], export: dict[str, Any]) -> st.SearchStrategy[tuple[str, str, bytes | None]]:
    """(method, path with query, body) for every REST route, with hostile parts."""
    from mneme.server.guards import MAX_BODY_BYTES

    user = either(USERS).map(_seg)
    mid = either(st.sampled_from(ids)).map(_seg)
    junk = st.sampled_from(
        [b"", b"{", b"\xff\xfe\x00", b"[" * 100_000, b"{}" * 10, b"x" * (MAX_BODY_BYTES + 1), b"null", b"NaN"]
    )
    extras = {
        "infer": either(st.booleans()),
        "kind": either(KINDS),
        "subject": either(st.just("diet")),
        "importance": either(st.floats(0, 1)),
        "metadata": either(METADATA),
        "session_id": either(MAYBE_SESSION),
    }
    memory_body = st.one_of(
        st.fixed_dictionaries({"text": either(TEXTS)}, optional=extras),
        st.fixed_dictionaries({"messages": message_lists()}, optional=extras),
        st.fixed_dictionaries({"text": TEXTS, "messages": message_lists(), "user_id": hostile()}),
        hostile(),
    ).map(_body)
    query = st.fixed_dictionaries(
        {},
        optional={
            "q": either(TEXTS),
            "kind": either(KINDS),
            "limit": either(st.integers(1, 50)),
            "offset": hostile(),
        },
    ).map(lambda d: "&".join(f"{k}={_seg(v)}" for k, v in d.items()))

    def req(method: str, path: str, q: str = "", body: bytes | None = None) -> tuple[str, str, bytes | None]:
        return (method, path + (f"?{q}" if q else ""), body)

    return st.one_of(
        st.builds(lambda: req("GET", "/v1/users")),
        st.builds(lambda u, q: req("GET", f"/v1/users/{u}/memories", q), user, query),
        st.builds(
            lambda u, b: req("POST", f"/v1/users/{u}/memories", body=b), user, st.one_of(memory_body, junk)
        ),
        st.builds(lambda u, m: req("GET", f"/v1/users/{u}/memories/{m}"), user, mid),
        st.builds(
            lambda u, m, b: req("PATCH", f"/v1/users/{u}/memories/{m}", body=b),
            user,
            mid,
            st.one_of(st.fixed_dictionaries({"text": either(TEXTS)}).map(_body), junk),
        ),
        st.builds(lambda u, m: req("DELETE", f"/v1/users/{u}/memories/{m}"), user, mid),
        st.builds(lambda u, m: req("GET", f"/v1/users/{u}/memories/{m}/history"), user, mid),
        st.builds(lambda u: req("DELETE", f"/v1/users/{u}/memories"), either(st.just("zed")).map(_seg)),
        st.builds(lambda u: req("GET", f"/v1/users/{u}/export"), user),
        st.builds(lambda u: req("GET", f"/v1/users/{u}/profile"), user),
        st.builds(
            lambda u, b: req("POST", f"/v1/users/{u}/import", body=b),
            either(st.just("imp")).map(_seg),
            st.one_of(export_variants(export).map(_body), junk),
        ),
        st.builds(lambda u: req("GET", f"/v1/users/{u}/sessions"), user),
        st.builds(lambda: req("GET", "/healthz")),
        st.builds(lambda: req("GET", "/admin")),
    )


def fuzz_rest(
    fuzz: Fuzz,
    client: Any,
    store: BaseStore,
    seen: list[BaseException],
    examples: int,
    ids: list[str],
    export: dict[str, Any],
) -> None:
    """Every REST route with hostile paths, query strings and bodies (client: a `TestClient`)."""

    def one(drawn: tuple[str, str, bytes | None]) -> None:
        method, path, body = drawn
        route = (
            method
            + " "
            + "/".join("{}" if i in (3, 5) else p for i, p in enumerate(path.split("?")[0].split("/")))
        )
        before = snapshot(store)
        seen.clear()
        resp = client.request(method, path, content=body, headers={"content-type": "application/json"})
        failed = resp.status_code >= 400
        other = seen[0] if seen else None
        fuzz.note(
            f"REST {route}",
            f"{method} {describe(path)} {describe(body[:200] if body else body)} -> {resp.status_code} {resp.text[:200]}",
            refused=failed,
            server_error=resp.status_code >= 500,
            other=other,
            changed=failed and snapshot(store) != before,
        )

    run_examples(examples, rest_requests(ids, export), one)


def json_hostile() -> st.SearchStrategy[Any]:
    """Hostile values that JSON (and so MCP) can carry."""
    return st.one_of(
        st.sampled_from(NASTY_TEXTS),
        st.sampled_from([math.nan, math.inf, -1, 2**70, True, None, 1.5, 0, 10_000]),
        st.sampled_from(
            [["a"], {"a": 1}, Deep("list", 60), Deep("dict", 60)]
        ),  # deeper: the client cannot send it
        st.text(max_size=20),
    )


def mcp_calls(ids: list[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(tool, arguments) for every MCP tool, with hostile and missing arguments."""
    return st.one_of(*mcp_tools(ids))


def mcp_tools(ids: list[str]) -> list[st.SearchStrategy[tuple[str, dict[str, Any]]]]:
    """(tool, arguments) of each MCP tool, one strategy per tool."""

    def mix(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(valid, json_hostile())

    def tool(name: str, **args: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
        return st.fixed_dictionaries({}, optional=args).map(lambda kw: (name, kw))

    return [
        tool("search_memory", query=mix(TEXTS), limit=mix(st.integers(1, 50)), extra=json_hostile()),
        tool("save_memory", text=mix(TEXTS), kind=mix(KINDS)),
        tool("forget_memory", memory_id=mix(st.sampled_from(ids))),
        tool("list_memories", kind=mix(KINDS), limit=mix(st.integers(1, 500))),
        st.tuples(st.just("no_such_tool"), st.just({})),
    ]


def fuzz_mcp(
    fuzz: Fuzz, memory: Any, store: BaseStore, examples: int, ids: list[str], user: str = "ann"
) -> None:
    """Every MCP tool (through a real MCP client, in-process) with hostile arguments."""
    from mcp import Client

    from mneme.mcp_server import build_server
    from mneme.memory.aio import AsyncMemory

    seen: list[BaseException] = []
    aio = AsyncMemory(Watched(memory, seen))

    async def call(name: str, args: dict[str, Any]) -> Any:
        async with Client(build_server(aio, user)) as client:
            return await asyncio.wait_for(client.call_tool(name, args), timeout=60)

    with quiet_loop() as loop:

        def one(drawn: tuple[str, dict[str, Any]]) -> None:
            name, args = drawn
            before = snapshot(store)
            seen.clear()
            what = f"{name}({describe(args)})"
            try:
                result = loop.run_until_complete(call(name, expand(args)))
            except Exception as exc:  # no answer: a crash or a hang (timeout)
                fuzz.note(f"MCP {name}", what, other=exc)
                return
            failed = bool(result.is_error)
            fuzz.note(
                f"MCP {name}",
                what,
                refused=failed,
                other=seen[0] if seen else None,
                changed=failed and snapshot(store) != before,
            )

        tools = mcp_tools(ids)
        for each in tools:  # every tool, whatever the mixed draws below pick
            run_examples(max(1, examples // (2 * len(tools))), each, one)
        run_examples(max(1, examples // 2), mcp_calls(ids), one)
    aio._pool.shutdown(wait=True)


def cli_invocations(ids: list[str], files: list[Path]) -> st.SearchStrategy[tuple[list[str], str]]:
    """(argv without --home, stdin) for every CLI command that takes input."""
    text = st.one_of(TEXTS, st.sampled_from([t for t in NASTY_TEXTS if t]), st.text(min_size=1, max_size=20))
    user = st.one_of(USERS, st.sampled_from(["\ud800", "\udc80x", "a\x00", " ", "x" * 300]))
    mid = st.one_of(st.sampled_from(ids), text)
    number = st.sampled_from(["3", "0", "-1", "nan", "1e309", "abc", "99999999999999999999"])
    kind = st.sampled_from(["semantic", "profile", "feelings", "\ud800", ""])
    path = st.sampled_from([str(f) for f in files])

    def cmd(*parts: st.SearchStrategy[Any]) -> st.SearchStrategy[list[str]]:
        return st.tuples(*parts).map(lambda t: [x for p in t for x in (p if isinstance(p, list) else [p])])

    flag = st.sampled_from([[], ["--json"]])
    argv = st.one_of(
        cmd(
            st.just(["memories", "list", "--user"]),
            user,
            st.sampled_from([[], ["--kind", "semantic"], ["--kind", "feelings"], ["--kind", "\ud800"]]),
        ),
        cmd(st.just(["memories", "search"]), text, st.just("--user"), user, st.just("--limit"), number, flag),
        cmd(st.just(["memories", "show"]), mid, st.just("--user"), user),
        cmd(
            st.just(["memories", "add"]),
            text,
            st.just("--user"),
            user,
            st.just("--kind"),
            kind,
            st.sampled_from([[], ["--infer"]]),
        ),
        cmd(st.just(["memories", "edit"]), mid, text, st.just("--user"), user),
        cmd(st.just(["memories", "delete"]), mid, st.just("--user"), user),
        cmd(
            st.just(["memories", "delete", "--all", "--yes", "--user"]),
            st.sampled_from(["zed", "\ud800", ""]),
        ),
        cmd(st.just(["memories", "history"]), mid, st.just("--user"), user),
        cmd(st.just(["memories", "export", "--user"]), user),
        cmd(st.just(["memories", "profile", "--user"]), user),
        cmd(
            st.just(["memories", "import"]),
            path,
            st.just("--user"),
            st.sampled_from(["imp", "\x00", "\ud800"]),
        ),
        cmd(st.just(["sessions", "list", "--user"]), user),
        cmd(st.just(["sessions", "show"]), text, st.just("--user"), user),
        cmd(
            st.just(["sessions", "delete"]),
            text,
            st.just("--user"),
            user,
            st.sampled_from([[], ["--forget-episodes"]]),
        ),
        cmd(
            st.just(["chat", "--user"]),
            user,
            st.sampled_from([[], ["--session", "\x00"], ["--session", "s-1"]]),
        ),
        cmd(st.just(["mcp", "--user"]), st.sampled_from(["\ud800", "", "a\x00b", "x" * 300])),
        cmd(
            st.just(["serve", "--port"]),
            number,
            st.just("--host"),
            st.sampled_from(["\x00", "\ud800", "", " "]),
        ),
    )
    stdin = st.sampled_from(["", "/exit\n", "\ud800\n", "\x00\n/exit\n"])
    return st.tuples(argv, stdin)


def fuzz_cli(
    fuzz: Fuzz, home: Path, store: BaseStore, examples: int, ids: list[str], files: list[Path]
) -> None:
    """Every CLI command with hostile arguments, files and input (in-process, typer's runner)."""
    from typer.testing import CliRunner

    from mneme.cli import app

    runner = CliRunner()

    def one(drawn: tuple[list[str], str]) -> None:
        argv, stdin = drawn
        is_serve = argv[0] == "serve"
        full = (
            [*argv, "--home", str(home)] if not is_serve else [*argv, "--home", str(home), "--host", "\x00"]
        )
        before = snapshot(store)
        result = runner.invoke(app, full, input=stdin.encode("utf-8", "surrogatepass"))
        name = " ".join(argv[:2]) if argv[0] in ("memories", "sessions") else argv[0]
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        failed = result.exit_code != 0
        fuzz.note(
            f"CLI {name}",
            f"{describe(argv)} -> exit {result.exit_code} {describe(result.output[-300:])}",
            refused=failed,
            other=result.exception
            if crashed
            else (RuntimeError(f"exit code 1: {result.output[-300:]}") if result.exit_code == 1 else None),
            changed=failed and snapshot(store) != before,
        )

    run_examples(examples, cli_invocations(ids, files), one)


def import_files(folder: Path, export: dict[str, Any]) -> list[Path]:
    """Export files for `memories import`: a good one and hostile ones."""
    spoiled = json.loads(json.dumps(export))
    if spoiled["memories"]:
        spoiled["memories"][-1]["text"] = "\ud800"
    return [
        write_file(folder, "good.json", json.dumps(export).encode()),
        write_file(folder, "spoiled.json", json.dumps(spoiled).encode()),
        write_file(
            folder,
            "nan.json",
            json.dumps(
                {**export, "history": [{"memory_id": "x", "operation": "ADD", "at": math.nan}]},
                allow_nan=True,
            ).encode(),
        ),
        write_file(folder, "deep.json", b"[" * 100_000),
        write_file(folder, "binary.json", b"\xff\xfe\x00\x01"),
        write_file(folder, "list.json", b"[1, 2]"),
        write_file(folder, "sessions.json", json.dumps({**export, "sessions": 5}).encode()),
        folder / "missing.json",
    ]
