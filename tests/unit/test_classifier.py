"""The heads on embedding vectors (linear, neighbour vote): they learn, save and load, and refuse missing weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mneme.classifier import Heads, LinearClassifier, NeighbourVote, save_heads
from mneme.errors import ConfigError


def _blobs(n: int = 60, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 16))
    x = np.concatenate([c + 0.3 * rng.normal(size=(n, 16)) for c in centres])
    y = [label for label in ("a", "b", "c") for _ in range(n)]
    return x, y


def test_a_head_separates_what_it_was_shown_and_generalizes_to_new_points() -> None:
    x, y = _blobs()
    head = LinearClassifier.fit(x, y)
    fresh, truth = _blobs(seed=0)  # same centres, new noise below
    rng = np.random.default_rng(1)
    fresh = fresh + 0.1 * rng.normal(size=fresh.shape)
    pred = [head.labels[i] for i in np.argmax(head.probs(fresh), axis=1)]
    assert np.mean([p == t for p, t in zip(pred, truth, strict=True)]) > 0.95
    assert np.allclose(head.probs(fresh).sum(axis=1), 1.0)


def test_weights_round_trip_through_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _blobs()
    head = LinearClassifier.fit(x, y)
    save_heads("probe", {"h": head}, {"sources": "x"}, tmp_path)
    monkeypatch.setattr("mneme.classifier.data_path", lambda name: tmp_path / name)
    loaded = Heads("probe", trainer="t")
    assert loaded.meta["sources"] == "x"
    assert np.allclose(loaded["h"].probs(x), head.probs(x), atol=1e-5)


def test_missing_weights_say_how_to_build_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mneme.classifier.data_path", lambda name: tmp_path / name)
    with pytest.raises(ConfigError, match=r"python -m some\.trainer"):
        Heads("absent", trainer="some.trainer")["h"]


def test_a_vote_keeps_a_pocket_that_a_line_cannot() -> None:
    # class "b" sits in a small pocket inside "a": a hyperplane cannot cut it out, the vote can
    rng = np.random.default_rng(2)
    a = rng.normal(size=(200, 8))
    pocket = np.array([3.0] + [0.0] * 7)
    b = pocket + 0.1 * rng.normal(size=(20, 8))
    a = a[np.linalg.norm(a - pocket, axis=1) > 1.0]
    x = np.concatenate([a, b])
    y = ["a"] * len(a) + ["b"] * len(b)
    vote = NeighbourVote.fit(x, y, k=5, temperature=0.05)
    probe = pocket + 0.05 * rng.normal(size=(10, 8))
    assert (vote.prob(probe, "b") > 0.9).all()
    assert (vote.prob(a[:20], "a") > 0.5).mean() > 0.9
    assert np.allclose(vote.probs(probe).sum(axis=1), 1.0)


def test_a_vote_round_trips_through_a_file_beside_a_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, y = _blobs()
    head, vote = LinearClassifier.fit(x, y), NeighbourVote.fit(x, y)
    save_heads("probe", {"h": head, "v": vote}, {"sources": "x"}, tmp_path)
    monkeypatch.setattr("mneme.classifier.data_path", lambda name: tmp_path / name)
    loaded = Heads("probe", trainer="t")
    assert np.allclose(loaded.vote("v").probs(x), vote.probs(x), atol=1e-3)
    assert "v" in loaded and "w" not in loaded
    with pytest.raises(ConfigError, match="not a linear head"):
        loaded["v"]


def test_weights_older_than_a_head_say_how_to_rebuild_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, y = _blobs()
    save_heads("probe", {"h": LinearClassifier.fit(x, y)}, {"sources": "x"}, tmp_path)
    monkeypatch.setattr("mneme.classifier.data_path", lambda name: tmp_path / name)
    loaded = Heads("probe", trainer="some.trainer")
    with pytest.raises(ConfigError, match=r"no correction head.*python -m some\.trainer"):
        loaded["correction"]
    with pytest.raises(ConfigError, match=r"no correction_vote head"):
        loaded.vote("correction_vote")
