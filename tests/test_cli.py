from __future__ import annotations

import json

from mem_pipeline.cli import main


def test_cli_round_trip(tmp_path, capsys) -> None:
    path = str(tmp_path / "s")
    assert (
        main(
            [
                "add",
                "--path",
                path,
                "--user",
                "u",
                "--concept",
                "Deploys",
                "--no-infer",
                "The deploy timed out after the release.",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["search", "--path", path, "--user", "u", "--json", "deploy timeout"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["query"] == "deploy timeout"
    (hit,) = out["hits"]
    assert set(hit) >= {"id", "text", "score", "source", "category", "concepts", "metadata"}
    assert hit["concepts"] == ["deploy"] and hit["source"] == "semantic"
    assert main(["history", "--path", path, "--user", "u", "--json", hit["id"]]) == 0
    assert [e["event"] for e in json.loads(capsys.readouterr().out)] == ["ADD"]
    assert main(["list", "--path", path, "--user", "u", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert main(["forget", "--path", path, "--user", "u", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"forgotten_facts": 1}


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    assert main(["search", "--path", str(tmp_path / "s"), "--user", "u", "   "]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mem-pipeline: error:") and "Traceback" not in err


def test_demo_runs_and_keeps_everything_across_restart(tmp_path, capsys) -> None:
    assert main(["demo", "--path", str(tmp_path / "demo"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    events = [e["event"] for s in report["sessions"] for r in s for e in r["events"]]
    assert "REINFORCE" in events and "SUPERSEDE" in events
    assert report["facts_after_restart"] == 7  # six said, one of them corrected (kept as history)
    assert report["turns_after_restart"] == 6  # the greeting-free user turns that said them


def test_cli_feedback_and_concepts_in_json(tmp_path, capsys) -> None:
    path = str(tmp_path / "s")
    for text, concepts in [
        ("The deploy timed out.", ["timeout", "deploy"]),
        ("Retried and it worked.", ["timeout", "retry"]),
        ("Retry with backoff.", ["retry", "backoff"]),
        ("The upload timed out; a retry fixed it.", ["timeout", "retry"]),
    ]:
        args = ["add", "--path", path, "--user", "u", "--no-infer", text]
        for c in concepts:
            args += ["--concept", c]
        assert main(args) == 0
    capsys.readouterr()
    assert main(["search", "--path", path, "--user", "u", "--json", "--limit", "1", "timeout"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["query_concepts"] == {"timeout": 1.0} and "retry" in out["expanded_concepts"]
    assert all(h["source"] != "association" for h in out["hits"])
    assoc = next(h for h in out["associations"] if h["source"] == "association")
    assert assoc["via"]["path"] == ["timeout", "retry"]
    assert main(["feedback", "--path", path, "--user", "u", "--json", "--query", "timeout", assoc["id"]]) == 0
    assert json.loads(capsys.readouterr().out)["facts"] == 1
