"""The lexical index: terms in both languages, BM25, dates, and staying in step with the store."""

from __future__ import annotations

from datetime import date

import chromadb
from chromadb.config import Settings
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from mneme.context import Context
from mneme.memory import mirror
from mneme.memory.api import Memory
from mneme.memory.dates import Period, periods
from mneme.memory.lexical import LexicalIndex
from mneme.memory.repo import kind_namespace
from mneme.memory.terms import terms
from mneme.nodes import make_summarize
from mneme.state import State
from mneme.store.chroma import ChromaStore
from tests.fakes import HashEmbeddings


def test_english_terms_drop_function_words_and_stem() -> None:
    assert terms("What paintings did she make?") == ["paint", "make"]
    assert terms("Caroline's adoption agencies") == ["carolin", "adopt", "agenc"]


def test_chinese_terms_are_words_without_function_words() -> None:
    words = terms("我上周去了一个支持小组的聚会")
    assert {"上周", "支持", "小组", "聚会"} <= set(words)
    assert not {"我", "了", "的", "一个"} & set(words)
    assert "python" in terms("我在学Python编程")


def _value(i: int, text: str, **extra: object) -> dict[str, object]:
    return {"id": f"m{i}", "user_id": "u", "text": text, "content_hash": text, **extra}


def test_bm25_prefers_rare_terms_and_survives_compaction() -> None:
    index = LexicalIndex()
    for i in range(50):
        index.upsert("semantic", f"m{i}", _value(i, f"coffee with milk number {i}"))
    index.upsert("semantic", "rare", _value(99, "coffee with cardamom"))
    scores = index.score(terms("cardamom coffee"))
    best = int(scores.bm25.argmax())
    assert index.doc(best).key == "rare"
    assert scores.coverage[best] > 0.99
    for i in range(40):
        index.remove("semantic", f"m{i}")
    index.compact()
    assert index.size == 11 and index.n == 11
    scores = index.score(terms("cardamom coffee"))
    assert index.doc(int(scores.bm25.argmax())).key == "rare"


def test_turns_of_a_session_are_linked_in_order() -> None:
    index = LexicalIndex()
    for i, at in enumerate(["2024-01-01T10:00:03", "2024-01-01T10:00:01", "2024-01-01T10:00:02"]):
        index.upsert(
            "episodic",
            f"t{i}",
            _value(i, f"turn {i}", source={"thread_id": "s"}, metadata={"said_at": at}),
        )
    order = {index.doc(s).key: s for s in range(index.n)}
    assert index.cols["next"][order["t1"]] == order["t2"]
    assert index.cols["next"][order["t2"]] == order["t0"]
    index.remove("episodic", "t2")
    assert index.cols["next"][order["t1"]] == order["t0"]
    assert index.cols["prev"][order["t0"]] == order["t1"]


def test_periods_in_queries() -> None:
    today = date(2024, 6, 15)
    assert periods("What did she do on 19 August, 2023?") == [Period(date(2023, 8, 19), date(2023, 8, 19))]
    assert periods("in July 2023") == [Period(date(2023, 7, 1), date(2023, 7, 31))]
    assert periods("What painting did he share in October?") == [Period(month=10)]
    assert periods("2023年8月19日她去了哪里") == [Period(date(2023, 8, 19), date(2023, 8, 19))]
    assert periods("她2023年5月做了什么") == [Period(date(2023, 5, 1), date(2023, 5, 31))]
    assert periods("我上周说过什么", today) == [Period(date(2024, 6, 2), date(2024, 6, 9))]
    assert periods("what do I like", today) == []


def _index_keys(store: object, user: str) -> set[str]:
    index = mirror.lexical_index(store, user)  # type: ignore[arg-type]
    return {d.id for d in index.docs if d is not None}


def test_the_index_follows_writes_from_other_memory_objects_and_code_paths(mem_store: InMemoryStore) -> None:
    reader = Memory(mem_store)
    writer = Memory(mem_store)
    [a] = writer.add("I collect vintage postcards", user_id="u", infer=False)
    assert [h.id for h in reader.search("postcards", user_id="u")] == [a.id]
    loads = mirror.loads(mem_store, "u")
    writer.update(a.id or "", "I collect vintage stamps", user_id="u")
    assert reader.search("stamps", user_id="u")[0].text == "I collect vintage stamps"
    assert mirror.loads(mem_store, "u") == loads  # caught up from the log, not reloaded
    # The summarize node writes episodes through its own code path.
    turns = [HumanMessage(content=f"第{i}件事：我在准备潜水考试", id=f"h{i}") for i in range(30)]
    history = [m for h in turns for m in (h, AIMessage(content="好的", id=f"a{h.id}"))]
    make_summarize("offline")(
        State(messages=history),
        runtime=Runtime(context=Context(user_id="u", budget_history=300), store=mem_store),
    )
    assert any("潜水" in h.text for h in reader.search("潜水考试", user_id="u", kinds=["episodic"]))
    writer.delete(a.id or "", user_id="u")
    assert a.id not in _index_keys(mem_store, "u")
    writer.delete_all(user_id="u")
    assert _index_keys(mem_store, "u") == set()


def test_another_process_sharing_the_store_is_seen(tmp_path: object) -> None:
    """Two store objects over one Chroma database stand for two processes sharing a server."""
    emb = HashEmbeddings()
    client = chromadb.PersistentClient(path=str(tmp_path), settings=Settings(anonymized_telemetry=False))
    one = Memory(ChromaStore(client, index={"embed": emb, "dims": emb.dims, "fields": ["text"]}))
    two = Memory(ChromaStore(client, index={"embed": emb, "dims": emb.dims, "fields": ["text"]}))
    one.add("The spare key is under the blue flowerpot", user_id="u", infer=False)
    assert two.search("spare key flowerpot", user_id="u")[0].text.startswith("The spare key")
    [b] = two.add("The garage code is 4711", user_id="u", infer=False)
    index = mirror.lexical_index(one.store, "u")
    assert b.id in {d.id for d in index.docs if d is not None}
    two.delete(b.id or "", user_id="u")
    assert b.id not in _index_keys(one.store, "u")


def test_writes_that_bypass_the_log_are_repaired_when_seen(mem_store: InMemoryStore) -> None:
    memory = Memory(mem_store)
    change = memory.save("Is training for a marathon", user_id="u")
    assert memory.search("marathon", user_id="u")
    record = memory.get(change.id or "", user_id="u")
    # Edited in place by hand (Studio, a script): no revision is logged.
    mem_store.put(
        kind_namespace("u", "semantic"),
        record.id,
        {**record.to_store(), "text": "Is training for a triathlon", "content_hash": "x"},
        index=["text"],
    )
    assert memory.search("triathlon", user_id="u")[0].text == "Is training for a triathlon"
    index = mirror.lexical_index(mem_store, "u")
    scores = index.score(terms("triathlon"))
    assert scores.bm25.max() > 0  # the dense hit repaired the index


def test_a_chroma_hit_the_index_never_saw_is_read_and_indexed(chroma_store: ChromaStore) -> None:
    """Dense candidates come back as keys only; one the index does not know is read, then kept."""
    memory = Memory(chroma_store)
    memory.save("Is training for a marathon", user_id="u")
    assert memory.search("marathon", user_id="u")
    record = memory.get(memory.save("Keeps bees on the roof", user_id="u").id or "", user_id="u")
    hand = {
        **record.to_store(),
        "id": "hand-written",
        "text": "Is learning to sail a dinghy",
        "content_hash": "y",
    }
    chroma_store.put(kind_namespace("u", "semantic"), "hand-written", hand, index=["text"])  # no revision
    hits = memory.search("learning to sail a dinghy", user_id="u")
    assert hits and hits[0].text == "Is learning to sail a dinghy"
    assert ("semantic", "hand-written") in mirror.lexical_index(chroma_store, "u").slot_of
