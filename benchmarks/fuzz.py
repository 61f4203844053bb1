"""Hostile input through every door, many examples: counts per entry point for docs/benchmarks.md.

Run: `python -m benchmarks.fuzz [--examples N]`. The same doors and strategies as the fuzz
tests (`tests/hostile.py`), with N examples per door (`make test` runs about 120): every
`Memory` method (Chroma on disk, hashed test embeddings), every REST route (the app in
process), every MCP tool (a real MCP client, in process) and every CLI command (a real home,
local model). Nothing stops at the first problem: every call is counted. Writes
`benchmarks/results/fuzz.json` and prints the table of the "Fuzzing" section.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_result


def run(examples: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient
    from tests import hostile
    from tests.unit.test_fuzz import KEY, StoreBackend, seeded

    from mneme.home import open_home
    from mneme.memory.api import Memory
    from mneme.server.app import create_app
    from mneme.server.auth import KeyRing
    from mneme.server.ratelimit import RateLimiter

    fuzz = hostile.Fuzz(strict=False)
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        memory, ids, export = seeded(root / "api")
        hostile.fuzz_memory(fuzz, memory, examples, ids, export)
        timings["memory"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        memory, ids, export = seeded(root / "rest")
        seen: list[BaseException] = []
        app = create_app(
            StoreBackend(hostile.Watched(memory, seen)),
            keys=KeyRing({KEY: None}),
            rate_limit=RateLimiter(0, 1),
        )
        with TestClient(
            app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {KEY}"}
        ) as client:
            hostile.fuzz_rest(fuzz, client, memory.store, seen, examples, ids, export)
        timings["rest"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        memory, ids, _ = seeded(root / "mcp")
        hostile.fuzz_mcp(fuzz, memory, memory.store, examples, ids)
        timings["mcp"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        home = root / "home"
        opened = open_home(home)
        try:
            mem = Memory(opened.store)
            cli_ids = [mem.save("I like green tea", user_id="ann").id or "", "no-such-id"]
            files = hostile.import_files(root, mem.export(user_id="ann"))
            hostile.fuzz_cli(fuzz, home, opened.store, examples, cli_ids, files)
        finally:
            opened.close()
        timings["cli"] = time.perf_counter() - t0
    doors = fuzz.report()
    failures = {d: t.failures for d, t in fuzz.tallies.items() if t.failures}
    return {
        "examples_per_door_group": examples,
        "load": os.getloadavg(),
        "seconds": {k: round(v, 1) for k, v in timings.items()},
        "doors": doors,
        "totals": {
            key: sum(row[key] for row in doors.values())
            for key in ("inputs", "refused", "5xx", "other_exceptions", "changed_on_error")
        },
        "failures": failures,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        "| entry point | inputs tried | refused (4xx / MnemeError / tool error / exit 2-3) | 5xx | other exceptions | store changed on error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for door, row in result["doors"].items():
        lines.append(
            f"| {door} | {row['inputs']} | {row['refused']} | {row['5xx']} | {row['other_exceptions']} | {row['changed_on_error']} |"
        )
    t = result["totals"]
    lines.append(
        f"| **all** | **{t['inputs']}** | {t['refused']} | **{t['5xx']}** | **{t['other_exceptions']}** | **{t['changed_on_error']}** |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", type=int, default=2000, help="Examples per door group (Memory, REST, MCP, CLI)."
    )
    args = parser.parse_args()
    result = run(args.examples)
    path = write_result("fuzz", result)
    print(table(result))
    for door, failures in result["failures"].items():
        print(door, *failures, sep="\n  ")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
