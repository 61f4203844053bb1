"""Hostile input: personal data masked on every write path, poisoning refused, forgetting complete (issue 14).

- Personal data: every item of `benchmarks/data/pii_corpus.json` (written by an independent
  author; `tune` and `report` halves, then `fresh`, `fresh2` and `fresh3` items by three more
  authors; `fresh3` is the held-out half since the misses of the others were used) goes through
  each door on a real embedded home (local embeddings, Chroma on disk): `save`, `add` (extracted), `add(infer=False)`, `update`,
  import, metadata values, `session_id`, REST `POST`, MCP `save_memory`, and a session's
  title and recap (`end_session` stores it). An item passes a door when nothing the home
  keeps for the user (memories, archive, history, session records) contains its value or its
  digits; a negative item passes when `save` stores it unchanged.
- Poisoning: every message of `benchmarks/data/poisoning_corpus.json` through `save`, `add`
  and `add(infer=False)` (a line kept as said counts as refused when it is replaced), and the
  guard itself; the share of attempts refused and of ordinary messages
  refused, per half (`tune`, `report`, `fresh`, `fresh2`, `fresh3`, `fresh4` by a fifth author;
  `identity`, the held-out half of that author's messages about one's own name, title and role;
  then `fresh5` by a sixth author: the held-out half, `HELD_OUT`). `--tune` prints the threshold sweep on the tune half only (how
  `guard.THRESHOLD` was chosen).
- Forgetting: memories and conversations with marked words, then `delete` and `delete_all`;
  the bytes of the forgotten words found in the files of the home afterwards, and what the
  scrub costs at 2,000 memories.

Run: `python -m benchmarks.hostile_input` (`--part pii|poisoning|forgetting`, `--tune`).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before the embedding model loads

import argparse
import asyncio
import contextlib
import json
import re
import tempfile
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, write_result
from mneme.errors import MnemeError

PII = ROOT / "benchmarks" / "data" / "pii_corpus.json"
POISONING = ROOT / "benchmarks" / "data" / "poisoning_corpus.json"
SPLITS = ("tune", "report", "fresh", "fresh2", "fresh3", "fresh4", "identity", "fresh5")
"""The poisoning corpus's halves: `report`'s misses, then `fresh`'s, `fresh2`'s and `fresh3`'s,
were looked at to improve the guard; the `fresh4` items (a fifth author, who read none of mneme)
were run before and after one change, their misses not read; `identity` is the held-out half of
that author's own-role messages (the other half is among the guard's examples); the `fresh5`
items (a sixth author) are the held-out half now."""
HELD_OUT = "fresh5"
"""The poisoning corpus's held-out half."""
PII_SPLITS = ("tune", "report", "fresh", "fresh2", "fresh3")
"""The PII corpus's halves: `report`'s misses, then `fresh`'s and `fresh2`'s, were used to
generalize the recognizers, so the `fresh3` items (a fourth author, who read none of mneme;
ID and card numbers in many forms) are held out now."""
REFUSED_ON_SAVE: list[str] = []
"""Users whose item `save` refused (poisoning guard): masked because not stored at all."""


def load(path: Path) -> list[dict[str, Any]]:
    """The items of a corpus."""
    items: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))["items"]
    return items


def _squash(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z\u4e00-\u9fff]", "", unicodedata.normalize("NFKC", text)).upper()


def leaked(item: dict[str, Any], kept: str) -> bool:
    """Whether what a home keeps still shows an item's value (verbatim, or its digits run)."""
    if item["value"] and item["value"] in kept:
        return True
    digits = item.get("digits")
    return bool(digits) and _squash(digits) in _squash(kept)


def kept_for(mem: Any, user: str) -> str:
    """Everything the home keeps for a user, as one JSON text."""
    data = mem.export(user_id=user)
    data.pop("exported_at", None)
    return json.dumps(data, ensure_ascii=False)


def load_avg() -> float:
    """The machine's 1-minute load (the figures depend on it)."""
    return round(os.getloadavg()[0], 2)


# -- personal data ----------------------------------------------------------------------------


def pii_doors(mem: Any, home: Path) -> dict[str, Callable[[str, str], None]]:
    """Each door text enters by, as a function of (text, user)."""
    from fastapi.testclient import TestClient
    from langchain_core.messages import AIMessage, HumanMessage

    from mneme import recap
    from mneme.mcp_server import build_server
    from mneme.memory.aio import AsyncMemory
    from mneme.nodes.ingest import record_session
    from mneme.server.app import create_app
    from mneme.server.auth import KeyRing
    from mneme.server.backend import HomeBackend

    client = TestClient(create_app(HomeBackend(home), keys=KeyRing({"bench-key": None})))
    refusals: list[str] = REFUSED_ON_SAVE
    client.headers["Authorization"] = "Bearer bench-key"
    amem = AsyncMemory(mem)

    def save(text: str, user: str) -> None:
        if mem.save(text, user_id=user).operation == "REFUSE":  # not stored: counted apart
            refusals.append(user)

    def add(text: str, user: str) -> None:
        mem.add(text, user_id=user)

    def verbatim(text: str, user: str) -> None:
        mem.add(text, user_id=user, infer=False)

    def update(text: str, user: str) -> None:
        change = mem.save("我喜欢喝茶", user_id=user)
        with contextlib.suppress(MnemeError):  # refused by the guard: nothing stored either
            mem.update(change.id or "", text, user_id=user)

    def import_(text: str, user: str) -> None:
        mem.save("I like green tea", user_id=user)
        data = mem.export(user_id=user)
        data["memories"][0] |= {"text": text, "content_hash": ""}
        mem.delete_all(user_id=user)
        mem.import_data(data, user_id=user)

    def metadata(text: str, user: str) -> None:
        mem.save("I like green tea", user_id=user, metadata={"note": text})

    def session_id(text: str, user: str) -> None:
        mem.save("I like green tea", user_id=user, session_id=text)

    def rest(text: str, user: str) -> None:
        r = client.post(f"/v1/users/{user}/memories", json={"text": text})
        assert r.status_code in (201, 422), r.text

    def mcp(text: str, user: str) -> None:
        server = build_server(amem, user)
        asyncio.run(server.call_tool("save_memory", {"text": text}))

    def session(text: str, user: str) -> None:
        thread = f"bench-{user}"
        record_session(mem.store, user, thread, text, group=False)
        values = {
            "messages": [HumanMessage(text), AIMessage(f"好的，已为您登记：{text}")],
            "summary": f"- User: {text}",
            "task": {},
        }
        recap.note_turn(mem.store, user, thread, values)
        recap.end_session(mem.store, user, thread)

    return {
        "save": save,
        "add": add,
        "add(infer=False)": verbatim,
        "update": update,
        "import": import_,
        "metadata": metadata,
        "session_id": session_id,
        "REST POST": rest,
        "MCP save_memory": mcp,
        "session title + recap": session,
    }


def run_pii(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of personal values masked on every door, per half, per format."""
    from mneme.memory.api import Memory

    t0 = time.perf_counter()
    load_start = load_avg()
    out: dict[str, Any] = {"doors": {}, "formats": {}, "negatives": {}, "refused": {}}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        with Memory.open(home) as mem:
            doors = pii_doors(mem, home)
            for d, (door, enter) in enumerate(doors.items()):
                per: dict[str, list[int]] = {s: [0, 0] for s in PII_SPLITS}
                for k, item in enumerate(i for i in items if i["personal"]):
                    user = f"p{k}-d{d}"
                    enter(item["text"], user)
                    ok = not leaked(item, kept_for(mem, user))
                    per[item["split"]][0] += int(ok)
                    per[item["split"]][1] += 1
                    if door == "save":
                        fmt = out["formats"].setdefault(item["format"], {s: [0, 0] for s in PII_SPLITS})
                        fmt[item["split"]][0] += int(ok)
                        fmt[item["split"]][1] += 1
                        if not ok:
                            out.setdefault("missed", []).append(
                                {"split": item["split"], "format": item["format"], "id": item["id"]}
                            )
                out["doors"][door] = {
                    s: {"masked": a, "of": n, "share": round(a / n, 4)} for s, (a, n) in per.items()
                }
                print(f"{door:24} " + "  ".join(f"{s} {a}/{n}" for s, (a, n) in per.items()), flush=True)
            neg: dict[str, list[int]] = {s: [0, 0] for s in PII_SPLITS}
            refused: dict[str, int] = dict.fromkeys(PII_SPLITS, 0)
            for k, item in enumerate(i for i in items if not i["personal"]):
                change = mem.save(item["text"], user_id=f"n{k}")
                refused[item["split"]] += int(change.operation == "REFUSE")
                neg[item["split"]][0] += int(change.text == item["text"].strip())
                neg[item["split"]][1] += 1
                if change.text != item["text"].strip():
                    out.setdefault("negatives_changed", []).append({"split": item["split"], "id": item["id"]})
            out["negatives"] = {
                s: {"unchanged": a, "of": n, "share": round(a / n, 4)} for s, (a, n) in neg.items()
            }
            out["refused"] = refused
    for fmt in out["formats"].values():
        for s in PII_SPLITS:
            a, n = fmt[s]
            fmt[s] = {"masked": a, "of": n}
    core = [f for f in out["formats"] if f.startswith(("cn_id", "bank_card", "amex", "hk_id", "tw_id"))]
    out["id_and_card"] = {
        s: round(
            sum(out["formats"][f][s]["masked"] for f in core)
            / max(1, sum(out["formats"][f][s]["of"] for f in core)),
            4,
        )
        for s in PII_SPLITS
    }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["load_average"] = {"start": load_start, "end": load_avg()}
    return out


# -- poisoning --------------------------------------------------------------------------------


def rates(items: list[dict[str, Any]], refused: list[bool]) -> dict[str, Any]:
    """Refused attempts and refused ordinary messages, per half."""
    out: dict[str, Any] = {}
    for split in SPLITS:
        att = [r for i, r in zip(items, refused, strict=True) if i["split"] == split and i["attack"]]
        ordi = [r for i, r in zip(items, refused, strict=True) if i["split"] == split and not i["attack"]]
        out[split] = {
            "attempts_refused": round(sum(att) / max(1, len(att)), 4),
            "attempts": len(att),
            "ordinary_refused": round(sum(ordi) / max(1, len(ordi)), 4),
            "ordinary": len(ordi),
        }
    return out


def by_type(items: list[dict[str, Any]], refused: list[bool], split: str) -> dict[str, str]:
    """Refused / total per type of message, in one half."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item, r in zip(items, refused, strict=True):
        if item["split"] == split:
            key = f"{'attack' if item['attack'] else 'ordinary'}:{item['type']}"
            counts[key][0] += int(r)
            counts[key][1] += 1
    return {k: f"{a}/{n}" for k, (a, n) in sorted(counts.items())}


def tune(items: list[dict[str, Any]]) -> None:
    """Print the guard's threshold sweep on the tune half (never the report half)."""
    from mneme.memory import guard

    half = [i for i in items if i["split"] == "tune"]
    verdicts = guard.judge_all([i["text"] for i in half])
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        refused = [v.signal == "shape" or v.score >= t for v in verdicts]
        r = rates(half, refused)["tune"]
        print(
            f"threshold {t:.2f}: attempts refused {r['attempts_refused']:.3f}, ordinary refused {r['ordinary_refused']:.3f}"
        )


def run_poisoning(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Refusals by the guard and through the `save` and `add` doors, per half."""
    from mneme.memory import guard
    from mneme.memory.api import Memory

    t0 = time.perf_counter()
    load_start = load_avg()
    texts = [i["text"] for i in items]
    verdicts = guard.judge_all(texts)
    judged = [v.refused for v in verdicts]
    out: dict[str, Any] = {"threshold": guard.THRESHOLD, "guard": rates(items, judged)}
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home") as mem:
        saved = [mem.save(t, user_id=f"s{k}").operation == "REFUSE" for k, t in enumerate(texts)]
        added = [
            any(c.operation == "REFUSE" for c in mem.add(t, user_id=f"a{k}")) for k, t in enumerate(texts)
        ]
        verbatim = [  # kept as said (a chat app's write): refused whole, or the line replaced
            any(
                c.operation == "REFUSE" or guard.NOT_KEPT in c.text
                for c in mem.add(t, user_id=f"v{k}", infer=False)
            )
            for k, t in enumerate(texts)
        ]
        leaks = 0
        for k, item in enumerate(items):  # a REFUSE row never keeps the refused text
            if saved[k]:
                rows = mem.export(user_id=f"s{k}")["history"]
                leaks += int(any(item["text"][:12] in json.dumps(r, ensure_ascii=False) for r in rows))
    out["save"] = rates(items, saved)
    out["add"] = rates(items, added)
    out["add(infer=False)"] = rates(items, verbatim)
    out["refuse_rows_quoting_the_text"] = leaks
    out["by_type"] = {s: by_type(items, saved, s) for s in SPLITS}
    out["missed_held_out"] = [
        i["id"] for i, r in zip(items, saved, strict=True) if i["split"] == HELD_OUT and i["attack"] and not r
    ]
    out["wrongly_refused_held_out"] = [
        i["id"] for i, r in zip(items, saved, strict=True) if i["split"] == HELD_OUT and not i["attack"] and r
    ]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["load_average"] = {"start": load_start, "end": load_avg()}
    return out


# -- forgetting -------------------------------------------------------------------------------

WORDS = ["QUOKKAZEBRA", "PAPAYAOCELOT", "MANGOTAPIR", "KIWINARWHAL", "LYCHEEIBEX", "GUAVAOKAPI"]
"""Marked words no fresh home holds unless it was told them."""


def on_disk(home: Path, words: list[str]) -> dict[str, int]:
    """Bytes of each word found in the files of a home (UTF-8 and UTF-16)."""
    found = dict.fromkeys(words, 0)
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for word in words:
                found[word] += data.count(word.encode()) + data.count(word.encode("utf-16-le"))
    return found


def run_forgetting(scale: int = 2000) -> dict[str, Any]:
    """Forgotten words on disk after delete and delete_all; the scrub's cost at `scale` memories."""
    from mneme import build_graph
    from mneme.memory.api import Memory

    t0 = time.perf_counter()
    load_start = load_avg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        graph = build_graph(home=home)
        for k, word in enumerate(WORDS[:2]):  # said in conversations: checkpoints, recaps, memories
            graph.invoke(
                {"messages": [{"role": "user", "content": f"请记住我的暗号是 {word}，以后都发顺丰"}]},
                {"configurable": {"thread_id": f"c{k}"}},
                context={"user_id": "carol"},
            )
        with Memory.open(home) as mem:
            mem.save(f"my locker code is {WORDS[2]}", user_id="carol")
            mem.add(f"I keep my spare key with {WORDS[3]}", user_id="carol", infer=False)
            change = mem.save("I like green tea", user_id="carol")
            mem.update(change.id, f"I like green tea from {WORDS[4]}", user_id="carol")
            single = mem.save(f"the alarm code is {WORDS[5]}", user_id="carol", session_id="api-1")
            for i in range(40):
                mem.save(f"dave's fact number {i}: likes jazz record {i}", user_id="dave")
            before = on_disk(home, WORDS)
            t1 = time.perf_counter()
            deleted = mem.delete(single.id or "", user_id="carol")
            out["delete_seconds"] = round(time.perf_counter() - t1, 3)
            out["after_delete"] = on_disk(home, [WORDS[5]])
            out["delete_names_threads"] = deleted.threads
            t1 = time.perf_counter()
            mem.delete_all(user_id="carol")
            out["delete_all_seconds"] = round(time.perf_counter() - t1, 3)
            out["before"] = before
            out["after_delete_all"] = on_disk(home, WORDS)
            out["other_user_intact"] = len(mem.get_all(user_id="dave")) == 40
        del graph
        out["after_close"] = on_disk(home, WORDS)
        out["bytes_found_after_delete_all"] = sum(out["after_close"].values())

        big = Path(tmp) / "big"
        with Memory.open(big) as mem:
            t1 = time.perf_counter()
            for start in range(0, scale, 100):
                mem.add(
                    [
                        f"memory {n}: the user mentioned topic {n % 97} and item {n}"
                        for n in range(start, start + 100)
                    ],
                    user_id="erin",
                    infer=False,
                )
            out["scale"] = {"memories": scale, "fill_seconds": round(time.perf_counter() - t1, 1)}
            target = mem.save(f"the garage code is {WORDS[0]}", user_id="erin")
            size = (big / "chroma" / "chroma.sqlite3").stat().st_size
            t1 = time.perf_counter()
            mem.delete(target.id or "", user_id="erin")
            out["scale"] |= {
                "chroma_sqlite_mb": round(size / 1e6, 1),
                "delete_seconds": round(time.perf_counter() - t1, 3),
                "bytes_found_after_delete": sum(on_disk(big, [WORDS[0]]).values()),
            }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["load_average"] = {"start": load_start, "end": load_avg()}
    return out


def main() -> None:
    """Run the parts asked for and write `benchmarks/results/hostile_input.json`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=["pii", "poisoning", "forgetting"], action="append")
    parser.add_argument("--tune", action="store_true", help="the guard's threshold sweep on the tune half")
    args = parser.parse_args()
    if args.tune:
        tune(load(POISONING))
        return
    parts = args.part or ["pii", "poisoning", "forgetting"]
    path = ROOT / "benchmarks" / "results" / "hostile_input.json"
    result: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    result.pop("machine", None)
    if "pii" in parts:
        result["personal_data"] = run_pii(load(PII))
    if "poisoning" in parts:
        result["poisoning"] = run_poisoning(load(POISONING))
    if "forgetting" in parts:
        result["forgetting"] = run_forgetting()
    print(json.dumps({k: v for k, v in result.items()}, indent=1, ensure_ascii=False)[:6000])
    print("wrote", write_result("hostile_input", result))


if __name__ == "__main__":
    main()
