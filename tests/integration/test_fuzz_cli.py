"""Hostile arguments, files and input for every CLI command: one line and exit 2 or 3, never a crash.

The commands run in-process (typer's runner) on a real home (local model, Chroma on disk);
`tests/hostile.py` draws the arguments. A command that fails must leave the store as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mneme.home import open_home
from mneme.memory.api import Memory
from tests import hostile

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("MNEME_FUZZ_EXAMPLES", "60")) // 2


def test_every_cli_command_refuses_hostile_input_in_one_line(tmp_path: Path, home: Path) -> None:
    opened = open_home(home)  # held open: the commands share it, and the test reads its store
    try:
        memory = Memory(opened.store)
        ids = [
            memory.save("I like green tea", user_id="ann").id or "",
            memory.save("bob likes coffee", user_id="bob").id or "",
            "no-such-id",
        ]
        files = hostile.import_files(tmp_path, memory.export(user_id="ann"))
        fuzz = hostile.Fuzz()
        hostile.fuzz_cli(fuzz, home, opened.store, EXAMPLES, ids, files)
        for door, counts in fuzz.report().items():
            print(door, counts)
        assert all(t.clean for t in fuzz.tallies.values())
        assert len(fuzz.tallies) >= 8
    finally:
        opened.close()
