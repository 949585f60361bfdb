"""`mem-pipeline mcp` driven as a subprocess over stdio with the official SDK's client."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

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
                assoc = [h for h in r["hits"] if h["source"] == "association"]
                assert [h["id"] for h in assoc] == [backoff_id], r["hits"]
                assert assoc[0]["via"]["path"] == ["timeout", "retry"]  # reached through "retry"
                assert "<memory-data>" in r["prompt"] and "Backoff" in r["prompt"]

                fb = await _call(session, "feedback", fact_ids=[backoff_id], helped=True, query="timeout")
                assert fb["facts"] == 1 and fb["links"] >= 1
                r2 = await _call(session, "recall", query="timeout", limit=1)
                assert "backoff" in r2["expanded_concepts"]

                gone = await _call(session, "forget_fact", fact_id=backoff_id)
                assert gone == {"forgotten": backoff_id}
                listed = await _call(session, "list_memories")
                assert backoff_id not in {f["id"] for f in listed["facts"]}
                assert len(listed["facts"]) == 3

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
