"""The offline extractor's precision and recall on the labelled sets (issue 6: >= 0.90 / >= 0.80)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from mneme.memory.extract import Candidate, extract
from mneme.memory.labels import evaluate, load_labels

DATA = Path(__file__).parents[1] / "data"
LABELS = DATA / "extraction_labels.json"
HOLDOUT = DATA / "extraction_holdout.json"
MIN_PRECISION = 0.90
MIN_RECALL = 0.80


def offline(text: str, now: datetime) -> list[Candidate]:
    return extract(text, now=now)


def test_the_labelled_set_is_big_bilingual_and_full_of_small_talk() -> None:
    labels = load_labels(LABELS)
    langs = [i.lang for i in labels.items]
    assert len(labels.items) >= 80
    assert langs.count("zh") >= len(langs) / 2
    assert sum(1 for i in labels.items if not i.facts) >= 40
    wanted = {"preference", "dislike", "identity", "location", "contact", "schedule", "order", "event"}
    wanted |= {"correction", "forget", "none"}
    for lang in ("zh", "en"):
        assert {i.category for i in labels.items if i.lang == lang} == wanted
    assert len({i.id for i in labels.items}) == len(labels.items)


@pytest.mark.parametrize("path", [LABELS, HOLDOUT], ids=["labelled", "holdout"])
def test_offline_extractor_precision_and_recall(path: Path) -> None:
    scores = evaluate(offline, load_labels(path))
    for key in ("all", "lang:zh", "lang:en"):
        score = scores[key]
        detail = f"{key}: false positives {score.false_positives}, misses {score.misses}"
        assert score.precision >= MIN_PRECISION, detail
        assert score.recall >= MIN_RECALL, detail


def test_the_score_punishes_an_extractor_that_finds_nothing_or_too_much() -> None:
    labels = load_labels(LABELS)
    silent = evaluate(lambda text, now: [], labels)["all"]
    assert silent.recall == 0.0 and silent.precision == 1.0
    chatty = evaluate(lambda text, now: [Candidate("semantic", text)], labels)["all"]
    assert chatty.precision < 0.3 and chatty.recall < MIN_RECALL
