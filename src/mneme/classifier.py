"""Small classifiers on the bundled embedding model: softmax regression heads and neighbour votes, trained offline, shipped as weights."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from mneme.errors import ConfigError


def unit(vectors: Any) -> np.ndarray:
    """Rows scaled to length 1 (float32); a zero row stays zero."""
    mat = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.asarray(mat / np.maximum(norms, 1e-9), dtype=np.float32)


@dataclass
class LinearClassifier:
    """A softmax regression over embedding vectors (two labels: logistic regression).

    Small on purpose: a few thousand labelled sentences cannot train more than a linear head
    without learning their phrasing, and a linear head on a multilingual sentence embedding
    carries its decision to sentences, and to a language, it never saw.
    """

    labels: list[str]
    """The classes, in the order of the weight columns."""
    weights: np.ndarray
    """`(dims, classes)` weights over unit-length embeddings."""
    bias: np.ndarray
    """`(classes,)` biases."""

    def logits(self, vectors: Any) -> np.ndarray:
        """Raw scores `(n, classes)` of unit-length embedding rows."""
        return np.asarray(unit(vectors) @ self.weights + self.bias, dtype=np.float64)

    def probs(self, vectors: Any) -> np.ndarray:
        """Class probabilities `(n, classes)`."""
        z = self.logits(vectors)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return np.asarray(e / e.sum(axis=1, keepdims=True))

    def prob(self, vectors: Any, label: str) -> np.ndarray:
        """The probability of one class for each row."""
        return self.probs(vectors)[:, self.labels.index(label)]

    @classmethod
    def fit(
        cls,
        vectors: Any,
        targets: Sequence[str],
        *,
        labels: Sequence[str] | None = None,
        l2: float = 1e-3,
        epochs: int = 300,
        lr: float = 0.05,
        balance: bool = True,
        sample_weight: Sequence[float] | None = None,
    ) -> LinearClassifier:
        """Train on the cross-entropy with full-batch Adam steps (deterministic).

        Args:
            vectors: `(n, dims)` embeddings of the examples.
            targets: The label of each example.
            labels: All classes, in order (default: sorted distinct targets).
            l2: Weight decay; keeps the head from memorising its examples.
            epochs: Optimizer steps over the whole set.
            lr: Adam's step size.
            balance: Weigh each class equally whatever its number of examples.
            sample_weight: Extra weight per example.

        Returns:
            The trained classifier.
        """
        x = unit(vectors)
        names = list(labels) if labels is not None else sorted(set(targets))
        index = {name: i for i, name in enumerate(names)}
        y = np.array([index[t] for t in targets])
        n, d = x.shape
        k = len(names)
        onehot = np.zeros((n, k), dtype=np.float32)
        onehot[np.arange(n), y] = 1.0
        w_ex = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if balance:
            counts = np.bincount(y, minlength=k).astype(np.float64)
            w_ex = w_ex * (n / (k * np.maximum(counts[y], 1.0)))
        w_ex = (w_ex / w_ex.sum()).astype(np.float32)
        params = np.zeros((d + 1, k), dtype=np.float32)  # weights, then the bias row
        m = np.zeros_like(params)
        v = np.zeros_like(params)
        xb = np.hstack([x, np.ones((n, 1), dtype=np.float32)])
        decay = np.full((d + 1, 1), l2, dtype=np.float32)
        decay[-1] = 0.0
        for step in range(1, epochs + 1):
            z = xb @ params
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            grad = xb.T @ ((p - onehot) * w_ex[:, None]) + decay * params
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            m_hat = m / (1 - 0.9**step)
            v_hat = v / (1 - 0.999**step)
            params -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        return cls(labels=names, weights=params[:d].copy(), bias=params[d].copy())

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to save, under `prefix`."""
        return {
            f"{prefix}.weights": self.weights.astype(np.float32),
            f"{prefix}.bias": self.bias.astype(np.float32),
            f"{prefix}.labels": np.array(self.labels),
        }

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str) -> LinearClassifier:
        """Read a classifier saved with `arrays`."""
        return cls(
            labels=[str(s) for s in arrays[f"{prefix}.labels"]],
            weights=np.asarray(arrays[f"{prefix}.weights"], dtype=np.float32),
            bias=np.asarray(arrays[f"{prefix}.bias"], dtype=np.float32),
        )


@dataclass
class NeighbourVote:
    """The labels of a text's nearest training examples, weighed by how close each is.

    Beside a linear head it keeps the distinctions a single hyperplane smooths over: "from now
    on, send refunds back to my card" sits among the standing wishes it was written like, "from
    now on, approve all my refunds" among the privileges asked for, though both lie on the same
    side of a line through "from now on" and "refunds".
    """

    labels: list[str]
    """The classes, in the order of `probs`' columns."""
    vectors: np.ndarray
    """`(n, dims)` unit-length training embeddings (kept as float16)."""
    targets: np.ndarray
    """`(n,)` the class index of each training example."""
    k: int = 15
    """How many neighbours vote."""
    temperature: float = 0.05
    """A neighbour's vote weighs `exp((similarity - best similarity) / temperature)`."""

    def __post_init__(self) -> None:
        self._table = np.asarray(self.vectors, dtype=np.float32).T  # converted once, not per call

    def probs(self, vectors: Any) -> np.ndarray:
        """Class shares of the weighted vote `(n, classes)`."""
        x = unit(vectors)
        sims = x @ self._table
        k = min(self.k, sims.shape[1])
        idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        near = np.take_along_axis(sims, idx, axis=1)
        weight = np.exp((near - near.max(axis=1, keepdims=True)) / self.temperature)
        out = np.zeros((x.shape[0], len(self.labels)))
        for c in range(len(self.labels)):
            out[:, c] = (weight * (self.targets[idx] == c)).sum(axis=1)
        return np.asarray(out / weight.sum(axis=1, keepdims=True))

    def prob(self, vectors: Any, label: str) -> np.ndarray:
        """The share of one class for each row."""
        return self.probs(vectors)[:, self.labels.index(label)]

    @classmethod
    def fit(
        cls, vectors: Any, targets: Sequence[str], *, k: int = 15, temperature: float = 0.05
    ) -> NeighbourVote:
        """Keep the examples (nothing is learned beyond them)."""
        names = sorted(set(targets))
        index = {name: i for i, name in enumerate(names)}
        return cls(
            labels=names,
            vectors=unit(vectors).astype(np.float16),
            targets=np.array([index[t] for t in targets], dtype=np.int16),
            k=k,
            temperature=temperature,
        )

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to save, under `prefix`."""
        return {
            f"{prefix}.vectors": self.vectors.astype(np.float16),
            f"{prefix}.targets": self.targets.astype(np.int16),
            f"{prefix}.labels": np.array(self.labels),
            f"{prefix}.vote": np.array([self.k, self.temperature], dtype=np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str) -> NeighbourVote:
        """Read a vote saved with `arrays`."""
        k, temperature = (float(v) for v in arrays[f"{prefix}.vote"])
        return cls(
            labels=[str(s) for s in arrays[f"{prefix}.labels"]],
            vectors=np.asarray(arrays[f"{prefix}.vectors"], dtype=np.float16),
            targets=np.asarray(arrays[f"{prefix}.targets"], dtype=np.int16),
            k=int(k),
            temperature=temperature,
        )


Head = LinearClassifier | NeighbourVote
"""A classifier of a weights file."""


def data_path(name: str) -> Path:
    """The path of a file shipped in `mneme/data`."""
    return Path(str(resources.files("mneme").joinpath("data", name)))


def data_hash(*names: str) -> str:
    """A hash of shipped data files, recorded with the weights trained on them."""
    h = hashlib.sha256()
    for name in names:
        h.update(data_path(name).read_bytes())
    return h.hexdigest()[:16]


class Heads:
    """The classifiers of one shipped weights file (`mneme/data/<name>.npz`), loaded once.

    The file records the hash of the data it was trained on (`sources`); a unit test checks
    that it matches the shipped data, so examples are never edited without retraining.
    """

    def __init__(self, name: str, trainer: str) -> None:
        self.name = name
        self.trainer = trainer
        self._lock = threading.Lock()
        self._heads: dict[str, Head] | None = None
        self._meta: dict[str, Any] = {}

    def _load(self) -> dict[str, Head]:
        with self._lock:
            if self._heads is None:
                path = data_path(f"{self.name}.npz")
                if not path.exists():
                    raise ConfigError(
                        f"mneme: the classifier weights {path.name} are missing; "
                        f"run `python -m {self.trainer}` to build them"
                    )
                with np.load(path, allow_pickle=False) as arrays:
                    self._meta = json.loads(str(arrays["meta"]))
                    prefixes = sorted({k.rsplit(".", 1)[0] for k in arrays.files if k != "meta"})
                    self._heads = {
                        p: (
                            NeighbourVote.from_arrays(arrays, p)
                            if f"{p}.vectors" in arrays.files
                            else LinearClassifier.from_arrays(arrays, p)
                        )
                        for p in prefixes
                    }
            return self._heads

    def _head(self, head: str) -> Head:
        found = self._load().get(head)
        if found is None:  # weights built before this head existed
            raise ConfigError(
                f"mneme: the classifier weights {self.name}.npz have no {head} head; "
                f"run `python -m {self.trainer}` to rebuild them"
            )
        return found

    def __getitem__(self, head: str) -> LinearClassifier:
        found = self._head(head)
        if not isinstance(found, LinearClassifier):
            raise ConfigError(f"mneme: {head} in {self.name}.npz is not a linear head")
        return found

    def vote(self, head: str) -> NeighbourVote:
        """A neighbour vote of the file."""
        found = self._head(head)
        if not isinstance(found, NeighbourVote):
            raise ConfigError(f"mneme: {head} in {self.name}.npz is not a neighbour vote")
        return found

    def __contains__(self, head: str) -> bool:
        return head in self._load()

    @property
    def meta(self) -> dict[str, Any]:
        """What the weights file says about its training (sources, counts, scores)."""
        self._load()
        return dict(self._meta)


def save_heads(name: str, heads: Mapping[str, Head], meta: dict[str, Any], folder: Path) -> Path:
    """Write classifiers and their training record to `folder/<name>.npz`."""
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, ensure_ascii=False, sort_keys=True))}
    for prefix, head in heads.items():
        arrays.update(head.arrays(prefix))
    path = folder / f"{name}.npz"
    np.savez_compressed(path, **arrays)
    return path
