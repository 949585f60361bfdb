"""The LLM client's retry and re-ask paths, against a real local HTTP server that injects faults.

The server runs on 127.0.0.1 in a thread, answers a scripted sequence and stops by itself.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mem_pipeline import ExtractionPendingError, LLMRetryError, Memory, MemoryConfig
from mem_pipeline.llm import LLMClient
from mem_pipeline.models import ExtractionOutput


def _completion(content: str | None, *, choices: bool = True) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "fault",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        ]
        if choices
        else [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


GOOD = json.dumps(
    {
        "facts": [
            {
                "lines": [1],
                "text": "The user is allergic to peanuts.",
                "category": "health",
                "concepts": ["peanut allergy"],
            }
        ]
    }
)


class FaultServer:
    """Answers each POST with the next scripted step: an int status, "sleep", or a body dict."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                step = outer.script.pop(0) if outer.script else outer.script_default
                if step == "sleep":
                    time.sleep(1.5)
                    step = _completion(GOOD)
                if isinstance(step, int):
                    self.send_response(step)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "injected fault"}}')
                    return
                data = json.dumps(step).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.script_default: object = 500
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[FaultServer]:
    servers: list[FaultServer] = []

    def make(script: list) -> FaultServer:
        s = FaultServer(script)
        servers.append(s)
        return s

    yield make  # type: ignore[misc]
    for s in servers:
        s.close()


def _client(url: str, **kw: object) -> LLMClient:
    opts: dict = {
        "model": "fault",
        "base_url": url,
        "api_key": "k",
        "timeout_s": 5.0,
        "max_retries": 3,
        "reasks": 2,
        "backoff_s": (0.01, 0.05),
    }
    opts.update(kw)
    return LLMClient(**opts)


def test_rate_limit_and_5xx_are_retried(server) -> None:
    s = server([429, 500, 503, _completion(GOOD)])
    out = _client(s.url).complete(ExtractionOutput, "extract")
    assert out.calls == 4 and out.value.facts[0].category.value == "health"
    assert len(s.requests) == 4
    # llama.cpp-style endpoint: json_object with the schema extension, decided once
    assert s.requests[0]["response_format"]["type"] == "json_object"
    assert "schema" in s.requests[0]["response_format"]


def test_invalid_json_and_empty_choices_are_reasked_with_the_error(server) -> None:
    s = server([_completion('{"facts": [{"text": "x"'), _completion(None, choices=False), _completion(GOOD)])
    out = _client(s.url).complete(ExtractionOutput, "extract")
    assert out.calls == 3 and out.prompt_tokens == 30
    reask = s.requests[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"facts": [{"text": "x"'}
    assert "not valid" in reask[-1]["content"] and "EOF" in reask[-1]["content"]


def test_wrong_schema_exhausts_reasks_with_last_output(server) -> None:
    wrong = json.dumps({"facts": [{"text": "The user likes tea.", "category": "drink"}]})
    s = server([_completion(wrong)] * 3)
    with pytest.raises(LLMRetryError) as err:
        _client(s.url, reasks=2).complete(ExtractionOutput, "extract")
    assert err.value.attempts == 3 and err.value.last_output == wrong


def test_persistent_5xx_raises_our_error_with_attempts(server) -> None:
    s = server([])
    with pytest.raises(LLMRetryError) as err:
        _client(s.url, max_retries=2).complete(ExtractionOutput, "extract")
    assert err.value.attempts == 3 and len(s.requests) == 3


def test_timeout_is_retried(server) -> None:
    s = server(["sleep", _completion(GOOD)])
    out = _client(s.url, timeout_s=0.5).complete(ExtractionOutput, "extract")
    assert out.calls == 2


def test_failed_extraction_goes_to_pending_then_retry(server, embedder, clock) -> None:
    s = server([])  # every call fails
    cfg = MemoryConfig(
        path=":memory:",
        llm="openai",
        llm_base_url=s.url,
        llm_api_key="k",
        llm_model="fault",
        llm_max_retries=1,
        llm_timeout_s=5,
    )
    m = Memory(config=cfg, embedder=embedder, clock=clock)
    m.extractor.llm.backoff_s = (0.01, 0.02)  # type: ignore[attr-defined]
    with pytest.raises(ExtractionPendingError) as err:
        m.add("I'm allergic to peanuts.", user_id="u", metadata={"channel": "chat"})
    # the turn is kept (nothing said is lost), no fact is half-written
    assert [(f.kind, f.text) for f in m.get_all(user_id="u")] == [("turn", "I'm allergic to peanuts.")]
    assert err.value.result is not None and err.value.result.turn_ids
    (pending,) = m.pending(user_id="u")
    assert pending["id"] == err.value.pending_id and "LLMRetryError" in pending["error"]
    assert pending["messages"][0]["content"] == "I'm allergic to peanuts."
    assert m.retry_pending(user_id="u") == []  # still failing: kept, attempts counted
    assert m.pending(user_id="u")[0]["attempts"] == 2
    s.script = [_completion(GOOD)]  # the endpoint recovers
    (res,) = m.retry_pending(user_id="u")
    assert res.count("ADD") == 1 and res.llm_calls == 1
    assert m.pending(user_id="u") == []
    (fact,) = m.get_all(user_id="u", kind="fact")
    assert fact.text == "The user is allergic to peanuts." and fact.metadata == {"channel": "chat"}
    assert fact.origin == "llm"
    (turn,) = m.get_all(user_id="u", kind="turn")  # the retry did not store the turn again
    assert fact.sources == [turn.id]
    m.close()


def test_grounding_rejects_invented_fact_from_the_model(server, embedder, clock) -> None:
    invented = json.dumps(
        {
            "facts": [
                {
                    "lines": [1],
                    "text": "The user lives in sunny Spain.",
                    "category": "biography",
                    "concepts": [],
                },
                {
                    "lines": [1],
                    "text": "The user loves sunny weather.",
                    "category": "preference",
                    "concepts": [],
                },
            ]
        }
    )
    s = server([_completion(invented)])
    cfg = MemoryConfig(path=":memory:", llm="openai", llm_base_url=s.url, llm_api_key="k", llm_model="fault")
    m = Memory(config=cfg, embedder=embedder, clock=clock)
    res = m.add("I love sunny weather. What's it like today?", user_id="u")
    assert [e.event for e in res.events] == ["REJECT", "ADD"]
    assert "spain" in res.rejected[0].reason
    assert [f.text for f in m.get_all(user_id="u", kind="fact")] == ["The user loves sunny weather."]
    m.close()
