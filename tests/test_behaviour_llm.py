"""The behaviour benchmark's LLM path (``eval.behaviour --cassette``), replayed from its
cassettes (``cassettes/behaviour``) with no key and no network.

Each replay must give the figures of the committed report (``eval/results/behaviour*_llm.json``),
so a change in the pipeline that alters what the LLM path stores or recalls shows up here, and
must send exactly the requests that were recorded: a changed prompt, schema, window or model
name is a request the cassette does not hold. Re-record (then rewrite the reports) as
``eval/README.md`` says:

    OPENAI_BASE_URL=http://127.0.0.1:8089/v1 python -m eval.behaviour \\
        --cassette cassettes/behaviour/heldout.yaml --record --data eval/data/behaviour_heldout
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from eval import behaviour

pytestmark = pytest.mark.llm

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    "heldout": (
        "eval/data/behaviour_heldout",
        "cassettes/behaviour/heldout.yaml",
        "eval/results/behaviour_heldout_llm.json",
    ),
    "main": ("eval/data/behaviour", "cassettes/behaviour/main.yaml", "eval/results/behaviour_llm.json"),
    "heldout2": (
        "eval/data/behaviour_heldout2",
        "cassettes/behaviour/heldout2.yaml",
        "eval/results/behaviour_heldout2_llm.json",
    ),
    "heldout10": (
        "eval/data/behaviour_heldout10",
        "cassettes/behaviour/heldout10.yaml",
        "eval/results/behaviour_heldout10_llm.json",
    ),
    "heldout12": (
        "eval/data/behaviour_heldout12",
        "cassettes/behaviour/heldout12.yaml",
        "eval/results/behaviour_heldout12_llm.json",
    ),
    "heldout13": (
        "eval/data/behaviour_heldout13",
        "cassettes/behaviour/heldout13.yaml",
        "eval/results/behaviour_heldout13_llm.json",
    ),
    "heldout14": (
        "eval/data/behaviour_heldout14",
        "cassettes/behaviour/heldout14.yaml",
        "eval/results/behaviour_heldout14_llm.json",
    ),
    "heldout15": (
        "eval/data/behaviour_heldout15",
        "cassettes/behaviour/heldout15.yaml",
        "eval/results/behaviour_heldout15_llm.json",
    ),
    "heldout16": (
        "eval/data/behaviour_heldout16",
        "cassettes/behaviour/heldout16.yaml",
        "eval/results/behaviour_heldout16_llm.json",
    ),
}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection attempt fails the test (vcrpy answers the LLM requests in-process)."""

    def refuse(*args: Any, **kw: Any) -> None:
        raise AssertionError(f"a replay tried to open a connection: {args!r:.100}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def replay(record_mode: str, no_network: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run ``python -m eval.behaviour --cassette`` in process; (exit code, its JSON report)."""
    if record_mode != "none":
        pytest.skip("these cassettes are recorded by eval.behaviour --record (eval/README.md)")
    monkeypatch.chdir(ROOT)
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MEM_PIPELINE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)

    def _run(data: str, cassette: str, *extra: str) -> tuple[int, dict[str, Any]]:
        out = tmp_path / "report.json"
        out.unlink(missing_ok=True)
        rc = behaviour.main(["--data", data, "--cassette", cassette, "--json", str(out), *extra])
        return rc, json.loads(out.read_text()) if out.exists() else {}

    return _run


@pytest.mark.parametrize("name", list(SETS))
def test_a_replay_gives_the_committed_figures_with_no_live_request(replay, name: str) -> None:  # type: ignore[no-untyped-def]
    data, cassette, report = SETS[name]
    committed = json.loads((ROOT / report).read_text())
    rc, got = replay(data, cassette)
    tape = got["cassette"]
    assert tape["live"] == 0, f"{tape['live']} requests are not in {cassette}: re-record it"
    assert tape["requests"] == tape["interactions"] == tape["played"] == committed["cassette"]["requests"]
    assert rc == 0
    assert got["llm_model"] == committed["llm_model"] == behaviour.CASSETTE_MODEL
    changed = [
        (a["id"], a["stored"], b["stored"])
        for a, b in zip(got["scenarios"], committed["scenarios"])
        if a["stored"] != b["stored"]
    ]
    assert not changed, f"stored facts differ from the committed report: {changed[:3]}"
    assert got["summary"] == committed["summary"]
    assert got["table"] == committed["table"]


def test_a_request_the_cassette_lacks_fails_the_replay(  # type: ignore[no-untyped-def]
    replay, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prompt one character different is a request the cassette does not hold: the replay
    stops with exit code 3 and writes no report."""
    import mem_pipeline.write.extract as extract

    real = extract.render_prompt
    monkeypatch.setattr(extract, "render_prompt", lambda name, **kw: real(name, **kw) + " ")
    data, cassette, _ = SETS["heldout"]
    rc, got = replay(data, cassette, "--kinds", "stale_repeat")
    assert rc == 3 and got == {}
    assert "a request is not in cassettes/behaviour/heldout.yaml" in capsys.readouterr().err


def test_a_subset_leaves_recorded_interactions_unplayed_and_fails(replay) -> None:  # type: ignore[no-untyped-def]
    """Replaying a part of a set against the whole set's cassette is not a full replay."""
    data, cassette, _ = SETS["heldout"]
    rc, got = replay(data, cassette, "--kinds", "stale_repeat")
    assert rc == 3
    assert got["cassette"]["live"] == 0 and got["cassette"]["played"] < got["cassette"]["interactions"]


def test_a_missing_cassette_exits_3(replay, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rc, got = replay(SETS["heldout"][0], str(tmp_path / "none.yaml"))
    assert rc == 3 and got == {}


def test_recording_keeps_exactly_the_requests_of_the_run(replay, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--record on a cassette that answers every request of a part of the set: nothing goes to
    the network, and the recorded interactions that part did not ask for are dropped, so the
    cassette then replays that part exactly."""
    import shutil

    data, cassette, _ = SETS["heldout"]
    part = tmp_path / "part.yaml"
    shutil.copy(ROOT / cassette, part)
    rc, got = replay(data, str(part), "--kinds", "stale_repeat", "--record")
    tape = got["cassette"]
    assert rc == 0 and tape["record"] and tape["live"] == 0 and 0 < tape["played"] < tape["interactions"]
    assert part.read_text().count("- request:") == tape["requests"]
    rc, got = replay(data, str(part), "--kinds", "stale_repeat")
    assert rc == 0 and got["cassette"]["played"] == got["cassette"]["interactions"] == tape["requests"]
