"""The `mneme` command, through its real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
MNEME = str(Path(sys.executable).with_name("mneme"))


def run(*args: str, stdin: str | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if home is not None:
        env["MNEME_HOME"] = str(home)
    return subprocess.run([MNEME, *args], input=stdin, capture_output=True, text=True, timeout=300, env=env)


def test_demo_tells_the_story() -> None:
    out = run("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "lookup_order" in text and "get_return_policy" in text
    assert "快递偏好：以后都发顺丰" in text and "shipping_preference=SF_EXPRESS" in text
    assert "user_456: no memories" in text
    assert "【离线演示模型】" in text


def test_chat_remembers_across_sessions(tmp_path: Path) -> None:
    first = run("chat", "--user", "ann", "--session", "a", stdin="我不吃辣\n/exit\n", home=tmp_path)
    assert first.returncode == 0, first.stderr
    second = run("chat", "--user", "ann", "--session", "b", stdin="你还记得我什么？\n", home=tmp_path)
    assert second.returncode == 0 and "不吃辣" in second.stdout
    listed = run("memories", "list", "--user", "ann", "--json", home=tmp_path)
    assert [m["text"] for m in json.loads(listed.stdout)] == ["不吃辣"]
    found = run("memories", "search", "吃辣", "--user", "ann", "--json", home=tmp_path)
    assert json.loads(found.stdout)[0]["text"] == "不吃辣"


def test_errors_are_one_line_with_meaningful_exit_codes(tmp_path: Path) -> None:
    out = run("memories", "search", " ", "--user", "ann", home=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error:") and "Traceback" not in out.stderr
    assert run("chat").returncode == 2  # missing --user: usage error
