"""The Chroma-backed store keeps LangGraph's `BaseStore` contract."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from langchain_core.embeddings import Embeddings
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


class _Arrows(Embeddings):
    """Texts "x,y" are the vector (x, y): a test decides every cosine exactly."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(v) for v in text.split(",")]


def test_a_query_never_returns_a_short_page_while_more_items_match(tmp_path) -> None:
    store = ChromaStore.open(str(tmp_path / "db"), index={"embed": _Arrows(), "dims": 2, "fields": ["v"]})
    ns = ("memories", "fay")
    for i in range(10):  # every one points away from the query: farther than a zero vector
        store.put(ns, f"k{i}", {"v": f"-1,{i / 10}"})
    store.put(ns, "blank1", {"v": "1,0"}, index=False)
    store.put(ns, "blank2", {"v": "1,0"}, index=False)
    page = store.search(ns, query="1,0", limit=5)
    assert [h.key for h in page] == ["k9", "k8", "k7", "k6", "k5"]  # the least opposed first
    assert all(h.score is not None for h in page)
    everything = store.search(ns, query="1,0", limit=20)
    assert {h.key for h in everything[-2:]} == {"blank1", "blank2"}
    assert [h.score for h in everything[-2:]] == [None, None] and len(everything) == 12
    assert [k for k, _ in store.nearest(ns, "1,0", 5)] == ["k9", "k8", "k7", "k6", "k5"]


def test_several_index_fields_score_an_item_by_its_best_field(tmp_path) -> None:
    store = ChromaStore.open(
        str(tmp_path / "db"), index={"embed": _Arrows(), "dims": 2, "fields": ["title", "body"]}
    )
    ns = ("docs", "gus")
    store.put(ns, "a", {"title": "1,0", "body": "0,1"})
    store.put(ns, "b", {"title": "0.7,0.7"})
    store.put(ns, "c", {"title": "0,1"}, index=["body"])  # no body: not indexed
    by_title = store.search(ns, query="1,0")
    assert [h.key for h in by_title] == ["a", "b", "c"] and by_title[0].score == pytest.approx(1.0)
    by_body = store.search(ns, query="0,1")
    assert by_body[0].key == "a" and by_body[0].score == pytest.approx(1.0) and by_body[-1].score is None
    store.put(ns, "a", {"title": "1,0"})  # its second vector goes with the old body
    assert store.search(ns, query="0,1")[0].key == "b"
    store.delete(ns, "a")
    assert [h.key for h in store.search(ns, query="1,0")] == ["b", "c"]


def test_filters_on_lists_and_on_numbers_chroma_cannot_hold(chroma_store: ChromaStore) -> None:
    ns = ("x", "hal")
    chroma_store.put(ns, "draft", {"tags": ["draft"], "n": 3, "big": 2**70, "access-level": "public"})
    chroma_store.put(ns, "both", {"tags": ["final", "draft"], "n": float("inf"), "big": 5, "123abc": 1})
    chroma_store.put(ns, "none", {"n": float("nan"), "big": -(2**64)})

    def keys(flt: dict) -> list[str]:
        return sorted(i.key for i in chroma_store.search(ns, filter=flt, limit=10))

    assert keys({"tags": ["draft"]}) == ["draft"]
    assert keys({"tags": {"$ne": ["draft"]}}) == ["both", "none"]
    assert keys({"n": {"$lt": float("inf")}}) == ["draft"]
    assert keys({"n": {"$gte": float("inf")}}) == ["both"]
    assert keys({"n": {"$gt": float("-inf")}}) == ["both", "draft"]
    assert keys({"n": {"$eq": float("nan")}}) == []
    assert keys({"big": {"$gt": 2**63}}) == ["draft"]
    assert keys({"big": {"$lt": 0}}) == ["none"]
    assert keys({"big": {"$in": [5, 2**70]}}) == ["both", "draft"]
    assert keys({"access-level": "public"}) == ["draft"] and keys({"123abc": 1}) == ["both"]
    assert [i.key for i in chroma_store.search(ns, query="draft", filter={"tags": ["draft"]})] == ["draft"]


def test_an_updated_item_no_longer_matches_a_field_it_dropped(chroma_store: ChromaStore) -> None:
    ns = ("x", "ida")
    chroma_store.put(ns, "k", {"text": "t", "subject": "tea", "n": 1})
    chroma_store.put(ns, "k", {"text": "t", "n": [1]})
    assert chroma_store.search(ns, filter={"subject": "tea"}) == []
    assert chroma_store.search(ns, filter={"n": 1}) == []
    assert [i.key for i in chroma_store.search(ns, filter={"n": [1]})] == ["k"]


def test_a_namespace_may_be_a_list(chroma_store: ChromaStore) -> None:
    chroma_store.put(["memories", "jo"], "k", {"text": "x"})  # type: ignore[arg-type]
    assert chroma_store.get(["memories", "jo"], "k") is not None  # type: ignore[arg-type]
    assert [i.key for i in chroma_store.search(["memories"])] == ["k"]  # type: ignore[arg-type]
    assert chroma_store.list_namespaces(prefix=["memories"]) == [("memories", "jo")]


def test_listing_a_prefix_pages_across_namespaces(chroma_store: ChromaStore) -> None:
    for user in ("a", "b", "c"):
        for i in range(4):
            chroma_store.put(("memories", user), f"{user}{i}", {"text": "x", "i": i}, index=False)
    everything = [i.key for i in chroma_store.search(("memories",), limit=100)]
    assert len(everything) == 12
    pages = [[i.key for i in chroma_store.search(("memories",), limit=5, offset=o)] for o in (0, 5, 10)]
    assert [k for page in pages for k in page] == everything
    filtered = [
        i.key for i in chroma_store.search(("memories",), filter={"i": {"$gte": 2}}, limit=3, offset=2)
    ]
    assert filtered == [k for k in everything if int(k[1]) >= 2][2:5]


def test_ttl_expires_refreshes_and_sweeps(tmp_path, embeddings) -> None:
    index = {"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}
    store = ChromaStore.open(str(tmp_path / "db"), index=index, ttl={"omit_expired": True})
    ns = ("memories", "kim")
    store.put(ns, "short", {"text": "a"}, ttl=1.5 / 60)
    store.put(ns, "kept", {"text": "b"}, ttl=1.5 / 60)
    store.put(ns, "forever", {"text": "c"})
    time.sleep(0.9)
    assert store.get(ns, "kept", refresh_ttl=True) is not None  # pushes its expiry back by 1.5 s
    time.sleep(0.9)
    assert store.get(ns, "short", refresh_ttl=False) is None  # expired: omitted before any sweep
    assert sorted(i.key for i in store.search(ns, refresh_ttl=False)) == ["forever", "kept"]
    assert store.sweep_ttl() == 1
    time.sleep(1.0)
    assert store.sweep_ttl() == 1
    assert [i.key for i in store.search(ns)] == ["forever"]
    assert ns in store.list_namespaces()
    store.close()


def test_concurrent_async_calls_share_a_batch_and_one_bad_call_fails_alone(chroma_store: ChromaStore) -> None:
    ns = ("memories", "lee")
    calls: list[int] = []
    real = chroma_store._batch_together

    def counting(ops):  # type: ignore[no-untyped-def]
        calls.append(len(ops))
        return real(ops)

    chroma_store._batch_together = counting  # type: ignore[method-assign]

    async def scenario() -> tuple[list, BaseException | None]:
        await asyncio.gather(*(chroma_store.aput(ns, f"k{i}", {"text": f"t{i}"}) for i in range(40)))
        got = await asyncio.gather(
            *(chroma_store.aget(ns, f"k{i}") for i in range(40)),
            chroma_store.asearch(ns, filter={"text": {"$regex": "x"}}),
            return_exceptions=True,
        )
        return list(got[:40]), got[40] if isinstance(got[40], BaseException) else None

    items, error = asyncio.run(scenario())
    assert [i.value["text"] for i in items] == [f"t{i}" for i in range(40)]
    assert isinstance(error, InputError)
    assert calls[:2] == [40, 41]  # 40 puts in one batch, then 40 gets and the bad search


def test_the_served_store_takes_ttl_from_langgraph_json(tmp_path, monkeypatch, embeddings) -> None:
    from mneme import home as home_mod
    from mneme.errors import ConfigError
    from mneme.store import served

    monkeypatch.setenv("MNEME_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(home_mod, "resolve_embeddings", lambda _: embeddings)
    monkeypatch.setenv(
        "LANGGRAPH_STORE", json.dumps({"ttl": {"default_ttl": 0.02, "sweep_interval_minutes": 0.01}})
    )
    store = served.store()
    try:
        assert store.ttl_config == {"default_ttl": 0.02, "sweep_interval_minutes": 0.01}
        store.put(("memories", "max"), "k", {"text": "x"})  # no ttl given: the default, 1.2 s
        store.put(("memories", "max"), "keep", {"text": "y"}, ttl=None)
        time.sleep(2.5)  # expired, and swept by the thread (every 0.6 s)
        assert store.get(("memories", "max"), "k", refresh_ttl=False) is None
        assert store.get(("memories", "max"), "keep") is not None
    finally:
        store.stop_ttl_sweeper()
        opened = home_mod._homes.get((tmp_path / "home").resolve())
        if opened is not None:
            opened._refs = 1
            opened.close()
    for bad in ({"ttl": {"default_ttl": -1}}, {"ttl": {"forever": True}}, {"ttl": 5}):
        with pytest.raises(ConfigError, match=r"store\.ttl"):
            served.ttl_from_config(bad)


def test_applied_queue_rows_are_trimmed_and_a_reopened_store_keeps_everything(
    tmp_path, embeddings: Embeddings
) -> None:
    """Chroma re-reads a collection's retained queue rows on every write: the store trims them."""
    import sqlite3

    from mneme.store.chroma import QUEUE_TRIM_CHARS

    index = {"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}  # type: ignore[attr-defined]
    folder = tmp_path / "chroma"
    store = ChromaStore.open(str(folder), index=index)  # type: ignore[arg-type]
    ns = ("memories", "alice")
    filler = "长文本" * 2000
    count = 3 * QUEUE_TRIM_CHARS // (2 * len(filler)) + 2
    for i in range(count):
        store.put(ns, f"k{i}", {"text": f"note {i} about the garden {filler}"})
    store.put(ns, "last", {"text": "the key under the blue flowerpot"})
    with sqlite3.connect(folder / "chroma.sqlite3") as con:
        kept = con.execute(
            "SELECT count(*) FROM embeddings_queue WHERE metadata LIKE ?", (f"%{filler[:30]}%",)
        ).fetchone()[0]
    assert kept < count / 2  # most rows no longer hold their text twice
    store.close()

    again = ChromaStore.open(str(folder), index=index)  # type: ignore[arg-type]
    try:
        items = again.search(ns, limit=count + 5)
        assert len(items) == count + 1
        got = again.get(ns, "k0")
        assert got is not None and got.value["text"].startswith("note 0 about the garden")
        assert again.search(ns, query="the key under the blue flowerpot", limit=1)[0].key == "last"
    finally:
        again.close()


def test_a_queue_trim_never_waits_for_a_call_in_progress() -> None:
    import threading

    from mneme.store.scrub import Gate

    gate = Gate()
    inside, leave = threading.Event(), threading.Event()

    def reader() -> None:
        with gate.shared():
            inside.set()
            leave.wait(5)

    worker = threading.Thread(target=reader)
    worker.start()
    inside.wait(5)
    with gate.exclusive_now() as alone:
        assert not alone  # a search in progress: the trim is put off, nothing waits
    leave.set()
    worker.join(5)
    with gate.exclusive_now() as alone:
        assert alone
        assert gate.held_here()
    with gate.shared():  # released: calls go on
        pass


def test_a_failed_queue_trim_loses_nothing_and_is_tried_again(
    tmp_path, embeddings: Embeddings, monkeypatch
) -> None:
    import sqlite3

    from mneme.store import chroma as chroma_module

    calls: list[int] = []
    real = chroma_module.disk.trim_queue

    def busy_once(folder, collections):  # type: ignore[no-untyped-def]
        calls.append(len(collections))
        if len(calls) == 1:
            raise sqlite3.OperationalError("database is locked")
        return real(folder, collections)

    monkeypatch.setattr(chroma_module.disk, "trim_queue", busy_once)
    monkeypatch.setattr(chroma_module, "QUEUE_TRIM_CHARS", 100)
    store = ChromaStore.open(
        str(tmp_path / "chroma"),
        index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]},  # type: ignore[attr-defined]
    )
    ns = ("memories", "alice")
    try:
        for i in range(3):
            store.put(ns, f"k{i}", {"text": f"a note long enough to be due for a trim, number {i} " * 3})
        assert len(calls) >= 2  # the failed trim was tried again at the next write
        assert len(store.search(ns, limit=10)) == 3
    finally:
        store.close()


def test_a_write_counts_its_filter_fields_toward_the_queue_trim(
    tmp_path, embeddings: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's queue entry holds the value, the document and each filter field's copy of the text."""
    import sqlite3

    from mneme.store import chroma as chroma_module

    text = "海边的小屋" * 240  # 1,200 characters: value and document alone stay under the limit
    monkeypatch.setattr(chroma_module, "QUEUE_TRIM_CHARS", 3_000)
    folder = tmp_path / "chroma"
    store = ChromaStore.open(
        str(folder),
        index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]},  # type: ignore[attr-defined]
    )
    try:
        store.put(("memories", "alice"), "k0", {"text": text})
        with sqlite3.connect(folder / "chroma.sqlite3") as con:
            kept = con.execute(
                "SELECT count(*) FROM embeddings_queue WHERE metadata LIKE ?", (f"%{text[:30]}%",)
            ).fetchone()[0]
        assert kept == 0  # trimmed after this one write, not after the next one
        assert store.get(("memories", "alice"), "k0").value["text"] == text  # type: ignore[union-attr]
    finally:
        store.close()
