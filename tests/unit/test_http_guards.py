"""The HTTP app's guards: security headers, body caps, rate limits, and 4xx (never 5xx) for bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mneme.errors import ConfigError, RateLimited
from mneme.memory.api import Memory
from mneme.server.app import create_app
from mneme.server.auth import KeyRing
from mneme.server.guards import MAX_BODY_BYTES, SECURITY_HEADERS
from mneme.server.ratelimit import RateLimiter
from mneme.store.chroma import ChromaStore
from mneme.validate import MAX_MESSAGES, MAX_REQUEST_CHARS, MAX_TEXT_CHARS
from tests.fakes import HashEmbeddings
from tests.hostile import snapshot
from tests.unit.test_fuzz import StoreBackend

KEY = "guards-operator-key-01"


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    emb = HashEmbeddings()
    return Memory(
        ChromaStore.open(str(tmp_path / "c"), index={"embed": emb, "dims": emb.dims, "fields": ["text"]})
    )


def client_of(memory: Memory, limiter: RateLimiter | None = None) -> TestClient:
    app = create_app(StoreBackend(memory), keys=KeyRing({KEY: None}), rate_limit=limiter or RateLimiter(0, 1))
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {KEY}"})


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:
    with client_of(memory) as c:
        yield c


def post_raw(client: TestClient, path: str, body: str) -> tuple[int, dict]:
    resp = client.post(path, content=body.encode(), headers={"content-type": "application/json"})
    return resp.status_code, resp.json()  # always JSON, even for the hostile cases


@pytest.mark.parametrize(
    "path", ["/admin", "/admin/static/admin.js", "/admin/static/admin.css", "/healthz", "/v1/users", "/nope"]
)
def test_every_answer_carries_the_security_headers(client: TestClient, path: str) -> None:
    resp = client.get(path)
    for name, value in SECURITY_HEADERS.items():
        assert resp.headers[name] == value
    assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]


def test_the_admin_page_needs_nothing_the_policy_forbids() -> None:
    page = (Path(__file__).parents[2] / "src/mneme/server/static/admin.html").read_text()
    assert (
        "<script>" not in page
        and "<style" not in page
        and " on" not in page.replace("\n", " ").split("<body")[0]
    )
    assert 'style="' not in page and "javascript:" not in page


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"text": "I like tea", "importance": NaN}', "importance"),
        ('{"text": "I like tea \\ud800"}', "unicode"),
        ('{"messages": [{"role": "user", "content": "hi \\ud800"}]}', "not valid Unicode"),
        ('{"messages": [{"role": "assistant", "content": "x", "tool_calls": "junk"}]}', "tool_calls"),
        (
            json.dumps({"messages": [{"role": "user", "content": "hi"}] * (MAX_MESSAGES + 1)}),
            "at most 500 messages",
        ),
        (
            json.dumps({"messages": [{"role": "user", "content": "y" * 9_000}] * 12}),
            "at most 100,000 characters",
        ),
        (
            json.dumps({"messages": [{"role": "user", "content": "y" * 10_001}]}),
            "at most 10,000 characters",
        ),
        ('{"text": "I like tea", "metadata": {"a": Infinity}}', "NaN or infinity"),
        ("[" * 50_000 + "]" * 50_000, ""),
    ],
)
def test_hostile_bodies_get_a_4xx_with_a_message_and_change_nothing(
    client: TestClient, memory: Memory, body: str, why: str
) -> None:
    before = snapshot(memory.store)
    status, answer = post_raw(client, "/v1/users/ann/memories", body)
    assert 400 <= status < 500 and why in json.dumps(answer, ensure_ascii=False)
    assert snapshot(memory.store) == before


def test_a_user_id_with_a_nul_is_refused_on_every_route(client: TestClient, memory: Memory) -> None:
    before = snapshot(memory.store)
    for method, path in [
        ("GET", "/v1/users/a%00b/memories"),
        ("POST", "/v1/users/a%00b/memories"),
        ("GET", "/v1/users/a%00b/memories/x"),
        ("DELETE", "/v1/users/a%00b/memories/x"),
        ("DELETE", "/v1/users/a%00b/memories"),
        ("GET", "/v1/users/a%00b/export"),
        ("GET", "/v1/users/a%00b/profile"),
        ("GET", "/v1/users/a%1Bb/sessions"),
    ]:
        resp = client.request(method, path, json={"text": "I like tea"} if method == "POST" else None)
        assert resp.status_code == 422, (method, path, resp.text)
        assert "user_id" in resp.json()["detail"]
    assert snapshot(memory.store) == before


def test_a_body_over_the_cap_is_refused_before_any_route_runs(client: TestClient, memory: Memory) -> None:
    big = json.dumps({"text": "x" * (MAX_BODY_BYTES + 10)})
    resp = client.post("/v1/users/ann/memories", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413 and "at most" in resp.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"text": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"x" * 65536
        yield b'"}'

    resp = client.post(
        "/v1/users/ann/memories", content=chunks(), headers={"content-type": "application/json"}
    )
    assert resp.status_code == 413
    assert memory.get_all(user_id="ann") == []


def test_the_largest_allowed_request_fits_the_body_cap_even_fully_escaped(client: TestClient) -> None:
    texts = [f"{i}" + "测" * (MAX_TEXT_CHARS - 1) for i in range(MAX_REQUEST_CHARS // MAX_TEXT_CHARS)]
    body = json.dumps({"messages": [{"role": "user", "content": t} for t in texts], "infer": False})
    assert body.isascii() and len(body) > 6 * MAX_REQUEST_CHARS  # every character sent as \\uXXXX
    resp = client.post("/v1/users/ann/memories", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 201, resp.text[:300]


def test_a_caller_over_its_rate_gets_429_with_retry_after(memory: Memory) -> None:
    clock = [1000.0]
    limiter = RateLimiter(rate=1.0, burst=3, clock=lambda: clock[0])
    with client_of(memory, limiter) as client:
        assert [client.get("/v1/users/ann/memories").status_code for _ in range(3)] == [200, 200, 200]
        refused = client.get("/v1/users/ann/memories")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "too many requests" in refused.json()["detail"]
        clock[0] += 1.0  # a second later, one more request is allowed
        assert client.get("/v1/users/ann/memories").status_code == 200
        assert client.get("/v1/users/ann/memories").status_code == 429


def test_one_users_bucket_does_not_spend_another_users() -> None:
    clock = [0.0]
    limiter = RateLimiter(rate=0.5, burst=2, clock=lambda: clock[0])
    limiter.hit("user ann")
    limiter.hit("user ann")
    with pytest.raises(RateLimited):
        limiter.hit("user ann")
    limiter.hit("user bob")  # bob's own bucket is full


@pytest.mark.parametrize(("spec", "rate", "burst"), [("30/s,burst=120", 30.0, 120), ("600/min", 10.0, 600)])
def test_rate_limits_are_configured_in_one_line(spec: str, rate: float, burst: int) -> None:
    limiter = RateLimiter.parse(spec)
    assert (limiter.rate, limiter.burst) == (rate, burst)
    assert not RateLimiter.parse("off").enabled
    with pytest.raises(ConfigError):
        RateLimiter.parse("lots")
