"""The user model's shipped heads were trained on the shipped taxonomy and examples."""

from __future__ import annotations

from mneme.classifier import data_hash
from mneme.memory.usermodel.heads import HEADS
from mneme.memory.usermodel.train import SOURCES


def test_the_shipped_weights_were_trained_on_the_shipped_data() -> None:
    assert HEADS.meta["sources"] == data_hash(*SOURCES), "retrain: python -m mneme.memory.usermodel.train"
