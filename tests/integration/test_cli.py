"""The `mneme` command, through its real entry point."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mneme.cli import app
from tests.integration.server import mneme_serve

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
    texts = [m["text"] for m in json.loads(listed.stdout)]
    assert texts.count("不吃辣") == 1  # once, whatever else (session recaps) is kept
    found = run("memories", "search", "吃辣", "--user", "ann", "--json", home=tmp_path)
    assert json.loads(found.stdout)[0]["text"] == "不吃辣"


def test_errors_are_one_line_with_meaningful_exit_codes(tmp_path: Path) -> None:
    out = run("memories", "search", " ", "--user", "ann", home=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error:") and "Traceback" not in out.stderr
    assert run("chat").returncode == 2  # missing --user: usage error


# -- memories, sessions, serve: through the real entry point --------------------------------


RUNNER = CliRunner()


def cli(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The same command through typer's runner, in this process (the model loads once)."""
    result = RUNNER.invoke(app, [*args, "--home", str(home)], input=stdin, env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def ok(out: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert out.returncode == 0, out.stderr
    return out


def as_json(*args: str, home: Path) -> Any:
    return json.loads(ok(cli(*args, "--json", home=home)).stdout)


def test_memories_commands_see_correct_delete_export_and_import(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spicy = as_json("memories", "add", "我不吃辣", "--user", "ann", home=home)[0]
    city = as_json("memories", "add", "I live in Berlin", "--user", "ann", "--kind", "profile", home=home)[0]
    assert spicy["operation"] == city["operation"] == "ADD"

    table = ok(cli("memories", "list", "--user", "ann", home=home)).stdout
    assert "我不吃辣" in table and "I live in Berlin" in table and spicy["id"] in table
    assert [
        m["text"] for m in as_json("memories", "list", "--user", "ann", "--kind", "profile", home=home)
    ] == ["I live in Berlin"]
    assert as_json("memories", "search", "她能吃辣吗", "--user", "ann", home=home)[0]["id"] == spicy["id"]
    assert as_json("memories", "show", spicy["id"], "--user", "ann", home=home)["text"] == "我不吃辣"

    edited = as_json("memories", "edit", spicy["id"], "能吃一点辣", "--user", "ann", home=home)
    assert (edited["operation"], edited["old_text"], edited["text"]) == ("UPDATE", "我不吃辣", "能吃一点辣")
    history = as_json("memories", "history", spicy["id"], "--user", "ann", home=home)
    assert [(h["operation"], h["new_text"]) for h in history] == [
        ("ADD", "我不吃辣"),
        ("UPDATE", "能吃一点辣"),
    ]

    ok(cli("memories", "delete", city["id"], "--user", "ann", home=home))
    gone = cli("memories", "show", city["id"], "--user", "ann", home=home)
    assert gone.returncode == 3 and gone.stderr.count("\n") == 1 and "no memory" in gone.stderr

    export = tmp_path / "ann.json"
    ok(cli("memories", "export", "--user", "ann", "--output", str(export), home=home))
    refused = cli("memories", "delete", "--all", "--user", "ann", home=home)  # no tty, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert len(as_json("memories", "list", "--user", "ann", home=home)) == 1
    assert as_json("memories", "delete", "--all", "--yes", "--user", "ann", home=home) == {"deleted": 1}
    assert as_json("memories", "list", "--user", "ann", home=home) == []

    loaded = as_json("memories", "import", str(export), "--user", "ann", home=home)
    assert [c["operation"] for c in loaded] == ["IMPORT"]
    restored = as_json("memories", "list", "--user", "ann", home=home)
    assert [(m["id"], m["text"]) for m in restored] == [(spicy["id"], "能吃一点辣")]
    again = ok(cli("memories", "import", str(export), "--user", "ann", home=home)).stdout
    assert "imported 0 memories into ann (1 were already there)" in again
    assert len(as_json("memories", "history", spicy["id"], "--user", "ann", home=home)) >= 2


def test_memories_commands_refuse_bad_input_with_one_line_and_exit_codes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(cli("memories", "add", "我不吃辣", "--user", "ann", home=home))
    not_json = tmp_path / "bad.json"
    not_json.write_text("{ not json")
    cases = [
        (("memories", "import", str(not_json), "--user", "ann"), 2, "not JSON"),
        (("memories", "import", str(tmp_path / "missing.json"), "--user", "ann"), 3, "no such file"),
        (("memories", "list", "--user", "ann", "--kind", "feelings"), 2, "unknown kind"),
        (("memories", "add", "  ", "--user", "ann"), 2, "empty"),
        (("memories", "edit", "no-such-id", "x", "--user", "ann"), 3, "no memory"),
        (("memories", "history", "no-such-id", "--user", "ann"), 3, "no history"),
        (("memories", "delete", "--user", "ann"), 2, "memory id, or --all"),
        (("sessions", "show", "no-such-thread", "--user", "ann"), 3, "no session"),
    ]
    for args, code, words in cases:
        out = cli(*args, home=home)
        assert out.returncode == code, (args, out.stderr)
        assert out.stderr.startswith("error:") and words in out.stderr and "Traceback" not in out.stderr, (
            out.stderr
        )
        assert out.stderr.strip().count("\n") == 0, out.stderr
    # nothing was lost on the way
    assert [m["text"] for m in as_json("memories", "list", "--user", "ann", home=home)] == ["我不吃辣"]
    # another user's memory is not found, not shown
    ann_id = as_json("memories", "list", "--user", "ann", home=home)[0]["id"]
    assert cli("memories", "show", ann_id, "--user", "bob", home=home).returncode == 3


def test_memories_profile_shows_what_is_believed_and_how_to_correct_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for said in ["我对花生过敏", "我在阿里巴巴工作", "我跳槽去腾讯了"]:
        ok(cli("memories", "add", said, "--infer", "--user", "ann", home=home))
    ok(cli("memories", "add", "昨天去了西湖", "--kind", "episodic", "--user", "ann", home=home))

    view = as_json("memories", "profile", "--user", "ann", home=home)
    assert [a["aspect"] for a in view["aspects"]] == ["allergy", "employer"]  # hard limits first
    job = view["aspects"][1]["memories"][0]
    assert "腾讯" in job["text"] and "阿里巴巴" in job["earlier"][0]["text"]

    shown = ok(cli("memories", "profile", "--user", "ann", home=home)).stdout
    lines = shown.splitlines()
    allergy = next(i for i, line in enumerate(lines) if line.startswith("allergy"))
    employer = next(i for i, line in enumerate(lines) if line.startswith("employer"))
    assert allergy < employer and "hard limit" in lines[allergy] and "过敏" in lines[allergy]
    assert "! " in lines[allergy + 1] and "花生" in lines[allergy + 1]  # a constraint, marked
    assert "腾讯" in lines[employer + 1] and job["id"] in lines[employer + 2]
    assert "before:" in lines[employer + 3] and "阿里巴巴" in lines[employer + 3]
    assert "西湖" not in shown and "mneme memories edit ID" in shown
    assert "memories edit" in ok(cli("memories", "profile", "--help", home=home)).stdout

    # corrected with the commands it names
    ok(cli("memories", "edit", job["id"], "在腾讯云工作", "--user", "ann", home=home))
    job = as_json("memories", "profile", "--user", "ann", home=home)["aspects"][1]["memories"][0]
    assert job["text"] == "在腾讯云工作" and [e["change"] for e in job["earlier"]] == ["edited", "superseded"]

    assert "bob: nothing known yet" in ok(cli("memories", "profile", "--user", "bob", home=home)).stdout
    bad = cli("memories", "profile", "--user", "a\x00b", home=home)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "user_id" in bad.stderr


def test_sessions_list_show_and_delete_leave_other_sessions_and_memories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(cli("chat", "--user", "ann", "--session", "s-food", stdin="我不吃辣\n", home=home))
    ok(cli("chat", "--user", "ann", "--session", "s-order", stdin="订单号20240508001发货了吗？\n", home=home))
    ok(cli("chat", "--user", "bob", "--session", "s-bob", stdin="你好\n", home=home))

    listed = as_json("sessions", "list", "--user", "ann", home=home)
    assert {s["thread_id"] for s in listed} == {"s-food", "s-order"}
    assert all(s["turns"] == 1 and s["user_id"] == "ann" for s in listed)
    assert "s-food" in ok(cli("sessions", "list", "--user", "ann", home=home)).stdout
    shown = as_json("sessions", "show", "s-order", "--user", "ann", home=home)
    assert shown["messages"][0]["content"] == "订单号20240508001发货了吗？"
    assert cli("sessions", "show", "s-order", "--user", "bob", home=home).returncode == 3  # not bob's

    ok(cli("sessions", "delete", "s-food", "--user", "ann", home=home))
    assert [s["thread_id"] for s in as_json("sessions", "list", "--user", "ann", home=home)] == ["s-order"]
    assert [s["thread_id"] for s in as_json("sessions", "list", "--user", "bob", home=home)] == ["s-bob"]
    assert cli("sessions", "show", "s-food", "--user", "ann", home=home).returncode == 3
    # the long-term memory that session produced is still there
    assert "不吃辣" in [m["text"] for m in as_json("memories", "list", "--user", "ann", home=home)]
    # and the remaining session still resumes with its history
    again = ok(cli("chat", "--user", "ann", "--session", "s-order", stdin="谢谢\n", home=home))
    assert again.returncode == 0
    assert as_json("sessions", "show", "s-order", "--user", "ann", home=home)["turns"] == 2


def test_serve_holds_the_home_and_prints_a_key_that_opens_the_routes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(run("memories", "add", "我不吃辣", "--user", "ann", home=home))
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    with mneme_serve(home, env=env, log=log) as (url, _proc):
        key = re.search(r"API key for this run[^:]*: (\S+)", log.read_text())
        assert key is not None, log.read_text()
        req = urllib.request.Request(
            url + "/v1/users/ann/memories", headers={"Authorization": f"Bearer {key[1]}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert [m["text"] for m in json.load(resp)["items"]] == ["我不吃辣"]
        # a second process on the same embedded home is refused at once, in one line
        locked = run("memories", "list", "--user", "ann", home=home)
        assert locked.returncode == 4
        assert locked.stderr.startswith("error:") and "MNEME_CHROMA_URL" in locked.stderr
        # and a second server too, before it listens
        second = run("serve", "--port", "0", home=home)
        assert second.returncode == 4
    assert ok(run("memories", "list", "--user", "ann", home=home)).returncode == 0  # released on exit


def test_masked_personal_data_is_printed_as_stored_not_eaten_as_markup(tmp_path: Path) -> None:
    home = tmp_path / "home"
    added = ok(cli("memories", "add", "My email is erin@example.com", "--user", "erin", home=home)).stdout
    marker = "[email e***@example.com]"
    assert marker in added
    assert marker in ok(cli("memories", "list", "--user", "erin", home=home)).stdout
    assert marker in ok(cli("memories", "search", "email", "--user", "erin", home=home)).stdout
