"""What a user goes on to say about a family member with a pronoun reaches a later request, and an outsider's never does.

`benchmarks/data/pronoun_reads.json`: in each case the user names someone, then says more about
them in a later message of the same conversation that starts with a pronoun ("她对芒果过敏，一吃
嘴巴就肿" after "我闺女今年上三年级了"). A question is then asked in a new session. Counted per
half (a hash of the id) and language, through the graph on the embedded defaults:

- `family-new`: the pronoun sentence's fact is in the memory block;
- `family-change`: its new value is in the block and the old one is not;
- `outsider`: nothing said about someone outside the family is in the block;
- `stored`: for the family cases, the pronoun sentence's keyword is in one of the user's current
  memories at all.

    python -m benchmarks.pronoun_reads --split tune
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import half, run_half

DATA = Path(__file__).parent / "data" / "pronoun_reads.json"


def _has(texts: list[str], word: str) -> bool:
    return any(word.lower() in t.lower() for t in texts)


def run(
    split: str, verbose: bool = False, data: Path = DATA, has: Callable[[list[str], str], bool] = _has
) -> dict[str, Any]:
    """Say every case's turns in one conversation, ask its question in a new one, and count.

    Args:
        split: The half to run (`tune`, `report` or `all`).
        verbose: Print every miss.
        data: The cases (this set, or another of its shape: benchmarks.pet_reads).
        has: Whether some of the texts contain a keyword.

    Returns:
        Per language and kind, the cases whose block was right and the facts stored; where the
        cases say whose the fact is (`pet_words`), the facts stored naming them (`theirs`).
    """
    from mneme.graph import build_graph
    from mneme.home import open_home
    from mneme.memory.api import Memory

    cases = [c for c in json.loads(data.read_text())["cases"] if split == "all" or half(c["id"]) == split]
    ok: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    stored: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    theirs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    with tempfile.TemporaryDirectory(prefix="mneme-pronoun-") as tmp:
        home = open_home(tmp)
        try:
            graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
            memory = Memory(home.store)
            for case in cases:
                user = f"pr-{case['id']}"
                for i, text in enumerate(case["turns"]):
                    graph.invoke(
                        {"messages": [{"role": "user", "content": text, "id": f"{user}-m{i}"}]},
                        {"configurable": {"thread_id": f"{user}-talk"}},
                        context={"user_id": user},
                    )
                out = graph.invoke(
                    {"messages": [{"role": "user", "content": case["question"]}]},
                    {"configurable": {"thread_id": f"{user}-ask"}},
                    context={"user_id": user},
                )
                block = [str(out["prompt"].get("memory_block", ""))]
                shown = all(has(block, w) for w in case["must_show"][:1]) if case["must_show"] else True
                good = shown and not any(has(block, w) for w in case["must_not_show"])
                key = f"{case['lang']} {case['kind']}"
                ok[key][0] += good
                ok[key][1] += 1
                if case["must_show"]:
                    current = [r.text for r in memory.get_all(user_id=user, kinds=["profile", "semantic"])]
                    stored[key][0] += has(current, case["must_show"][0])
                    stored[key][1] += 1
                    if case.get("pet_words"):
                        said = [t for t in current if has([t], case["must_show"][0])]
                        theirs[key][0] += any(has(said, w) for w in case["pet_words"])
                        theirs[key][1] += 1
                if verbose and not good:
                    print(f"{case['id']} {key}: {case['turns']} -> {case['question']!r}: {block[0]!r}")
        finally:
            home.close()
    return {
        "split": split,
        "cases": len(cases),
        "ok": {k: f"{v[0]}/{v[1]}" for k, v in sorted(ok.items())},
        "stored": {k: f"{v[0]}/{v[1]}" for k, v in sorted(stored.items())},
        **({"theirs": {k: f"{v[0]}/{v[1]}" for k, v in sorted(theirs.items())}} if theirs else {}),
    }


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("pronoun_reads", __doc__, run)


if __name__ == "__main__":
    main()
