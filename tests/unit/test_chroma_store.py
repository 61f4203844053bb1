"""The Chroma-backed store keeps LangGraph's `BaseStore` contract."""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.store.base import GetOp, PutOp

from mneme.errors import InputError
from mneme.store.chroma import ChromaStore


def test_put_get_update_keeps_created_at(chroma_store: ChromaStore) -> None:
    ns = ("memories", "alice", "semantic")
    chroma_store.put(ns, "k1", {"text": "likes green tea", "n": 1})
    first = chroma_store.get(ns, "k1")
    assert first is not None and first.value == {"text": "likes green tea", "n": 1}
    time.sleep(0.01)
    chroma_store.put(ns, "k1", {"text": "likes black tea", "n": 2})
    second = chroma_store.get(ns, "k1")
    assert second is not None and second.value["text"] == "likes black tea"
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_missing_namespace_or_key_is_none(chroma_store: ChromaStore) -> None:
    assert chroma_store.get(("nothing", "here"), "k") is None
    chroma_store.put(("a", "b"), "k", {"text": "x"})
    assert chroma_store.get(("a", "b"), "other") is None


def test_delete(chroma_store: ChromaStore) -> None:
    ns = ("memories", "bob")
    chroma_store.put(ns, "k", {"text": "x"})
    chroma_store.delete(ns, "k")
    assert chroma_store.get(ns, "k") is None
    chroma_store.delete(ns, "never-there")  # deleting what is not there is not an error


def test_query_ranks_by_meaning_and_stays_in_namespace(chroma_store: ChromaStore) -> None:
    chroma_store.put(("memories", "alice"), "tea", {"text": "alice likes green tea"})
    chroma_store.put(("memories", "alice"), "car", {"text": "alice drives a red car"})
    chroma_store.put(("memories", "bob"), "tea", {"text": "bob likes green tea a lot"})
    hits = chroma_store.search(("memories", "alice"), query="green tea", limit=5)
    assert next(h.key for h in hits) == "tea"
    assert all(h.namespace == ("memories", "alice") for h in hits)
    assert hits[0].score is not None and hits[0].score > hits[-1].score
    both = chroma_store.search(("memories",), query="green tea", limit=5)
    assert {h.namespace[1] for h in both} == {"alice", "bob"}


def test_filters_run_inside_the_query(chroma_store: ChromaStore) -> None:
    ns = ("memories", "carol")
    for i in range(6):
        chroma_store.put(
            ns,
            f"k{i}",
            {"text": f"fact number {i}", "importance": i / 10, "kind": "semantic" if i % 2 else "episodic"},
        )
    hits = chroma_store.search(
        ns, query="fact", filter={"kind": "semantic", "importance": {"$gte": 0.3}}, limit=10
    )
    assert sorted(h.key for h in hits) == ["k3", "k5"]
    listed = chroma_store.search(ns, filter={"kind": {"$in": ["episodic"]}}, limit=10)
    assert sorted(h.key for h in listed) == ["k0", "k2", "k4"]


@pytest.mark.parametrize("bad", [{"a": {"$regex": "x"}}, {"a": {"nested": 1}}, {"a": None}, {"$or": []}])
def test_unsupported_filter_is_refused_clearly(chroma_store: ChromaStore, bad: dict) -> None:
    chroma_store.put(("x", "y"), "k", {"text": "t", "a": 1})
    with pytest.raises(InputError):
        chroma_store.search(("x", "y"), filter=bad)


def test_unindexed_items_are_listed_but_never_similar(chroma_store: ChromaStore) -> None:
    ns = ("memory_history", "dave")
    chroma_store.put(ns, "row", {"text": "green tea"}, index=False)
    chroma_store.put(("memories", "dave"), "m", {"text": "green tea"})
    # As in LangGraph's stores: a query lists unindexed items after every scored one, unscored.
    assert [(i.key, i.score) for i in chroma_store.search(ns, query="green tea")] == [("row", None)]
    assert [i.key for i in chroma_store.search(ns)] == ["row"]
    chroma_store.put(ns, "scored", {"text": "black tea"})
    hits = chroma_store.search(ns, query="green tea")
    assert [h.key for h in hits] == ["scored", "row"] and hits[0].score is not None and hits[1].score is None


def test_list_namespaces(chroma_store: ChromaStore) -> None:
    for user in ("u1", "u2"):
        chroma_store.put(("memories", user, "semantic"), "k", {"text": "x"})
    chroma_store.put(("sessions", "u1"), "t", {"title": "x"}, index=False)
    assert chroma_store.list_namespaces(prefix=("memories",), max_depth=2) == [
        ("memories", "u1"),
        ("memories", "u2"),
    ]
    assert ("sessions", "u1") in chroma_store.list_namespaces()


def test_batch_reads_its_own_writes_and_async(chroma_store: ChromaStore) -> None:
    ns = ("n", "s")
    out = chroma_store.batch(
        [PutOp(ns, "a", {"text": "1"}), GetOp(ns, "a"), PutOp(ns, "a", None), GetOp(ns, "a")]
    )
    assert out[1] is not None and out[1].value == {"text": "1"}
    assert out[3] is None
    got = asyncio.run(chroma_store.aget(ns, "a"))
    assert got is None


def test_data_survives_reopening(tmp_path, embeddings) -> None:
    index = {"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}
    store = ChromaStore.open(str(tmp_path / "db"), index=index)
    store.put(("memories", "eve"), "k", {"text": "remember me"})
    del store
    again = ChromaStore.open(str(tmp_path / "db"), index=index)
    item = again.get(("memories", "eve"), "k")
    assert item is not None and item.value["text"] == "remember me"
    assert again.search(("memories", "eve"), query="remember")[0].key == "k"


def test_nearest_ranks_like_search_and_scores_a_short_list_exactly(chroma_store: ChromaStore) -> None:
    ns = ("memories", "erin", "episodic")
    texts = {"tea": "erin likes green tea", "car": "erin drives a red car", "cat": "erin has a grey cat"}
    for key, text in texts.items():
        chroma_store.put(ns, key, {"text": text})
    chroma_store.put(ns, "blank", {"text": "green tea"}, index=False)
    searched = [
        (h.key, round(h.score or 0.0, 4)) for h in chroma_store.search(ns, query="green tea", limit=3)
    ]
    near = [(k, round(s, 4)) for k, s in chroma_store.nearest(ns, "green tea", 3)]
    assert near == searched and near[0][0] == "tea"
    exact = chroma_store.nearest(ns, "green tea", 5, keys=["car", "cat", "blank"])
    everything = [
        (h.key, round(h.score or 0.0, 4)) for h in chroma_store.search(ns, query="green tea", limit=10)
    ]
    assert [(k, round(s, 4)) for k, s in exact] == [(k, s) for k, s in everything if k in {"car", "cat"}]
    one = chroma_store.nearest(ns, "green tea", 1, keys=["blank", "car", "cat"])  # the blank takes no place
    assert [k for k, _ in one] == [k for k, _ in exact][:1]
    assert chroma_store.nearest(("memories", "nobody", "episodic"), "tea", 3) == []
    with pytest.raises(InputError, match="at most"):
        chroma_store.nearest(ns, "tea", 3, keys=[f"k{i}" for i in range(2_001)])
