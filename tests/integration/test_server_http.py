"""mneme's REST routes mounted in the LangGraph server (`langgraph.json` "http"), over its store."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from langgraph_sdk import get_client

from tests.integration.server import langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.server]

KEY = "langgraph-test-key-0001"


def test_a_memory_stored_by_a_run_is_served_by_the_mounted_routes() -> None:
    # `langgraph dev` keeps its store in ./.langgraph_api between runs: a fresh user each run
    user = f"user-{uuid.uuid4().hex[:8]}"

    async def scenario(url: str) -> None:
        client = get_client(url=url)
        thread = await client.threads.create()
        await client.runs.wait(
            thread["thread_id"],
            "mneme",
            input={"messages": [{"role": "user", "content": "麻烦以后都发顺丰"}]},
            context={"user_id": user},
        )
        headers = {"Authorization": f"Bearer {KEY}"}
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            assert (await http.get("/ok")).status_code == 200  # the server's own routes still answer
            assert (await http.get("/healthz")).json()["status"] == "ok"
            assert (await http.get(f"/v1/users/{user}/memories")).status_code == 401

            listed = (await http.get(f"/v1/users/{user}/memories", headers=headers)).json()
            texts = [m["text"] for m in listed["items"]]
            assert "快递偏好：以后都发顺丰" in texts
            found = (
                await http.get(f"/v1/users/{user}/memories", params={"q": "用什么快递"}, headers=headers)
            ).json()
            assert found["items"][0]["text"] == "快递偏好：以后都发顺丰"
            assert (await http.get(f"/v1/users/{user}-other/memories", headers=headers)).json()["items"] == []
            sessions = (await http.get(f"/v1/users/{user}/sessions", headers=headers)).json()["items"]
            assert thread["thread_id"] in [s["thread_id"] for s in sessions]

            # a memory added through REST is one the graph's store (and so the next run) sees
            added = await http.post(f"/v1/users/{user}/memories", json={"text": "我不吃辣"}, headers=headers)
            assert added.status_code == 201
            items = await client.store.search_items(["memories", user], limit=20)
            assert "我不吃辣" in {i["value"]["text"] for i in items["items"]}

            # and a memory forgotten through REST is gone for the graph too
            memory_id = next(m["id"] for m in listed["items"] if m["text"] == "快递偏好：以后都发顺丰")
            assert (
                await http.delete(f"/v1/users/{user}/memories/{memory_id}", headers=headers)
            ).status_code == 200
            items = await client.store.search_items(["memories", user], limit=20)
            assert "快递偏好：以后都发顺丰" not in {i["value"]["text"] for i in items["items"]}

            assert (await http.get("/admin")).status_code == 200

    with langgraph_dev(env={"MNEME_API_KEY": KEY}) as url:
        asyncio.run(scenario(url))
