"""The embedded home's store: memories in Chroma, plain rows in SQLite, one Chroma call per write."""

from __future__ import annotations

from pathlib import Path

import pytest

from mneme.memory.api import Memory
from mneme.memory.record import HISTORY, namespace
from mneme.store.chroma import ChromaStore
from mneme.store.split import SplitStore
from tests.fakes import HashEmbeddings


def _index(embeddings: HashEmbeddings) -> dict[str, object]:
    return {"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}


@pytest.fixture
def split(tmp_path: Path, embeddings: HashEmbeddings) -> SplitStore:
    store = SplitStore.open(tmp_path, index=_index(embeddings))
    yield store
    store.close()


def test_a_verbatim_write_is_one_chroma_call_and_its_rows_are_in_sqlite(
    split: SplitStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(split)
    mem.add("warm up", user_id="u", infer=False)
    upserts: list[tuple[str, ...]] = []
    original = ChromaStore._upsert

    def counted(self: ChromaStore, ns: tuple[str, ...], ops: list) -> None:  # type: ignore[type-arg]
        upserts.append(ns)
        original(self, ns, ops)

    monkeypatch.setattr(ChromaStore, "_upsert", counted)
    change = mem.add(
        {"role": "user", "content": "I parked on level 3", "id": "m1"}, user_id="u", infer=False
    )[0]
    assert upserts == [("memories", "u", "episodic")]
    assert [h.operation for h in mem.history(change.id, user_id="u")] == ["ADD"]
    assert split.vectors.list_namespaces(prefix=(HISTORY,)) == []  # no history in Chroma
    assert split.rows.search(namespace(HISTORY, "u"), limit=10)
    assert mem.search("where did I park", user_id="u")[0].text == "I parked on level 3"


def test_namespaces_and_counts_span_both_sides(split: SplitStore) -> None:
    mem = Memory(split)
    mem.add("我住在杭州", user_id="u")
    spaces = split.list_namespaces(max_depth=2)
    assert ("memories", "u") in spaces and ("memory_history", "u") in spaces
    assert split.count(namespace(HISTORY, "u")) == len(mem.export(user_id="u")["history"])
    assert mem.users() == ["u"]
    assert mem.delete_all(user_id="u") == 1
    assert split.count(namespace(HISTORY, "u")) == 0 and mem.get_all(user_id="u") == []


def test_a_home_of_the_old_layout_keeps_its_history_when_opened(
    tmp_path: Path, embeddings: HashEmbeddings
) -> None:
    old = ChromaStore.open(str(tmp_path / "chroma"), index=_index(embeddings))
    before = Memory(old)
    first = before.add("我住在上海", user_id="u")[0]
    before.add("我搬到杭州了", user_id="u")
    history = [h.operation for h in before.history(first.id, user_id="u")]
    exported = before.export(user_id="u")
    del before, old

    store = SplitStore.open(tmp_path, index=_index(embeddings))
    try:
        after = Memory(store)
        assert [h.operation for h in after.history(first.id, user_id="u")] == history
        assert after.export(user_id="u")["history"] == exported["history"]
        assert [r.text for r in after.get_all(user_id="u")] == [m["text"] for m in exported["memories"]]
        assert store.vectors.list_namespaces(prefix=(HISTORY,)) == []  # moved, not copied twice
        after.add("我不吃辣", user_id="u")  # and it goes on writing
    finally:
        store.close()
    reopened = SplitStore.open(tmp_path, index=_index(embeddings))  # moving happens once
    try:
        assert len(Memory(reopened).export(user_id="u")["history"]) == len(exported["history"]) + 1
    finally:
        reopened.close()


KILLED_WRITER = """
import os, signal, sys
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore
from mneme.store.split import SplitStore
from tests.fakes import HashEmbeddings

emb = HashEmbeddings()
mem = Memory(SplitStore.open(__import__("pathlib").Path(sys.argv[1]), index={"embed": emb, "dims": emb.dims, "fields": ["text"]}))
mem.add("warm up", user_id="u", infer=False)
ChromaStore._upsert = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # killed mid-write
mem.add({"role": "user", "content": "the spare key is under the mat", "id": "m1"}, user_id="u", infer=False)
"""


def test_a_write_killed_between_sqlite_and_chroma_is_finished_at_the_next_open(
    tmp_path: Path, embeddings: HashEmbeddings
) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], cwd=root, timeout=300)
    assert done.returncode == -9
    reopened = SplitStore.open(tmp_path, index=_index(embeddings))
    try:
        again = Memory(reopened)
        assert "the spare key is under the mat" in {r.text for r in again.get_all(user_id="u")}
        adds = [
            h
            for h in again.export(user_id="u")["history"]
            if h["new_text"] == "the spare key is under the mat"
        ]
        assert len(adds) == 1
        assert again.search("where is the spare key", user_id="u")[0].text == "the spare key is under the mat"
        assert reopened._replay() == 0  # finished once
        retried = again.add(
            {"role": "user", "content": "the spare key is under the mat", "id": "m1"},
            user_id="u",
            infer=False,
        )
        assert retried[0].operation == "NOOP"  # the client's retry changes nothing
    finally:
        reopened.close()


def test_a_batch_that_fails_in_a_live_process_leaves_no_journal(
    split: SplitStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(split)
    mem.add("warm up", user_id="u", infer=False)

    def failing(self: ChromaStore, ns: tuple[str, ...], ops: list) -> None:  # type: ignore[type-arg]
        raise RuntimeError("chroma is down")

    with monkeypatch.context() as patch:
        patch.setattr(ChromaStore, "_upsert", failing)
        with pytest.raises(RuntimeError):
            mem.add("a write that fails", user_id="u", infer=False)
    mem.add("a later write", user_id="u", infer=False)
    assert split._replay() == 0  # nothing would replay over the later write
