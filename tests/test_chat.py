"""The chat wrapper (``with_memory``), ``answer_question``, ``mem-pipeline chat`` and the QA slice.

The wrapper is tested with plain Python answer functions (no LLM); the failure path and the
LLM answer with a local scripted HTTP server; the QA slice end to end on real recorded
responses (``cassettes/qa``; re-record as ``tests/test_llm_cassettes.py`` says, with
``--record-mode=rewrite``).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import vcr
from _llm_server import ScriptedLLM

from eval.qa_slice import full_context, token_f1
from eval.qa_slice import main as qa_main
from eval.retrieval import load
from mem_pipeline import (
    ConfigError,
    InvalidInputError,
    LLMError,
    Memory,
    MemoryConfig,
    StoreError,
    answer_question,
    with_memory,
)
from mem_pipeline.chat import used_hits
from mem_pipeline.cli import main as cli_main
from mem_pipeline.llm import LLMClient

ROOT = Path(__file__).resolve().parent.parent
HANDWRITTEN = ROOT / "eval" / "data" / "handwritten_conversations.json"
CASSETTES = ROOT / "cassettes" / "qa"
LLM_URL = os.environ.get("MEM_PIPELINE_TEST_LLM_URL", "http://127.0.0.1:8089/v1")
LLM_MODEL = os.environ.get("MEM_PIPELINE_TEST_LLM_MODEL", "qwen2.5-coder-1.5b-instruct")
LLM_KEY = os.environ.get("MEM_PIPELINE_TEST_LLM_KEY", "test-key")

EXTRACTED = json.dumps(
    {
        "facts": [
            {
                "text": "The user is allergic to peanuts.",
                "category": "health",
                "concepts": ["peanut allergy"],
                "line": 1,
            }
        ]
    }
)


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[ScriptedLLM] = []

    def make(**kw: Any) -> ScriptedLLM:
        servers.append(ScriptedLLM(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


# -- the wrapper, with a plain Python chatbot ---------------------------------------------------
def test_wrapper_hands_over_memory_and_remembers_the_turn(mem: Memory) -> None:
    mem.add("I'm vegetarian and I can't stand mushrooms.", user_id="ana")
    seen: list[tuple[str, str]] = []

    def bot(question: str, context: str) -> str:
        seen.append((question, context))
        return "How about a lentil curry?"

    chat = with_memory(bot, mem, user_id="ana", limit=3)
    reply = chat("I'm training for a marathon. What should I cook tonight?")
    answer, hits = reply.answer, reply.hits
    assert answer == "How about a lentil curry?"
    assert reply.added is not None and reply.added is chat.last_add
    ((question, context),) = seen
    assert question.startswith("I'm training")
    assert context.startswith("<memory-data>") and "vegetarian" in context
    assert any("vegetarian" in h.text for h in hits) and len(hits) <= 3
    # the turn went in, in the same scope: the user's statement became a fact, the answer did not
    assert chat.last_add is not None and chat.last_add.count("ADD") >= 1
    texts = [f.text for f in mem.get_all(user_id="ana")]
    assert any("marathon" in t for t in texts)
    assert not any("lentil" in t for t in texts)
    # and the next call recalls it
    hits2 = chat("what sport am I training for?").hits
    assert any("marathon" in h.text for h in hits2)
    assert mem.get_all(user_id="someone-else") == []


def test_the_next_question_replies_to_the_answer_before_it(mem: Memory, clock: Any) -> None:
    answers = iter(["Ha, a classic! Any particular brand?", "Noted!", "Nice.", "Noted.", "Got it."])
    sent: list[Any] = []
    add = mem.add

    def spy(messages: Any, **kw: Any) -> Any:
        sent.append([(m["role"], m["content"]) for m in messages])
        return add(messages, **kw)

    chat = with_memory(lambda q, c: next(answers), mem, user_id="ana")
    mem.add = spy  # type: ignore[method-assign]
    chat("Fave snack rn is salt n vinegar crisps, could eat a family bag a day.")
    chat("walkers or nothing")
    # the answer before leads the add: the bare reply is read as an answer about the crisps
    assert sent[1] == [
        ("assistant", "Ha, a classic! Any particular brand?"),
        ("user", "walkers or nothing"),
        ("assistant", "Noted!"),
    ]
    (snack,) = [f for f in mem.get_all(user_id="ana", kind="fact") if "crisps" in f.text]
    (brand,) = [t for t in mem.get_all(user_id="ana", kind="turn") if t.text == "walkers or nothing"]
    assert brand.about == snack.id
    clock.advance(days=40)  # an answer long ago is not what a question replies to
    chat("Ive gone off crisps, roasted chickpeas are my thing now.")
    assert sent[2][0] == ("user", "Ive gone off crisps, roasted chickpeas are my thing now.")
    valid = [f.text for f in mem.get_all(user_id="ana")]
    assert "walkers or nothing" not in valid and not any("vinegar" in t for t in valid)
    block = chat("what's my go-to snack?").hits
    assert block and not any("walkers" in h.text for h in block)


def test_wrapper_scope_and_empty_memory(mem: Memory) -> None:
    mem.add("I live in Porto.", user_id="ana", tenant="acme")
    contexts: list[str] = []
    chat = with_memory(lambda q, c: contexts.append(c) or "", mem, user_id="ana")  # other tenant
    answer, hits, added = chat("where do I live?")
    assert answer == "" and hits == [] and added is not None
    assert "Porto" not in contexts[0] and contexts[0].endswith("</memory-data>")
    with pytest.raises(TypeError):
        with_memory(lambda q, c: 42, mem, user_id="ana")("hello there")  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize("background", [False, True])
def test_extraction_failure_still_answers_and_keeps_the_turn_pending(
    scripted: Any, embedder: Any, clock: Any, background: bool
) -> None:
    server = scripted(status=400)  # the LLM endpoint refuses every request
    cfg = MemoryConfig(
        path=":memory:",
        llm="openai",
        llm_base_url=server.url,
        llm_api_key="k",
        llm_model="m",
        llm_max_retries=0,
    )
    with (
        Memory(config=cfg, embedder=embedder, clock=clock) as m,
        with_memory(lambda q, c: "Noted, no peanuts.", m, user_id="u", background=background) as chat,
    ):
        answer, hits, added = chat("I'm allergic to peanuts.")
        assert answer == "Noted, no peanuts." and hits == [] and added is None
        chat.flush()
        assert len(chat.pending_ids) == 1 and chat.last_add is None
        (pending,) = m.pending(user_id="u")
        assert pending["id"] == chat.pending_ids[0]
        assert [(x["role"], x["content"]) for x in pending["messages"]] == [
            ("user", "I'm allergic to peanuts."),
            ("assistant", "Noted, no peanuts."),
        ]
        assert m.get_all(user_id="u", kind="fact") == []  # nothing extracted yet
        # nothing said is lost: the turn itself is stored, and searchable
        assert [f.text for f in m.get_all(user_id="u", kind="turn")] == ["I'm allergic to peanuts."]
    assert len(server.requests) == 1  # a refusal (4xx) is not retried


def test_a_timestamp_per_call(mem: Memory, clock: Any) -> None:
    said = []
    chat = with_memory(lambda q, c: said.append(c) or "ok", mem, user_id="ana")
    chat("I moved to Porto last spring.", timestamp="2025-05-01T09:00:00Z")
    (turn,) = mem.get_all(user_id="ana", kind="turn")
    assert turn.created_at.isoformat() == "2025-05-01T09:00:00+00:00"
    assert chat.last_add is not None and all(
        mem.get(i, user_id="ana").created_at == turn.created_at for i in chat.last_add.ids
    )
    # a recall as of a time before anything was said finds what was said (times only score)
    assert chat("where do I live?", timestamp=datetime(2025, 6, 1, tzinfo=timezone.utc)).hits
    with pytest.raises(InvalidInputError):
        chat("hello?", timestamp="not a time")


def test_as_a_context_manager_it_closes_what_it_opened(store_path: str, embedder: Any) -> None:
    with with_memory(lambda q, c: "ok", user_id="ana", path=store_path, background=True) as chat:
        chat("I'm vegetarian.")
        opened = chat.memory
    with pytest.raises(StoreError):  # closed: its store is released...
        opened.get_all(user_id="ana")
    with Memory(path=store_path, embedder=embedder) as again:  # ...so the path opens again
        assert [f.text for f in again.get_all(user_id="ana", kind="turn")] == ["I'm vegetarian."]
        with with_memory(lambda q, c: "ok", again, user_id="ana") as chat:
            chat("I like tea.")
        assert again.get_all(user_id="ana")  # a Memory passed in stays open: it is the caller's
    with pytest.raises(InvalidInputError, match="not both"):
        with_memory(lambda q, c: "ok", again, user_id="ana", path=store_path)


# -- answer_question on the OpenAI-compatible client ---------------------------------------------
def test_answer_question_sends_plain_text_request(scripted: Any) -> None:
    server = scripted(text_reply="  You are allergic to peanuts.\n")
    llm = LLMClient(model="m", base_url=server.url, api_key="k")
    block = '<memory-data>\n- [2026-03-01 health] "The user is allergic to peanuts."\n</memory-data>'
    out = answer_question("what am I allergic to?", block, llm=llm, today="Sunday 01 March 2026")
    assert out == "You are allergic to peanuts."
    (req,) = server.requests
    assert "response_format" not in req and req["max_tokens"] == 128 and req["temperature"] == 0
    system, user = req["messages"]
    assert system["role"] == "system" and system["content"].count(block) == 1
    assert "Sunday 01 March 2026" in system["content"] and "$" not in system["content"]
    assert user == {"role": "user", "content": "what am I allergic to?"}


def test_answer_question_is_an_answer_fn_as_it_is(
    scripted: Any, mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no functools.partial: the LLM the environment names answers
    server = scripted(text_reply="A lentil curry.")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("MEM_PIPELINE_LLM_MODEL", "m")
    mem.add("I'm vegetarian.", user_id="ana")
    reply = with_memory(answer_question, mem, user_id="ana")("what should I cook?")
    assert reply.answer == "A lentil curry." and reply.hits
    assert server.requests[0]["model"] == "m" and "vegetarian" in server.requests[0]["messages"][0]["content"]
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigError, match="answer_question needs an LLM"):
        answer_question("hi?", "")


def test_answer_question_errors_are_ours(scripted: Any) -> None:
    server = scripted(status=401)
    with pytest.raises(LLMError):
        answer_question("hi?", "", llm=LLMClient(model="m", base_url=server.url, api_key="k"))


# -- mem-pipeline chat ------------------------------------------------------------------------
def test_cli_chat_without_llm_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["chat", "--user", "u", "--path", ":memory:"]) == 2
    assert "needs an LLM" in capsys.readouterr().err


def test_cli_chat_shows_memories_used(
    scripted: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = scripted(text_reply="You are allergic to peanuts.", json_reply=EXTRACTED)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("MEM_PIPELINE_LLM", "openai")  # extraction by the LLM too (opt-in)
    monkeypatch.setattr("sys.stdin", io.StringIO("I'm allergic to peanuts.\nwhat am I allergic to?\n"))
    assert cli_main(["chat", "--user", "u", "--path", ":memory:"]) == 0
    out = capsys.readouterr().out
    first, second = out.split("you> ")[1:3]
    assert "(no memories used)" in first
    assert "memories used (1)" in second and "The user is allergic to peanuts." in second
    assert "bot> You are allergic to peanuts." in second


# -- the QA slice -----------------------------------------------------------------------------
def test_token_f1() -> None:
    assert token_f1("The 7 May 2023.", "7 May 2023") == 1.0
    assert token_f1("I don't know", "Paris") == 0.0
    assert round(token_f1("Paris, France", "Paris"), 3) == 0.667


def test_full_context_keeps_the_newest_turns_within_budget() -> None:
    (conv,) = load(HANDWRITTEN, ["hw-1"])
    text, kept = full_context(conv.turns, 300)
    assert 0 < kept < len(conv.turns)
    assert len(text) // 4 <= 300 + 40  # the budget, plus the delimiters and the note
    assert conv.turns[-1].text in text and conv.turns[0].text not in text
    assert f"the {len(conv.turns) - kept} oldest turns do not fit" in text
    whole, n = full_context(conv.turns, 100_000)
    assert n == len(conv.turns) and "do not fit" not in whole


def test_qa_slice_judge_and_retrieval_only_paths(
    scripted: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = scripted(text_reply="In April.", json_reply='{"correct": true}')
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    args = [str(HANDWRITTEN), "--conversations", "hw-1", "--questions", "2", "--quiet"]
    assert qa_main([*args, "--judge", "--pipelines", "memory", "none", "--out", str(tmp_path / "j")]) == 0
    report = json.loads((tmp_path / "j.json").read_text())
    assert list(report["pipelines"]) == ["memory", "none"]
    assert report["pipelines"]["memory"]["judge_accuracy"] == 1.0
    assert len(server.requests) == 2 * 2 * 2  # 2 questions x 2 pipelines, each answered and judged
    assert "| F1 | judge |" in capsys.readouterr().out
    assert qa_main([*args, "--no-llm", "--out", str(tmp_path / "r")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pipelines"] == {} and report["llm"] is None and report["questions"] == 2
    assert (tmp_path / "r.png").exists() and len(server.requests) == 8


_MEMORY_BLOCK = re.compile(r"<memory-data>.*?</memory-data>", re.S)


def _same_qa_request(r1: Any, r2: Any) -> None:
    """The whole JSON body must match, except the recalled items inside the memory block: the
    cassette tests the report path, and retrieval tuning (tested elsewhere) must not force a
    re-recording. A change to the answer prompt, the transcript or the model still fails."""

    def norm(r: Any) -> Any:
        body = json.loads(r.body)
        for m in body.get("messages", []):
            m["content"] = _MEMORY_BLOCK.sub("<memory-data>...</memory-data>", m["content"])
        return body

    assert norm(r1) == norm(r2)


@pytest.mark.llm
def test_qa_slice_end_to_end_on_cassettes(
    tmp_path: Path, record_mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = CASSETTES / "test_qa_slice_handwritten.yaml"
    if record_mode == "none" and not cassette.exists():
        pytest.fail(f"missing cassette {cassette}: record it with --record-mode=rewrite")
    monkeypatch.setenv("OPENAI_BASE_URL", LLM_URL)
    monkeypatch.setenv("OPENAI_API_KEY", LLM_KEY)
    monkeypatch.setenv("MEM_PIPELINE_LLM_MODEL", LLM_MODEL)
    rec = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode=record_mode,
        filter_headers=["authorization", "api-key", "x-api-key", "cookie", "openai-organization"],
        match_on=["method", "scheme", "host", "port", "path", "qa_body"],
        decode_compressed_response=True,
    )
    rec.register_matcher("qa_body", _same_qa_request)
    out = tmp_path / "qa"
    with rec.use_cassette(cassette.name):
        code = qa_main(
            [
                str(HANDWRITTEN),
                "--conversations",
                "hw-1",
                "--questions",
                "3",
                "--k",
                "1",
                "5",
                "10",
                "--limit",
                "5",
                "--full-tokens",
                "1000",
                "--quiet",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    printed = capsys.readouterr().out
    assert "| **all** | 3 |" in printed and "| memory | 3 |" in printed and "| full | 3 |" in printed
    report = json.loads((tmp_path / "qa.json").read_text())
    assert report["conversations"] == ["hw-1"] and report["questions"] == 3
    assert set(report["retrieval"]["recall"]) == {"R@1", "R@5", "R@10"}
    pipes = report["pipelines"]
    assert list(pipes) == ["memory", "none", "full"]
    for p in pipes.values():
        assert p["n"] == 3 and p["errors"] == 0 and 0.0 <= p["f1"] <= 1.0
        assert p["seconds_p95"] >= p["seconds_p50"] and "judge_accuracy" not in p
    tokens = {name: p["prompt_tokens_mean"] for name, p in pipes.items()}
    assert tokens["none"] < tokens["memory"] < tokens["full"] <= 4096
    for row in report["rows"]:
        assert set(row["answers"]) == {"memory", "none", "full"}
        assert all(isinstance(a["answer"], str) for a in row["answers"].values())
    assert (tmp_path / "qa.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "qa.md").read_text().startswith("### handwritten_conversations.json")


# -- reinforcement on use -----------------------------------------------------------------------
def _hit(text: str) -> Any:
    import uuid

    from mem_pipeline.models import Category
    from mem_pipeline.recall import Hit

    return Hit(
        id=str(uuid.uuid4()),
        text=text,
        concepts=[],
        metadata={},
        score=1.0,
        source="semantic",
        category=Category("other"),
        created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
    )


def test_used_hits_needs_the_answer_to_repeat_what_the_hit_adds() -> None:
    porto = _hit("Actually I moved to Porto last spring.")
    thai = _hit("I really love spicy Thai food.")
    q = "Where do I live now?"
    assert used_hits(q, "You live in Porto.", [porto, thai]) == [porto]  # a name of the hit
    assert used_hits(q, "I don't know where you live.", [porto, thai]) == []  # echo of the question
    assert used_hits("What should I eat?", "Something spicy, maybe Thai food!", [porto, thai]) == [thai]
    assert used_hits("What should I eat?", "Pasta.", [porto, thai]) == []
    assert used_hits(q, "", [porto]) == []


def test_a_recall_strengthens_only_what_the_answer_used(mem: Memory) -> None:
    mem.add("I live in Porto.", user_id="ana")
    mem.add("I really love spicy Thai food.", user_id="ana")
    chat = with_memory(lambda q, c: "You live in Porto, by the sea.", mem, user_id="ana", limit=5)
    reply = chat("Where do I live?")
    by_text = {f.text: f for f in mem.get_all(user_id="ana")}
    porto = by_text["I live in Porto."]
    assert porto.id in [h.id for h in reply.hits] and chat.last_used == [porto.id]
    assert porto.recalls == 1 and by_text["I really love spicy Thai food."].recalls == 0
    # an answer that used nothing strengthens nothing, and use_weight=0 turns it off
    with_memory(lambda q, c: "No idea.", mem, user_id="ana")("Where do I live?")
    with_memory(lambda q, c: "Porto.", mem, user_id="ana", use_weight=0)("Where do I live?")
    assert mem.get(porto.id, user_id="ana").recalls == 1
    with pytest.raises(InvalidInputError):
        with_memory(lambda q, c: "", mem, user_id="ana", use_weight=2)
