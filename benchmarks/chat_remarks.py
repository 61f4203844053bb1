"""Issue 11: chat remarks are not memories, casual lines about oneself are (benchmarks/data/chat_remarks.json).

Written by a helper who read no code: remarks that say nothing lasting about the speaker ("never
mind, I found it", "跟你说个事", "lol same") and lines in the same register that do ("ngl I hate
cilantro", "btw 我对猫毛过敏"), split into halves by a hash of the text before use. Each line is
said by a fresh user through `Memory.add` on the embedded defaults:

- `remark_stored`: the share of remarks that left a current memory (lower is better);
- `lasting_kept`: the share of lasting lines that left one (higher is better).

    python -m benchmarks.chat_remarks --split report [--verbose]
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import ROOT, kept_shares, labelled, run_half

DATA = ROOT / "benchmarks" / "data" / "chat_remarks.json"


def lines(split: str) -> list[dict[str, Any]]:
    """The lines of a half (`tune`, `report` or `all`)."""
    return labelled(DATA, split)


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say each line of a half as a fresh user and count what was kept."""
    names = {"remark": "remark_stored", "lasting": "lasting_kept"}
    return {"split": split, **kept_shares("remarks", lines(split), names, verbose)}


if __name__ == "__main__":
    run_half("chat_remarks", __doc__, run)
