"""`mem-pipeline mcp` driven as a subprocess over stdio with the official SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse, jsonrpc_message_adapter

from mem_pipeline import Memory
from mem_pipeline._mcp_stdio import MAX_LINE_BYTES, encodable, screen
from mem_pipeline.mcp_server import create_server

ROOT = Path(__file__).resolve().parents[1]
NOTES = [
    ("The deploy timed out after the release.", ["timeout", "deploy"]),
    ("Retried the request and it went through.", ["timeout", "retry"]),
    ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
    ("The upload timed out again; one retry fixed it.", ["timeout", "retry"]),
]


def _params(store: Path, *extra: str, user: str = "dev") -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mem_pipeline.cli", "mcp", *extra],
        env={"MEM_PIPELINE_PATH": str(store), "MEM_PIPELINE_USER": user, "MEM_PIPELINE_TENANT": "team"},
        cwd=str(ROOT),
    )


async def _call(session: ClientSession, tool: str, **args: Any) -> Any:
    res = await session.call_tool(tool, args)
    assert not getattr(res, "is_error", False), res
    text = res.content[0].text  # type: ignore[union-attr]
    return json.loads(text)


def test_mcp_remember_recall_association_feedback_forget(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def main() -> None:
        with anyio.fail_after(90):
            async with (
                stdio_client(_params(store)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert set(tools) == {"remember", "recall", "feedback", "list_memories", "forget_fact"}
                for t in tools.values():  # no tool lets the model pick whose memory it touches
                    props = set(t.input_schema.get("properties", {}))
                    assert not props & {"user_id", "user", "tenant"}, (t.name, props)
                    assert t.description and len(t.description) > 60

                ids = []
                for text, concepts in NOTES:
                    out = await _call(session, "remember", text=text, concepts=concepts)
                    assert out["events"][0]["event"] == "ADD"
                    ids.append(out["events"][0]["id"])
                backoff_id = ids[2]

                r = await _call(session, "recall", query="timeout", limit=1)
                assert "timeout" in r["query_concepts"]
                assert len(r["hits"]) == 1 and r["hits"][0]["source"] != "association"
                assoc = [h for h in r["associations"] if h["source"] == "association"]
                assert [h["id"] for h in assoc] == [backoff_id], r["associations"]
                assert assoc[0]["via"]["path"] == ["timeout", "retry"]  # reached through "retry"
                # the block holds the hit and at most two associations, labelled with their path
                assert "<memory-data>" in r["prompt"] and r["prompt"].count(" via ") == 2

                fb = await _call(session, "feedback", fact_ids=[backoff_id], helped=True, query="timeout")
                assert fb["facts"] == 1 and fb["links"] >= 1
                r2 = await _call(session, "recall", query="timeout", limit=1)
                assert "backoff" in r2["expanded_concepts"]

                gone = await _call(session, "forget_fact", fact_id=backoff_id)
                assert gone == {"forgotten": backoff_id}
                listed = await _call(session, "list_memories")
                assert backoff_id not in {f["id"] for f in listed["facts"]}
                assert len(listed["facts"]) == 3
                # named as in Python, the CLI and HTTP: is_valid, times in UTC with a Z
                assert set(listed["facts"][0]) == {"id", "kind", "text", "concepts", "created_at", "is_valid"}
                assert listed["facts"][0]["is_valid"] is True
                assert listed["facts"][0]["created_at"].endswith("Z")
                assert r2["hits"][0]["created_at"].endswith("Z") and r2["hits"][0]["is_valid"]

                bad = await session.call_tool("forget_fact", {"fact_id": backoff_id})
                assert bad.is_error and "NotFoundError" in bad.content[0].text  # type: ignore[union-attr]

            # another user on the same store sees nothing of dev's
            async with (
                stdio_client(_params(store, user="eve")) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert (await _call(session, "list_memories"))["facts"] == []
                assert (await _call(session, "recall", query="timeout"))["hits"] == []
                stolen = await session.call_tool("forget_fact", {"fact_id": ids[0]})
                assert stolen.is_error

    anyio.run(main)


# -- messages the SDK cannot parse: every one gets an error reply, and the session goes on ------

DEEP_LIST = "[" * 100_000 + "]" * 100_000  # 200 KB
DEEP_OBJECT = '{"a":' * 40_000 + "1" + "}" * 40_000  # 240 KB


def _call_line(rid: int, tool: str, arguments: str) -> bytes:
    """A tools/call request, its arguments given as raw JSON text (which json.dumps could not
    produce: a lone surrogate escape, absurd nesting)."""
    head = f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":"{tool}","arguments":'
    return (head + arguments + "}}\n").encode()


BAD_LINES = [  # (what, line, expected id, expected JSON-RPC code)
    ("lone surrogate in recall", _call_line(11, "recall", '{"query":"\\ud800"}'), 11, -32602),
    ("lone surrogate in remember", _call_line(12, "remember", '{"text":"a\\udfffb"}'), 12, -32602),
    ("deeply nested list", _call_line(13, "recall", '{"query":"x","limit":' + DEEP_LIST + "}"), 13, -32602),
    ("deeply nested object", _call_line(14, "recall", '{"query":' + DEEP_OBJECT + "}"), 14, -32602),
    ("not JSON", b"this is not json\n", None, -32700),
    ("not a JSON-RPC message", b'{"id":15,"method":"tools/list"}\n', 15, -32600),
]


class _RawMCP:
    """A raw JSON-RPC exchange with a `mem-pipeline mcp` subprocess: one line out, one line in."""

    def __init__(self, proc: anyio.abc.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._out = BufferedByteReceiveStream(proc.stdout)

    async def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send(line)

    async def receive(self, timeout: float) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            line = await self._out.receive_until(b"\n", 4 * MAX_LINE_BYTES)
        line.decode("utf-8")  # strict: the reply is valid UTF-8
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def request(self, rid: int, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        await self.send(json.dumps(message).encode() + b"\n")
        reply = await self.receive(timeout)
        assert reply.get("id") == rid, reply
        return reply


def test_mcp_unparseable_calls_get_an_error_reply_and_the_session_goes_on(tmp_path: Path) -> None:
    """Before the guard, each of these lines got no reply at all: the SDK's stdio reader turns
    a line it cannot parse into an exception that nothing answers, and the client waits."""
    env = {**os.environ, "MEM_PIPELINE_PATH": str(tmp_path / "store"), "MEM_PIPELINE_USER": "dev"}
    cmd = [sys.executable, "-m", "mem_pipeline.cli", "mcp"]
    stderr = (tmp_path / "stderr.log").open("wb")

    async def main() -> None:
        async with await anyio.open_process(cmd, env=env, cwd=ROOT, stderr=stderr) as proc:
            rpc = _RawMCP(proc)
            client = {"name": "t", "version": "1"}
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
            assert "result" in await rpc.request(1, "initialize", init, timeout=120)  # the start is slow
            await rpc.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            recall = {"name": "recall", "arguments": {"query": "timeout"}}
            for n, (what, line, rid, code) in enumerate(BAD_LINES):
                await rpc.send(line)
                try:
                    reply = await rpc.receive(timeout=5)
                except TimeoutError:
                    pytest.fail(f"{what}: no reply within 5 s")
                assert reply["id"] == rid and reply["error"]["code"] == code, (what, reply)
                assert reply["error"]["message"], what
                ok = await rpc.request(100 + n, "tools/call", recall, timeout=5)  # still serving
                assert not ok["result"]["isError"], (what, ok)
                assert json.loads(ok["result"]["content"][0]["text"])["query"] == "timeout"
            assert proc.stdin is not None
            await proc.stdin.aclose()
            with anyio.fail_after(30):
                assert await proc.wait() == 0

    try:
        anyio.run(main)
    finally:
        stderr.close()
    log = (tmp_path / "stderr.log").read_text("utf-8", "replace")
    assert log.count("refused a message") == len(BAD_LINES), log[-3000:]


@pytest.mark.parametrize(
    "line, rid, code",
    [
        (_call_line(1, "recall", '{"query":"\\ud800"}'), 1, -32602),
        (_call_line(2, "recall", '{"q\\udc00":"x"}'), 2, -32602),  # in a key
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}', None, -32600),  # in the id
        (_call_line(3, "recall", '{"limit":' + "[" * 65 + "]" * 65 + "}"), 3, -32602),  # within json's reach
        (_call_line(4, "recall", '{"limit":' + DEEP_LIST + "}"), 4, -32602),  # beyond it
        (b'{"jsonrpc":"2.0","params":{"a":' + DEEP_LIST.encode() + b'},"method":"x","id":"z"}', "z", -32602),
        (b'{"jsonrpc":"2.0","id":5,"method":' + DEEP_LIST.encode() + b"}", None, -32600),  # not in params
        (_call_line(6, "recall", '{"query":"x"'), 6, -32700),  # broken JSON, id still read
        (_call_line(7, "recall", '{"limit":NaN}'), 7, -32700),
        (_call_line(8, "recall", '{"query":"caf@"}').replace(b"@", b"\xe9"), 8, -32700),  # Latin-1
        (b"[" + _call_line(9, "recall", "{}").strip() + b"]", None, -32600),  # a batch
        (b'{"jsonrpc":"2.0","id":10,"result":' + DEEP_LIST.encode() + b"}", None, -32600),  # not a request
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None, -32600),  # the SDK: a notification
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', None, -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600),
    ],
)
def test_mcp_screen_refuses_what_the_sdk_cannot_parse(line: bytes, rid: Any, code: int) -> None:
    out = screen(line)
    assert out.text is None and out.error is not None
    assert out.error.id == rid and out.error.error.code == code, out.error
    out.error.model_dump_json().encode("utf-8")  # the reply itself is encodable


def test_mcp_screen_passes_what_the_sdk_parses_and_bounds_the_size() -> None:
    for line in [
        _call_line(1, "recall", '{"query":"emoji \\ud83d\\ude00 caf\\u00e9"}'),  # a surrogate pair is fine
        _call_line(2, "recall", '{"limit":' + "[" * 50 + "]" * 50 + "}"),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n',
    ]:
        out = screen(line)
        assert out.error is None and out.text is not None
        jsonrpc_message_adapter.validate_json(out.text, by_name=False)
    assert screen(b"  \n") == (None, None)  # a blank line: nothing to answer
    head = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"x":"' + b"y" * 1000
    big = screen(head, truncated=True)
    assert big.error is not None and (big.error.id, big.error.error.code) == (3, -32600)


def test_mcp_replies_with_lone_surrogates_are_made_encodable() -> None:
    result = {"text": "a\ud800b", "k\udc00": ["\udfff"]}
    msg = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result=result))
    with pytest.raises(ValueError):  # what the SDK's stdio writer would have died on
        msg.message.model_dump_json()
    out = encodable(msg)
    assert out is not None
    text = out.message.model_dump_json(by_alias=True, exclude_unset=True)
    assert json.loads(text)["result"] == {"text": "a\ufffdb", "k\ufffd": ["\ufffd"]}
    ok = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=2, result={"text": "fine"}))
    assert encodable(ok) is ok


def test_mcp_tools_refuse_lone_surrogates_with_a_tool_error(mem: Memory) -> None:
    """In process (where arguments are Python strings, so a lone surrogate can reach a tool)."""
    server = create_server(mem, user_id="dev")

    async def main() -> None:
        async with Client(server) as client:
            for tool, args, name in [
                ("remember", {"text": "a\ud800b"}, "text"),
                ("remember", {"text": "fine", "concepts": ["x\udc00"]}, "a concept"),
                ("recall", {"query": "\ud800"}, "query"),
                ("feedback", {"fact_ids": ["\ud800"], "helped": True, "query": "q"}, "a fact id"),
                ("forget_fact", {"fact_id": "\udfff"}, "fact_id"),
            ]:
                res = await client.call_tool(tool, args)
                assert res.is_error, (tool, res)
                msg = res.content[0].text  # type: ignore[union-attr]
                assert f"{name} is not valid Unicode" in msg, msg
            assert (await client.call_tool("list_memories", {})).is_error is False

    anyio.run(main)
