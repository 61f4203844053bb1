"""The REST routes through a real server on a loopback port (uvicorn, real home, real model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.graph import build_graph
from mneme.home import open_home
from mneme.memory.api import Memory
from mneme.server import create_app
from mneme.server.auth import KeyRing
from mneme.server.backend import HomeBackend
from tests.integration.server import serve_app

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer operator-key-0001"}
ANN_ONLY = {"Authorization": "Bearer ann-only-key-0001"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("http") / "home"


@pytest.fixture(scope="module")
def url(home: Path) -> Iterator[str]:
    keys = KeyRing({"operator-key-0001": None, "ann-only-key-0001": frozenset({"ann"})})
    with serve_app(create_app(HomeBackend(home), keys=keys)) as base:
        yield base


@pytest.fixture
def client(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, headers=ADMIN, timeout=60) as c:
        yield c


def add(client: httpx.Client, user: str, text: str, **extra: Any) -> dict[str, Any]:
    resp = client.post(f"/v1/users/{user}/memories", json={"text": text, **extra})
    assert resp.status_code == 201, resp.text
    change: dict[str, Any] = resp.json()["changes"][0]
    return change


def test_every_route_needs_a_valid_key_but_healthz(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as anon:
        assert anon.get("/healthz").json()["status"] == "ok"
        for method, path in [
            ("GET", "/v1/users"),
            ("GET", "/v1/users/ann/memories"),
            ("POST", "/v1/users/ann/memories"),
            ("DELETE", "/v1/users/ann/memories"),
            ("GET", "/v1/users/ann/export"),
            ("GET", "/v1/users/ann/sessions"),
        ]:
            resp = anon.request(method, path)
            assert resp.status_code == 401, (method, path)
            assert resp.headers["www-authenticate"] == "Bearer"
        wrong = anon.get("/v1/users/ann/memories", headers={"Authorization": "Bearer not-the-key"})
        assert wrong.status_code == 401
        basic = anon.get(
            "/v1/users/ann/memories", headers={"Authorization": "Basic b3BlcmF0b3Ita2V5LTAwMDE="}
        )
        assert basic.status_code == 401


def test_add_list_search_get_edit_history_and_delete(client: httpx.Client) -> None:
    spicy = add(client, "ann", "我不吃辣")
    city = add(client, "ann", "I live in Berlin", kind="profile", metadata={"via": "test"})
    assert spicy["operation"] == "ADD" and city["operation"] == "ADD"
    assert add(client, "ann", "我不吃辣")["operation"] == "NOOP"  # no duplicate

    listed = client.get("/v1/users/ann/memories").json()
    assert listed["total"] == 2 and [m["text"] for m in listed["items"]] == ["我不吃辣", "I live in Berlin"]
    assert [
        m["text"] for m in client.get("/v1/users/ann/memories", params={"kind": "profile"}).json()["items"]
    ] == ["I live in Berlin"]
    page = client.get("/v1/users/ann/memories", params={"limit": 1, "offset": 1}).json()
    assert (page["total"], [m["text"] for m in page["items"]]) == (2, ["I live in Berlin"])

    found = client.get("/v1/users/ann/memories", params={"q": "她能吃辣吗"}).json()
    assert found["items"][0]["id"] == spicy["id"] and found["items"][0]["score"] > 0

    one = client.get(f"/v1/users/ann/memories/{city['id']}").json()
    assert (one["kind"], one["metadata"], one["user_id"]) == ("profile", {"via": "test"}, "ann")

    edited = client.patch(f"/v1/users/ann/memories/{spicy['id']}", json={"text": "能吃一点辣"})
    assert edited.status_code == 200
    assert (
        edited.json()["memory"]["text"] == "能吃一点辣" and edited.json()["change"]["old_text"] == "我不吃辣"
    )
    history = client.get(f"/v1/users/ann/memories/{spicy['id']}/history").json()["items"]
    assert [(h["operation"], h["new_text"]) for h in history] == [
        ("ADD", "我不吃辣"),
        ("UPDATE", "能吃一点辣"),
    ]

    deleted = client.delete(f"/v1/users/ann/memories/{city['id']}")
    assert deleted.status_code == 200 and deleted.json()["operation"] == "DELETE"
    assert client.get(f"/v1/users/ann/memories/{city['id']}").status_code == 404
    assert [m["text"] for m in client.get("/v1/users/ann/memories").json()["items"]] == ["能吃一点辣"]


def test_a_user_never_reaches_another_users_memories(client: httpx.Client, url: str) -> None:
    bobs = add(client, "bob", "bob 的地址是上海")
    # another user's id through this user's path: not found, whatever the method
    for method in ("GET", "DELETE"):
        assert client.request(method, f"/v1/users/carol/memories/{bobs['id']}").status_code == 404
    assert client.patch(f"/v1/users/carol/memories/{bobs['id']}", json={"text": "x"}).status_code == 404
    assert client.get(f"/v1/users/carol/memories/{bobs['id']}/history").status_code == 404
    assert client.get("/v1/users/carol/memories", params={"q": "上海"}).json()["items"] == []
    # a key limited to ann cannot reach bob at all, and lists only ann
    with httpx.Client(base_url=url, headers=ANN_ONLY, timeout=30) as ann:
        assert ann.get("/v1/users/bob/memories").status_code == 403
        assert ann.get(f"/v1/users/bob/memories/{bobs['id']}").status_code == 403
        assert ann.get("/v1/users").json() == {"users": ["ann"], "all_users": False}
        assert ann.get("/v1/users/ann/memories").status_code == 200
    assert "bob" in client.get("/v1/users").json()["users"]
    assert client.get(f"/v1/users/bob/memories/{bobs['id']}").json()["text"] == "bob 的地址是上海"


def test_malformed_bodies_get_422_and_change_nothing(client: httpx.Client) -> None:
    add(client, "dora", "我喜欢猫")
    before = client.get("/v1/users/dora/export").json()["memories"]
    bad_posts: list[Any] = [
        {},
        {"text": ""},
        {"text": "   "},
        {"text": "x", "messages": [{"role": "user", "content": "y"}]},
        {"text": "x", "user_id": "eve"},  # identity never comes from the body
        {"text": "x", "kind": "feeling"},
        {"text": "x", "importance": 3},
        {"messages": []},
        {"messages": [{"role": "nobody", "content": "hi"}]},
        ["not", "an", "object"],
    ]
    for body in bad_posts:
        resp = client.post("/v1/users/dora/memories", json=body)
        assert resp.status_code == 422, (body, resp.text)
        assert resp.json()["detail"]
    assert (
        client.post(
            "/v1/users/dora/memories", content=b"{oops", headers={"Content-Type": "application/json"}
        ).status_code
        == 422
    )
    memory_id = before[0]["id"]
    for body in [{}, {"text": ""}, {"text": "x", "user_id": "eve"}, {"text": 5}]:
        assert client.patch(f"/v1/users/dora/memories/{memory_id}", json=body).status_code == 422, body
    assert client.post("/v1/users/dora/import", json={"memories": []}).status_code == 422  # not an export
    assert client.get("/v1/users/dora/memories", params={"kind": "feeling"}).status_code == 422
    assert client.get("/v1/users/dora/memories", params={"limit": 0}).status_code == 422
    assert client.get("/v1/users/dora/memories", params={"q": "  "}).status_code == 422
    assert client.get("/v1/users/" + "u" * 300 + "/memories").status_code == 422
    assert client.get("/v1/users/dora/export").json()["memories"] == before


def test_export_delete_all_import_round_trip(client: httpx.Client) -> None:
    first = add(client, "erin", "我对花生过敏")
    second = add(client, "erin", "每周五去游泳", kind="episodic")
    client.patch(f"/v1/users/erin/memories/{first['id']}", json={"text": "我对花生和芝麻过敏"})
    exported = client.get("/v1/users/erin/export").json()
    assert {m["id"] for m in exported["memories"]} == {first["id"], second["id"]}

    assert client.delete("/v1/users/erin/memories").json() == {"deleted": 2}
    assert client.get("/v1/users/erin/memories").json()["total"] == 0
    assert client.get(f"/v1/users/erin/memories/{first['id']}/history").status_code == 404

    loaded = client.post("/v1/users/erin/import", json=exported)
    assert loaded.status_code == 200 and [c["operation"] for c in loaded.json()["changes"]] == [
        "IMPORT",
        "IMPORT",
    ]
    items = client.get("/v1/users/erin/memories").json()["items"]
    assert {(m["id"], m["text"]) for m in items} == {
        (first["id"], "我对花生和芝麻过敏"),
        (second["id"], "每周五去游泳"),
    }
    history = client.get(f"/v1/users/erin/memories/{first['id']}/history").json()["items"]
    assert [h["operation"] for h in history][:2] == ["ADD", "UPDATE"]  # the history came back too
    assert client.get("/v1/users/erin/memories", params={"q": "过敏"}).json()["items"][0]["id"] == first["id"]
    again = client.post("/v1/users/erin/import", json=exported).json()["changes"]
    assert [c["operation"] for c in again] == ["NOOP", "NOOP"]
    assert client.get("/v1/users/erin/memories").json()["total"] == 2


def test_messages_are_extracted_and_sessions_listed(client: httpx.Client, home: Path) -> None:
    resp = client.post(
        "/v1/users/finn/memories",
        json={"messages": [{"role": "user", "content": "麻烦以后都发顺丰"}], "session_id": "s-1"},
    )
    assert resp.status_code == 201
    assert "快递偏好：以后都发顺丰" in [c["text"] for c in resp.json()["changes"]]
    # a conversation through the graph on the same home shows up as a session
    opened = open_home(home)
    try:
        graph = build_graph(checkpointer=opened.checkpointer(), store=opened.store, model="offline")
        graph.invoke(
            {"messages": [{"role": "user", "content": "订单号20240508001发货了吗？"}]},
            {"configurable": {"thread_id": "t-finn"}},
            context={"user_id": "finn"},
        )
        sessions = client.get("/v1/users/finn/sessions").json()["items"]
        assert [(s["thread_id"], s["turns"]) for s in sessions] == [("t-finn", 1)]
        assert client.get("/v1/users/ann/sessions").json()["items"] == []
        assert Memory(opened.store).get_all(user_id="finn")  # the same memory the routes see
    finally:
        opened.close()


def test_the_profile_shows_what_is_believed_and_follows_a_correction(client: httpx.Client, url: str) -> None:
    for said in ["我对花生过敏", "我在阿里巴巴工作", "我跳槽去腾讯了"]:
        assert client.post("/v1/users/gail/memories", json={"text": said, "infer": True}).status_code == 201
    add(client, "gail", "昨天去了西湖", kind="episodic")  # about no aspect of her: not in the profile

    profile = client.get("/v1/users/gail/profile").json()
    assert profile["user_id"] == "gail" and profile["total"] == 2
    allergy, employer = profile["aspects"]
    assert (allergy["aspect"], allergy["constraint"], allergy["memories"][0]["constraint"]) == (
        "allergy",
        True,
        True,
    )
    assert "花生" in allergy["memories"][0]["text"]
    (job,) = employer["memories"]
    assert employer["aspect"] == "employer" and employer["single"] and "腾讯" in job["text"]
    assert [("阿里巴巴" in e["text"], e["change"]) for e in job["earlier"]] == [(True, "superseded")]

    # an operator corrects it through the memory routes; the profile follows
    assert (
        client.patch(f"/v1/users/gail/memories/{job['id']}", json={"text": "在腾讯云工作"}).status_code == 200
    )
    (job,) = client.get("/v1/users/gail/profile").json()["aspects"][1]["memories"]
    assert job["text"] == "在腾讯云工作" and [e["change"] for e in job["earlier"]] == ["edited", "superseded"]
    assert client.delete(f"/v1/users/gail/memories/{allergy['memories'][0]['id']}").status_code == 200
    assert [a["aspect"] for a in client.get("/v1/users/gail/profile").json()["aspects"]] == ["employer"]


def test_the_profile_route_is_guarded_like_every_user_route(client: httpx.Client, url: str) -> None:
    assert client.get("/v1/users/nobody-here/profile").json() == {
        "user_id": "nobody-here",
        "aspects": [],
        "total": 0,
    }
    assert client.get("/v1/users/" + "u" * 300 + "/profile").status_code == 422
    bad = client.get("/v1/users/a%01b/profile")
    assert bad.status_code == 422 and "user_id" in bad.json()["detail"]
    with httpx.Client(base_url=url, timeout=30) as anon:
        assert anon.get("/v1/users/ann/profile").status_code == 401
    with httpx.Client(base_url=url, headers=ANN_ONLY, timeout=30) as ann:
        assert ann.get("/v1/users/gail/profile").status_code == 403
        assert ann.get("/v1/users/ann/profile").status_code == 200


def test_a_pronoun_in_a_later_call_of_the_same_session_is_read_with_the_message_before(
    client: httpx.Client,
) -> None:
    for text in ["My sister is a nurse in Leeds.", "She just quit and started med school in Glasgow."]:
        resp = client.post(
            "/v1/users/gwen/memories",
            json={"messages": [{"role": "user", "content": text}], "session_id": "s-9"},
        )
        assert resp.status_code == 201
    texts = [m["text"] for m in client.get("/v1/users/gwen/memories").json()["items"]]
    assert any("sister" in t and "med school" in t for t in texts), texts
    assert not any("nurse" in t for t in texts), texts  # her old job, replaced
