"""The command line: complete (one fact at a time too), self-explaining (--help of every
command is enough), and scriptable (--json prints only JSON)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import pytest

from mem_pipeline import __version__
from mem_pipeline.cli import build_parser, main


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name ("keys create" for a subcommand)."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = _commands(sub, f"{prefix}{name} ")
                out.update(inner or {f"{prefix}{name}": sub})
    return out


COMMANDS = _commands(build_parser())
pytestmark = pytest.mark.usefixtures("cli_fast_embedder")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """Run a --json command: exit 0, and stdout is exactly one JSON document."""
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# -- self-explaining ----------------------------------------------------------------------------
def test_version_and_a_top_level_help_that_reads_well(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "--version") == (0, f"mem-pipeline {__version__}\n", "")
    code, out, _ = _run(capsys, "--help")
    assert code == 0 and "``" not in out and ":class:" not in out
    for name in {c.split()[0] for c in COMMANDS}:
        assert re.search(rf"^    {re.escape(name)}\b", out, re.M), name  # listed with a summary
    for part in ("examples:", "exit codes:", "ids:", "MEM_PIPELINE_LLM=openai"):
        assert part in out


def test_every_argument_has_help_and_shows_its_default() -> None:
    assert len(COMMANDS) == 21  # 18 commands, and keys create, list, revoke
    for name, parser in COMMANDS.items():
        text = parser.format_help()
        assert parser.description, name
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
            if shown:
                assert f"(default: {action.default})" in " ".join(text.split()), (name, action.dest)


def test_json_only_where_it_means_something() -> None:
    without = {"serve", "mcp"}
    for name, parser in COMMANDS.items():
        has = any("--json" in a.option_strings for a in parser._actions)
        assert has == (name not in without), name


# -- the round trip, one fact at a time -------------------------------------------------------
def test_add_search_get_update_delete_by_short_ids(
    cli_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ["--path", cli_store, "--user", "priya"]
    code, out, _ = _run(capsys, "add", *s, "I'm vegetarian and I run every Sunday morning.")
    assert code == 0
    shown = re.findall(r"^ADD\s+fact\s+(\S+)\s+(.*)$", out, re.M)
    assert [t for _, t in shown] == ["I'm vegetarian.", "I run every Sunday morning."]
    assert "the turn is kept too, as" in out
    veg = shown[0][0]
    assert 8 <= len(veg) < 36  # an abbreviation, as git shows short hashes

    # the id as printed is taken back by every command
    fact = _json(capsys, "get", *s, veg)
    assert fact["text"] == "I'm vegetarian." and fact["is_valid"] is True
    assert fact["id"].startswith(veg) and fact["created_at"].endswith("Z")
    code, out, _ = _run(capsys, "get", *s, veg)
    assert f"id            {fact['id']}" in out and "is_valid      yes" in out
    hits = _json(capsys, "search", *s, "what should I cook tonight?")["hits"]
    assert hits[0]["id"] == fact["id"] and hits[0]["is_valid"] is True
    code, out, _ = _run(capsys, "search", *s, "what should I cook tonight?")
    assert "I'm vegetarian." in out and f"fact {veg}" in out  # the id to act on is shown

    updated = _json(capsys, "update", *s, veg, "I'm vegan.")
    assert updated["id"] == fact["id"] and updated["text"] == "I'm vegan."
    events = _json(capsys, "history", *s, veg)
    assert [e["event"] for e in events] == ["ADD", "UPDATE"] and events[1]["at"].endswith("Z")
    moved = _json(capsys, "feedback", *s, "--query", "cook", veg)
    assert moved["facts"] == 1
    assert _json(capsys, "delete", *s, veg) == {"deleted": fact["id"]}
    code, _, err = _run(capsys, "get", *s, fact["id"])
    assert code == 1 and "not found" in err
    events = _json(capsys, "history", *s, fact["id"])  # a deleted fact's history, by its whole id
    assert events[-1]["event"] == "DELETE"

    listed = _json(capsys, "list", *s, "--kind", "fact")
    assert [f["text"] for f in listed["facts"]] == ["I run every Sunday morning."]
    assert listed["next_cursor"] is None
    page = _json(capsys, "list", *s, "--limit", "1")
    assert len(page["facts"]) == 1 and page["next_cursor"]
    assert _json(capsys, "forget", *s) == {"forgotten_facts": 2}  # the fact and the turn


def test_an_ambiguous_prefix_names_the_candidates(cli_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    s = ["--path", cli_store, "--user", "amb"]
    assert main(["add", *s, "--no-infer", "I like green tea."]) == 0
    assert main(["add", *s, "--no-infer", "I like black coffee."]) == 0
    capsys.readouterr()
    ids = [f["id"] for f in _json(capsys, "list", *s)["facts"]]
    common = next(n for n in range(36) if ids[0][n] != ids[1][n])
    if common >= 8:  # ids made in the same minute share their first characters
        code, _, err = _run(capsys, "get", *s, ids[0][:common])
        assert code == 2 and "ambiguous" in err and ids[0] in err and ids[1] in err
    assert _json(capsys, "get", *s, ids[1][: max(8, common + 1)])["id"] == ids[1]


def test_empty_results_say_so(cli_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    s = ["--path", cli_store, "--user", "nobody"]
    for argv, said in [
        (["list", *s], "no facts or turns stored for user 'nobody'"),
        (["search", *s, "anything"], "nothing recalled for user 'nobody'"),
        (["forget", *s], "nothing to forget"),
        (["prune", *s], "nothing has faded"),
        (["retry-pending", "--path", s[1]], "no pending turns"),
        (["keys", "list", "--path", s[1]], "no API keys"),
    ]:
        code, out, err = _run(capsys, *argv)
        assert code == 0 and said in out, (argv, out, err)
    assert _json(capsys, "list", *s) == {"facts": [], "next_cursor": None}
    assert _json(capsys, "search", *s, "anything")["hits"] == []


def test_cli_errors_are_one_line(cli_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "search", "--path", cli_store, "--user", "u", "   ")
    assert code == 2 and out == "" and err.startswith("mem-pipeline: error:") and err.count("\n") == 1
    code, out, err = _run(capsys, "add", "--path", cli_store, "--user", "u", "x", "--at", "soon")
    assert code == 2 and "not an ISO 8601 time" in err


def test_demo_json_is_only_json_and_its_short_ids_work(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "demo")
    report = _json(capsys, "demo", "--path", path)  # the whole of stdout parses
    events = [e["event"] for s in report["sessions"] for r in s for e in r["events"]]
    assert "REINFORCE" in events and "SUPERSEDE" in events
    assert report["facts_after_restart"] == 7  # six said, one of them corrected (kept as history)
    assert report["turns_after_restart"] == 6  # the greeting-free user turns that said them
    code, out, _ = _run(capsys, "demo", "--path", str(tmp_path / "demo2"))
    assert code == 0
    (short,) = re.findall(r"\(supersedes (\S+)\)", out)
    code, out, err = _run(capsys, "history", "--path", str(tmp_path / "demo2"), "--user", "priya", short)
    assert code == 0 and "SUPERSEDE" in out, err


def test_cli_feedback_and_concepts_in_json(cli_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = cli_store
    for text, concepts in [
        ("The deploy timed out.", ["timeout", "deploy"]),
        ("Retried and it worked.", ["timeout", "retry"]),
        ("Retry with backoff.", ["retry", "backoff"]),
        ("The upload timed out; a retry fixed it.", ["timeout", "retry"]),
    ]:
        args = ["add", "--path", path, "--user", "links", "--no-infer", text]
        for c in concepts:
            args += ["--concept", c]
        assert main(args) == 0
    capsys.readouterr()
    out = _json(capsys, "search", "--path", path, "--user", "links", "--limit", "1", "timeout")
    assert out["query_concepts"] == {"timeout": 1.0} and "retry" in out["expanded_concepts"]
    assert all(h["source"] != "association" for h in out["hits"])
    assoc = next(h for h in out["associations"] if h["source"] == "association")
    assert assoc["via"]["path"] == ["timeout", "retry"]
    _, text, _ = _run(capsys, "search", "--path", path, "--user", "links", "--limit", "1", "timeout")
    assert "reached through concept links" in text and "via timeout > retry" in text
    fb = _json(capsys, "feedback", "--path", path, "--user", "links", "--query", "timeout", assoc["id"])
    assert fb["facts"] == 1
