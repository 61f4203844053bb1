"""A user with more memories than one Chroma read can return (found by the 100,000-memory benchmark)."""

from __future__ import annotations

from langgraph.store.base import PutOp

from mneme.store.chroma import ChromaStore

ROWS = 33_000  # past SQLite's 32,766 variables, where a single Chroma `get` fails


def test_listing_a_namespace_past_chromas_single_read_limit_returns_every_item(
    chroma_store: ChromaStore,
) -> None:
    ns = ("bulk", "alice")
    for start in range(0, ROWS, 5_000):
        chroma_store.batch(
            [PutOp(ns, f"k{i}", {"n": i}, index=False) for i in range(start, min(start + 5_000, ROWS))]
        )

    items = chroma_store.search(ns, limit=1_000_000)

    assert len(items) == ROWS
    assert {item.key for item in items} == {f"k{i}" for i in range(ROWS)}
    assert [i.key for i in chroma_store.search(ns, limit=3, offset=20_000)] == [
        i.key for i in items[20_000:20_003]
    ]
