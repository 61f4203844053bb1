"""Lexical index snapshots: a large user's index is read back at the next start, never stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from mneme.memory import mirror, revision
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore
from tests.fakes import HashEmbeddings


def reopen(path: Path, embeddings: HashEmbeddings) -> ChromaStore:
    """Another store object on the same folder: what a new process sees (its own index cache)."""
    return ChromaStore.open(
        str(path), index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}
    )


def snapshots(store: ChromaStore) -> list[Path]:
    assert store.snapshot_dir is not None
    return sorted((store.snapshot_dir / "lexical").glob("*.pkl"))


@pytest.fixture
def small_min(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror, "SNAPSHOT_MIN", 2)


def stocked(path: Path, embeddings: HashEmbeddings) -> tuple[ChromaStore, Memory]:
    """A store with three memories of user "u", searched once (its index loaded in full)."""
    store = reopen(path, embeddings)
    memory = Memory(store)
    for text in ("Keeps bees on the roof", "Is training for a marathon", "Plays the cello on Sundays"):
        memory.save(text, user_id="u")
    assert memory.search("bees", user_id="u")
    return store, memory


def test_a_restarted_process_reads_the_snapshot_and_catches_up(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None
) -> None:
    first, memory = stocked(tmp_path / "c", embeddings)  # full load, no snapshot yet
    assert mirror.loads(first, "u") == 1 and snapshots(first) == []
    assert mirror.save_snapshot(first, "u") and len(snapshots(first)) == 1  # what exit does
    assert not mirror.save_snapshot(first, "u")  # nothing changed since
    memory.save("Learns to sail a dinghy", user_id="u")  # after the snapshot: in the log only

    second = reopen(tmp_path / "c", embeddings)
    later = Memory(second)
    assert later.search("sail a dinghy", user_id="u")[0].text == "Learns to sail a dinghy"
    assert mirror.restores(second, "u") == 1 and mirror.loads(second, "u") == 0


def test_a_forgotten_memory_takes_the_snapshot_with_it(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None
) -> None:
    first, memory = stocked(tmp_path / "c", embeddings)
    assert mirror.save_snapshot(first, "u") and len(snapshots(first)) == 1
    cello = next(m for m in memory.get_all(user_id="u") if "cello" in m.text)
    memory.delete(cello.id, user_id="u")
    assert snapshots(first) == []  # its vocabulary knew the forgotten words
    assert not mirror.save_snapshot(first, "u")  # nor is one written from this index

    second = reopen(tmp_path / "c", embeddings)
    later = Memory(second)
    assert all("cello" not in h.text for h in later.search("cello on Sundays", user_id="u", limit=10))
    assert mirror.restores(second, "u") == 0 and mirror.loads(second, "u") == 1  # rebuilt once


def test_small_indexes_are_not_snapshotted(tmp_path: Path, embeddings: HashEmbeddings) -> None:
    store, _ = stocked(tmp_path / "c", embeddings)  # 3 memories, below SNAPSHOT_MIN
    mirror._save_all()
    assert snapshots(store) == []


def test_a_snapshot_that_cannot_be_written_leaves_search_working(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None, caplog: pytest.LogCaptureFixture
) -> None:
    store, memory = stocked(tmp_path / "c", embeddings)
    assert store.snapshot_dir is not None
    store.snapshot_dir.mkdir(parents=True)
    (store.snapshot_dir / "lexical").write_text("a file where the folder should be")
    assert not mirror.save_snapshot(store, "u")
    assert "could not save the lexical index" in caplog.text
    assert list(store.snapshot_dir.glob("**/*.tmp")) == []
    assert memory.search("bees", user_id="u")[0].text == "Keeps bees on the roof"


def test_an_unreadable_snapshot_is_ignored(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None
) -> None:
    first, _ = stocked(tmp_path / "c", embeddings)
    mirror._save_all()
    [snap] = snapshots(first)
    snap.write_bytes(b"not a pickle")
    second = reopen(tmp_path / "c", embeddings)
    assert Memory(second).search("bees", user_id="u")[0].text == "Keeps bees on the roof"
    assert mirror.restores(second, "u") == 0 and mirror.loads(second, "u") == 1
    mirror._save_all()
    assert snap.read_bytes() != b"not a pickle"  # replaced by a good one at exit


def test_a_snapshot_the_log_cannot_catch_up_is_ignored(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(revision, "LOG_LENGTH", 2)
    _, memory = stocked(tmp_path / "c", embeddings)
    mirror._save_all()
    for text in ("Owns a red kayak", "Grows tomatoes", "Reads Borges"):  # 3 revisions > 2 kept
        memory.save(text, user_id="u")
    second = reopen(tmp_path / "c", embeddings)
    assert Memory(second).search("red kayak", user_id="u")[0].text == "Owns a red kayak"
    assert mirror.restores(second, "u") == 0 and mirror.loads(second, "u") == 1


def test_changed_indexes_are_saved_at_exit(
    tmp_path: Path, embeddings: HashEmbeddings, small_min: None
) -> None:
    first, memory = stocked(tmp_path / "c", embeddings)
    mirror._save_all()
    before = snapshots(first)[0].stat().st_mtime_ns
    memory.save("Owns a red kayak", user_id="u")
    assert memory.search("kayak", user_id="u")  # the index in memory caught up; the file did not
    mirror._save_all()
    assert snapshots(first)[0].stat().st_mtime_ns != before
    second = reopen(tmp_path / "c", embeddings)
    assert Memory(second).search("kayak", user_id="u")[0].text == "Owns a red kayak"
    assert mirror.restores(second, "u") == 1
