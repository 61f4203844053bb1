"""How the LLM extractor calls an OpenAI-compatible provider: JSON schema, JSON mode, cut-off replies.

A scripted HTTP server on a loopback port stands in for the provider, so that LangChain's own
`ChatOpenAI` (and the OpenAI SDK under it) makes real requests; the real llama.cpp server is in
tests/integration/test_real_server.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from mneme.memory.llm_extract import CUT_OFF, ExtractionFailed, LLMExtractor
from mneme.memory.usermodel.taxonomy import taxonomy


class Provider:
    """Replies in order, as `(content, finish_reason)`; records each request body."""

    def __init__(self, refuse_schema: bool) -> None:
        self.refuse_schema = refuse_schema
        self.replies: list[tuple[str, str]] = []
        self.requests: list[dict[str, Any]] = []


def completion(content: str, finish: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@pytest.fixture
def provider() -> Iterator[tuple[Provider, str]]:
    state = Provider(refuse_schema=False)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            kind = (body.get("response_format") or {}).get("type")
            if kind == "json_schema" and state.refuse_schema:
                status, payload = 400, {"error": {"message": "This response_format type is unavailable now"}}
            else:
                content, finish = state.replies.pop(0)
                status, payload = 200, completion(content, finish)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def extractor(url: str) -> LLMExtractor:
    return LLMExtractor(ChatOpenAI(model="m", base_url=url, api_key="sk-test", max_retries=0))  # type: ignore[arg-type]


GOOD = json.dumps({"memories": [{"op": "add", "text": "Lives in Berlin"}]})


def test_json_schema_mode_is_asked_for_and_its_result_used(provider: tuple[Provider, str]) -> None:
    state, url = provider
    state.replies = [(GOOD, "stop")]
    [candidate] = extractor(url).extract(["I live in Berlin"], [])
    assert candidate.text == "Lives in Berlin"
    [request] = state.requests
    assert request["response_format"]["type"] == "json_schema"
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["title"] == "ExtractionResult"
    # the provider's grammar only lets the model name the taxonomy's aspects and domains
    op = schema["$defs"]["MemoryOp"]["properties"]
    assert op["aspect"]["anyOf"][0]["enum"] == list(taxonomy().aspects)
    assert op["domains"]["items"]["enum"] == list(taxonomy().domains)


def test_a_provider_without_json_schema_gets_json_mode(provider: tuple[Provider, str]) -> None:
    state, url = provider
    state.refuse_schema = True
    state.replies = [(GOOD, "stop"), (GOOD, "stop")]
    ex = extractor(url)
    assert [c.text for c in ex.extract(["I live in Berlin"], [])] == ["Lives in Berlin"]
    assert [r["response_format"]["type"] for r in state.requests] == ["json_schema", "json_object"]
    ex.extract(["I live in Berlin"], [])  # remembered: no second refusal
    assert [r["response_format"]["type"] for r in state.requests][2:] == ["json_object"]


@pytest.mark.parametrize("refuse_schema", [False, True])
def test_a_cut_off_reply_is_retried_with_the_reason_then_fails(
    provider: tuple[Provider, str], refuse_schema: bool
) -> None:
    state, url = provider
    state.refuse_schema = refuse_schema
    state.replies = [('{"memories": [{"op": "add", "text": "Lives in', "length")] * 2
    with pytest.raises(ExtractionFailed, match="cut off"):
        extractor(url).extract(["I live in Berlin"], [])
    retry = state.requests[-1]["messages"][-1]["content"]
    assert CUT_OFF in retry
    assert state.replies == []  # two replies, one retry: never a third
    assert len(state.requests) == (3 if refuse_schema else 2)  # + the refused schema request


def test_a_schema_valid_reply_still_gets_mnemes_validation(provider: tuple[Provider, str]) -> None:
    state, url = provider
    bad = json.dumps({"memories": [{"op": "update", "id": 3, "text": "Lives in Rome"}]})  # no memory 3 shown
    state.replies = [(bad, "stop"), (GOOD, "stop")]
    [candidate] = extractor(url).extract(["I live in Berlin"], [])
    assert candidate.text == "Lives in Berlin"
    assert "memory id 3 is not one of the ids shown" in state.requests[1]["messages"][-1]["content"]
