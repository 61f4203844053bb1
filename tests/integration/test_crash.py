"""kill -9 of writers, graph runs and a REST server at random points: nothing acknowledged is lost.

Kills land between nodes, inside `extract_memories`, inside a deferred job and between the
store calls of one write; after each restart the next process carries on.

The harness is `benchmarks/crash.py` (the longer soak runs it with more kills): 21 kills per back
end here, a third each of the three kinds of process, about half of them at a chosen point inside
a write or a node and the rest at a random moment.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.crash import run

pytestmark = pytest.mark.integration

KILLS = 21


def _check(result: dict[str, object]) -> None:
    assert result["kills"] == KILLS
    assert result["acknowledged_writes"] and result["acknowledged_turns"]  # the children did work
    # the whole result on failure: which item was lost, and the lives and kill points around it
    assert result["lost"] == 0, result
    assert result["duplicated"] == 0, result
    assert result["history_mismatched"] == 0, (
        result
    )  # every record has its one ADD row, and every row its record
    assert result["pending_left"] == 0, result  # every queued extraction ran
    assert result["thread_stuck"] is False, result  # the thread resumed from its last checkpoint
    assert result["last_write_found"] is True, result  # the read path's index is in step after restarts


@pytest.mark.timeout(900)
def test_kill_9_on_the_embedded_default_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    _check(run({"home": str(tmp_path / "home")}, tmp_path, KILLS, seed=12, max_wait=0.8))


@pytest.mark.timeout(900)
def test_kill_9_on_postgres_loses_and_duplicates_nothing(postgres_url: str, tmp_path: Path) -> None:
    _check(run({"postgres": postgres_url}, tmp_path, KILLS, seed=12, max_wait=0.8))
