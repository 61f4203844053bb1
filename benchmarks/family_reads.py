"""Family members' facts through the graph: a request that involves someone in the user's life gets their facts.

`benchmarks/data/family_reads.json`: each scenario's facts are said one per turn, then each
of its three requests is asked in a new session (a family member's, the household's, the
user's own). Counted per half (a hash of the id):

- `member`: the family member's fact among what the graph injected;
- `household`: of the facts a household request needs, the share injected;
- `own`: of the facts the user's own request needs, the share injected;
- `noise`: facts injected that the request does not need (mean per request);
- `tokens`: the memory block's tokens (mean per request).

    python -m benchmarks.family_reads --split tune
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import block_ids, half, run_half

DATA = Path(__file__).parent / "data" / "family_reads.json"
KINDS = ("member", "household", "own")


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Say every scenario's facts, ask its requests, and count what reached the model."""
    from mneme.graph import build_graph
    from mneme.home import open_home
    from mneme.tokens import counter_for

    scenarios = [
        s for s in json.loads(DATA.read_text())["scenarios"] if split == "all" or half(s["id"]) == split
    ]
    counter = counter_for("offline")
    sums: dict[str, list[float]] = {k: [0.0, 0.0] for k in KINDS}
    noise: list[int] = []
    tokens: list[int] = []
    with tempfile.TemporaryDirectory(prefix="mneme-family-") as tmp:
        home = open_home(tmp)
        try:
            graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
            for sc in scenarios:
                user = f"fr-{sc['id']}"
                written: dict[int, set[str]] = {}
                for i, fact in enumerate(sc["facts"]):
                    out = graph.invoke(
                        {"messages": [{"role": "user", "content": fact, "id": f"{user}-m{i}"}]},
                        {"configurable": {"thread_id": f"{user}-facts"}},
                        context={"user_id": user},
                    )
                    written[i] = {
                        str(w["id"])
                        for w in out.get("writes", [])
                        if w.get("id") and w.get("operation") in ("ADD", "SUPERSEDE", "NOOP", "UPDATE")
                    }
                for kind, req in zip(KINDS, sc["requests"], strict=True):
                    out = graph.invoke(
                        {"messages": [{"role": "user", "content": req["text"]}]},
                        {"configurable": {"thread_id": f"{user}-{kind}"}},
                        context={"user_id": user},
                    )
                    shown = block_ids(out)
                    got = [i for i, ids in written.items() if ids & shown]
                    needs = set(req["needs"])
                    if needs:
                        sums[kind][0] += len(needs & set(got)) / len(needs)
                        sums[kind][1] += 1
                    extra = [i for i in got if i not in needs]
                    noise.append(len(extra))
                    block = str(out["prompt"].get("memory_block", ""))
                    tokens.append(counter.count(block) if block else 0)
                    if verbose and (needs - set(got) or extra):
                        missed = [sc["facts"][i] for i in sorted(needs - set(got))]
                        print(
                            f"{sc['id']} {kind} {req['text']!r} missed {missed} extra {[sc['facts'][i] for i in extra]}"
                        )
        finally:
            home.close()
    return {
        "split": split,
        "scenarios": len(scenarios),
        **{k: round(v[0] / v[1], 3) if v[1] else None for k, v in sums.items()},
        "noise": round(sum(noise) / len(noise), 2) if noise else 0.0,
        "tokens": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
    }


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("family_reads", __doc__, run)


if __name__ == "__main__":
    main()
