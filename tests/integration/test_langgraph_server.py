"""The same graph served by `langgraph dev`, driven through `langgraph_sdk`."""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk import get_client

from tests.integration.server import langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.server]


def test_server_answers_a_run_and_shows_thread_state() -> None:
    async def scenario(url: str) -> None:
        client = get_client(url=url)
        thread = await client.threads.create()
        tid = thread["thread_id"]
        first = await client.runs.wait(
            tid,
            "mneme",
            input={"messages": [{"role": "user", "content": "订单号20240508001发货了吗？"}]},
            context={"user_id": "user_123"},
        )
        assert "已发货" in first["messages"][-1]["content"]
        await client.runs.wait(
            tid,
            "mneme",
            input={"messages": [{"role": "user", "content": "麻烦以后都发顺丰"}]},
            context={"user_id": "user_123"},
        )
        state = await client.threads.get_state(tid)
        values = state["values"]
        assert [m["type"] for m in values["messages"]][:4] == ["human", "ai", "tool", "ai"]
        assert values["token_usage"]["total"] > 0
        stored = await client.store.search_items(["memories", "user_123"], limit=10)
        texts = {i["value"]["text"] for i in stored["items"]}
        assert "快递偏好：以后都发顺丰" in texts
        other = await client.store.search_items(["memories", "user_456"], limit=10)
        assert other["items"] == []
        with pytest.raises(Exception, match="user_id is required"):
            await client.runs.wait(None, "mneme", input={"messages": [{"role": "user", "content": "hi"}]})

    with langgraph_dev() as url:
        asyncio.run(scenario(url))
