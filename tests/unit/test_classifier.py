"""The linear heads on embedding vectors: they learn, save and load, and refuse missing weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mneme.classifier import Heads, LinearClassifier, save_heads
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
