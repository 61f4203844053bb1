"""The side-by-side benchmark's own machinery: its docs section, its network guard, its scale corpus."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from benchmarks.common import LOCOMO
from benchmarks.report import HEADING, replace_section, section

from tests.fakes import HashEmbeddings

ROOT = Path(__file__).resolve().parents[2]


def row(recall10: float, p95: float = 50.0) -> dict:
    return {
        "recall@5": recall10 - 0.1,
        "recall@10": recall10,
        "recall@25": recall10 + 0.1,
        "per_category": {"single-hop": {"recall@10": recall10, "questions": 3}},
        "search_ms_p50": p95 / 2,
        "search_ms_p95": p95,
        "add_per_s": 100.0,
        "peak_rss_mb": 200.0,
        "questions": 3,
        "turns": 10,
        "notes": "set up for the test",
        "network_attempts": 0,
    }


def result(mneme_recall: float, mem0_p95_10k: float) -> dict:
    sizes = {"1000": {"search_ms_p50": 10.0, "search_ms_p95": 20.0, "add_per_s": 500.0}}
    return {
        "machine": {
            "processor": "x86_64",
            "cpus": 2,
            "python": "3.11",
            "platform": "linux",
            "packages": {},
            "peers": {},
        },
        "quick": False,
        "run_seconds": 60.0,
        "systems": {
            "mneme": row(mneme_recall, p95=40.0),
            "bm25": row(0.55, p95=2.0),
            "mem0": {"skipped": "mem0ai is not installed"},
        },
        "tokens": {"skipped": "not measured in this test"},
        "scale": {
            "mneme": {
                "sizes": {
                    **sizes,
                    "10000": {"search_ms_p50": 30.0, "search_ms_p95": 60.0, "add_per_s": 400.0},
                }
            },
            "mem0": {
                "sizes": {
                    **sizes,
                    "10000": {"search_ms_p50": 90.0, "search_ms_p95": mem0_p95_10k, "add_per_s": 50.0},
                }
            },
        },
        "write_path": {"skipped": "not measured in this test"},
        "turn_overhead": {"skipped": "not measured in this test"},
    }


DOC = (
    "# Benchmarks\n\n## Read path (issue 5)\n\nread-path figures stay\n\n"
    f"{HEADING}\n\n<!-- section of the comparison work -->\n\n## Later (issue 9)\n\nlater text stays\n"
)


def test_regenerating_the_docs_replaces_only_the_peer_section() -> None:
    doc = replace_section(DOC, section(result(0.70, 300.0)))

    before, _, rest = doc.partition(HEADING)
    assert before == DOC.partition(HEADING)[0]
    assert rest.endswith("## Later (issue 9)\n\nlater text stays\n")
    assert "<!-- section of the comparison work -->" not in rest
    assert "| mneme | 0.600 | 0.700 | 0.800 |" in rest
    assert "| mem0 | skipped: mem0ai is not installed |" in rest  # a peer that could not run keeps its row
    # Regenerating again gives the same document, not a second copy of the section.
    assert replace_section(doc, section(result(0.70, 300.0))) == doc


def test_targets_are_reported_as_met_or_not_met_from_the_figures() -> None:
    met = section(result(0.70, 300.0))
    assert "mneme's recall@10 above every peer's: met" in met
    assert "search p95 at 10,000 memories below mem0's: met** (mneme 60.0 ms, mem0 300.0 ms, 0.20x)" in met

    missed = section(result(0.50, 45.0))
    assert "mneme's recall@10 above every peer's: NOT met** (mneme 0.500, best peer bm25 0.550" in missed
    assert "below mem0's: NOT met" in missed


def test_the_network_guard_refuses_and_counts_remote_connections_only() -> None:
    code = (
        "import socket, threading\n"
        "from benchmarks import offline\n"
        "offline.install()\n"
        "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
        "socket.create_connection(srv.getsockname(), timeout=2).close()\n"
        "try:\n"
        "    socket.socket().connect(('192.0.2.1', 443))\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        "try:\n"
        "    socket.create_connection(('api.openai.com', 443), timeout=2)\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        "print(offline.attempts())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.count("refused") == 2
    assert "connect ('192.0.2.1', 443)" in out
    assert "resolve 'api.openai.com'" in out


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data is read in place from ../shared/data")
def test_scale_corpus_is_distinct_texts_with_real_or_summed_real_vectors() -> None:
    from benchmarks.scale_corpus import CorpusEmbeddings, build

    emb = HashEmbeddings()
    corpus = build(7_000, emb)

    assert len(corpus.texts) == len(set(corpus.texts)) == 7_000
    assert np.allclose(np.linalg.norm(corpus.vectors, axis=1), 1.0, atol=1e-5)
    first = corpus.texts[0]
    assert np.allclose(corpus.vectors[0], emb.embed_documents([first])[0], atol=1e-6)
    pair = corpus.texts[corpus.real]  # the first text made of two turns
    a, b = pair.split(" / ", 1) if pair.count(" / ") == 1 else (None, None)
    if a is not None:
        va, vb = np.asarray(emb.embed_documents([a, b]), dtype=np.float32)
        expected = (va + vb) / np.linalg.norm(va + vb)
        assert np.allclose(corpus.vectors[corpus.real], expected, atol=1e-5)
    assert len(set(corpus.questions)) == len(corpus.questions) > 1000  # queries are real questions

    served = CorpusEmbeddings(corpus, emb)
    got = served.embed_documents([pair, "a text that is not in the corpus"])
    assert np.allclose(got[0], corpus.vectors[corpus.real])
    assert served.misses == 1  # anything else goes to the real model, and is counted


def test_langgraph_peer_stores_every_turn_when_a_text_repeats_within_a_batch() -> None:
    from benchmarks.peers.langgraph_store import LangGraphStoreSystem

    system = LangGraphStoreSystem(HashEmbeddings())
    items = [
        (f"D1:{i}", "Caroline: Thanks!" if i % 3 == 0 else f"Melanie: my dog is called Rex {i}")
        for i in range(450)
    ]
    system.add_texts("conv-1", items)  # InMemoryStore.batch alone raises on the repeated text

    assert len(system.store.search(("memories", "conv-1"), limit=1000)) == 450
    assert system.search_user("conv-1", "Rex 7", 3)[0] == "D1:7"
