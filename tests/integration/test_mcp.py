"""`mneme mcp` as another agent uses it: a real MCP client session over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mneme.memory.api import Memory

pytestmark = pytest.mark.integration
MNEME = str(Path(sys.executable).with_name("mneme"))


def params(home: Path, user: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    return StdioServerParameters(command=MNEME, args=["mcp", "--user", user, "--home", str(home)], env=env)


def test_an_mcp_client_lists_tools_saves_finds_and_forgets(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home) as mem:
        mem.save("bob 住在上海", user_id="bob")

    async def session() -> None:
        async with Client(params(home, "ann"), read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search_memory", "save_memory", "forget_memory", "list_memories"}
            assert "user" not in str(tools["search_memory"].input_schema["properties"])  # never an argument
            assert tools["search_memory"].annotations and tools["search_memory"].annotations.read_only_hint

            saved = await client.call_tool("save_memory", {"text": "我的猫叫咪咪"})
            assert not saved.is_error and saved.structured_content
            assert saved.structured_content["operation"] == "ADD"
            again = await client.call_tool("save_memory", {"text": "我的猫叫咪咪"})
            assert again.structured_content and again.structured_content["operation"] == "NOOP"
            await client.call_tool("save_memory", {"text": "每周五去游泳", "kind": "episodic"})

            found = await client.call_tool("search_memory", {"query": "猫叫什么名字", "limit": 3})
            assert not found.is_error and found.structured_content
            hits = found.structured_content["items"]
            assert hits[0]["text"] == "我的猫叫咪咪" and hits[0]["user_id"] == "ann"
            assert all("上海" not in h["text"] for h in hits)  # bob's memory stays bob's

            listed = await client.call_tool("list_memories", {"kind": "episodic"})
            assert listed.structured_content and [m["text"] for m in listed.structured_content["items"]] == [
                "每周五去游泳"
            ]

            forgot = await client.call_tool("forget_memory", {"memory_id": hits[0]["id"]})
            assert forgot.structured_content and forgot.structured_content["operation"] == "DELETE"
            missing = await client.call_tool("forget_memory", {"memory_id": hits[0]["id"]})
            assert missing.is_error and "no memory" in str(missing.content[0])
            empty = await client.call_tool("search_memory", {"query": "  "})
            assert empty.is_error and "empty" in str(empty.content[0])
            bad = await client.call_tool("save_memory", {"text": "x", "kind": "feeling"})
            assert bad.is_error

    asyncio.run(session())
    with Memory.open(home) as mem:  # what the agent did is what the Python API sees
        assert [m.text for m in mem.get_all(user_id="ann")] == ["每周五去游泳"]
        assert [m.text for m in mem.get_all(user_id="bob")] == ["bob 住在上海"]


def test_mcp_on_a_home_in_use_fails_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home):
        out = subprocess.run(
            [MNEME, "mcp", "--user", "ann", "--home", str(home)],
            input="",
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 4 and out.stdout == ""
    assert out.stderr.startswith("error:") and "in use" in out.stderr
