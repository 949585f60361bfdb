"""Errors are ours at the boundary: what a newcomer's mistakes look like from Python and from
the command line (one line, exit 2, no traceback; exit 1 for an id that names nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mem_pipeline import (
    ConfigError,
    InvalidInputError,
    Memory,
    MemoryConfig,
    StoreError,
    StoreLockedError,
)
from mem_pipeline.cli import main
from mem_pipeline.write.offline import OfflineExtractor


# -- Python -----------------------------------------------------------------------------------
def test_a_config_error_names_the_variable_and_what_it_allows() -> None:
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_env({"MEM_PIPELINE_ENGINE": "banana", "MEM_PIPELINE_LLM": "yes"})
    msg = str(err.value)
    assert "MEM_PIPELINE_ENGINE" in msg and "'edge' or 'local'" in msg and "'banana'" in msg
    assert "MEM_PIPELINE_LLM" in msg and "'none' or 'openai'" in msg
    assert "pydantic" not in msg and "http" not in msg
    with pytest.raises(ConfigError, match=r"MemoryConfig\.max_add_turns"):
        MemoryConfig(max_add_turns=0)  # the constructor too
    with pytest.raises(ConfigError, match="no setting 'paht'"):
        MemoryConfig(paht="x")  # type: ignore[call-arg]
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_env({"OPENAI_API_KEY": "sk-secret"}, llm_timeout_s=0)
    assert "sk-secret" not in str(err.value)


def test_an_api_key_in_the_environment_alone_does_not_turn_on_llm_extraction(
    embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the decision: LLM extraction is opt-in (MEM_PIPELINE_LLM=openai), so a key exported for
    # something else never turns add into a paid call (nor, offline, into slow pending failures)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: a call would fail
    cfg = MemoryConfig.from_env(path=":memory:")
    assert not cfg.llm_configured and cfg.llm_endpoint_set
    with Memory(config=cfg, embedder=embedder) as m:
        assert isinstance(m.extractor, OfflineExtractor)
        res = m.add("I'm vegetarian.", user_id="ana")
        assert res.extractor == "offline" and res.llm_calls == 0 and res.count("ADD") == 1
    monkeypatch.setenv("MEM_PIPELINE_LLM", "openai")
    assert MemoryConfig.from_env().llm_configured
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigError, match=r"MEM_PIPELINE_LLM=openai .* needs OPENAI_API_KEY"):
        MemoryConfig.from_env()


def test_the_openai_embedder_without_a_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"MEM_PIPELINE_EMBEDDER=openai .* needs OPENAI_API_KEY"):
        Memory(config=MemoryConfig(path=":memory:", embedder="openai"))
    with pytest.raises(ConfigError, match=r"MEM_PIPELINE_EMBEDDING_MODEL .* 'nope'"):
        Memory(config=MemoryConfig(path=":memory:", embedder="openai", embedding_model="nope"))


def test_a_path_that_cannot_hold_a_store_is_a_store_error(tmp_path: Path, embedder) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(StoreError, match="it is a file"):
        Memory(path=afile, embedder=embedder)
    with pytest.raises(StoreError, match="cannot create the store directory"):
        Memory(path=afile / "below", embedder=embedder)


def test_a_second_memory_on_the_same_path_says_so(store_path: str, embedder) -> None:
    first = Memory(path=store_path, embedder=embedder)
    try:
        with pytest.raises(StoreLockedError, match="already open in this process") as err:
            Memory(path=store_path, embedder=embedder)
        assert "close()" in str(err.value) and "with Memory" in str(err.value)
        # another spelling of the same directory is the same store
        with pytest.raises(StoreLockedError, match="in this process"):
            Memory(path=os.path.join(store_path, ".", ""), embedder=embedder)
    finally:
        first.close()
    with Memory(path=store_path, embedder=embedder) as again:  # free once closed
        again.add("I like tea.", user_id="ana")


def test_a_query_is_limited_like_a_message(mem: Memory) -> None:
    limit = mem.config.max_message_chars
    mem.search("tea " * (limit // 4), user_id="ana")  # at the limit: fine
    with pytest.raises(InvalidInputError, match=f"limit is {limit}"):
        mem.search("x" * (limit + 1), user_id="ana")
    with pytest.raises(InvalidInputError, match="limit is"):
        mem.feedback([], True, user_id="ana", query="x" * (limit + 1))


# -- the command line -------------------------------------------------------------------------
def _run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``mem-pipeline`` as a user runs it: a new process, stdout and stderr apart."""
    return subprocess.run(
        [sys.executable, "-m", "mem_pipeline.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def _one_line_error(code: int, out: str, err: str, expected_code: int = 2) -> str:
    assert code == expected_code, (code, out, err)
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_expected_errors_are_one_line_and_exit_2(
    tmp_path: Path, cli_store: str, cli_fast_embedder: None, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["list", "--path", str(afile), "--user", "u"], {}, "it is a file"),
        (["list", "--path", "/proc/nope", "--user", "u"], {}, "cannot create the store directory"),
        (["list", "--path", cli_store, "--user", ""], {}, "user_id must be a non-empty string"),
        (
            ["list", "--path", cli_store, "--user", "u"],
            {"MEM_PIPELINE_ENGINE": "banana"},
            "'edge' or 'local'",
        ),
        (["list", "--path", cli_store, "--user", "u"], {"MEM_PIPELINE_LLM": "openai"}, "OPENAI_API_KEY"),
        (["search", "--path", cli_store, "--user", "u", "x" * 40_000], {}, "limit is 32000"),
        (["search", "--path", cli_store, "--user", "u"], {}, "the following arguments are required: query"),
        (["serch", "--path", cli_store], {}, "invalid choice: 'serch'"),
        (["get", "--path", cli_store, "--user", "u", "0123"], {}, "at least 8"),
        (["chat", "--path", cli_store, "--user", "u"], {}, "needs an LLM"),
    ]
    with pytest.MonkeyPatch.context() as mp:
        for args, env, expected in cases:
            for k, v in env.items():
                mp.setenv(k, v)
            code = main(args)
            for k in env:
                mp.delenv(k)
            line = _one_line_error(code, *capsys.readouterr())
            assert line.startswith("mem-pipeline") and expected in line, (args, line)
            assert "pydantic" not in line


def test_as_a_user_runs_it_no_traceback(tmp_path: Path) -> None:
    """A new process, as from the shell: the errors translated where they enter (the embedder,
    the engine, the path) reach the user as one line, exit 2."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, env, expected in [
        (["list", "--path", str(afile), "--user", "u"], {}, "it is a file"),
        (
            ["list", "--path", str(tmp_path), "--user", "u"],
            {"MEM_PIPELINE_EMBEDDER": "openai"},
            "OPENAI_API_KEY",
        ),
        (["search", "--user", "u"], {}, "(see mem-pipeline search --help)"),
    ]:
        p = _run(*args, env=env)
        line = _one_line_error(p.returncode, p.stdout, p.stderr)
        assert expected in line, line


def test_unknown_ids_exit_1(
    cli_store: str, cli_fast_embedder: None, capsys: pytest.CaptureFixture[str]
) -> None:
    store = cli_store
    assert main(["add", "--path", store, "--user", "ana-ids", "--no-infer", "I like green tea."]) == 0
    capsys.readouterr()
    assert main(["list", "--path", store, "--user", "ana-ids", "--json"]) == 0
    import json

    fid = json.loads(capsys.readouterr().out)["facts"][0]["id"]
    unknown = "01234567-89ab-7def-8123-456789abcdef"
    for argv in (
        ["get", unknown],
        ["update", unknown, "new text"],
        ["delete", unknown],
        ["history", unknown],
        ["feedback", "--query", "tea", unknown],
        ["get", fid],  # another user's fact is unknown to this user
        ["history", fid],
        ["feedback", "--query", "tea", fid],
    ):
        user = "bob-ids" if fid in argv else "ana-ids"
        assert main([argv[0], "--path", store, "--user", user, *argv[1:]]) == 1, argv
        err = capsys.readouterr().err
        assert err.startswith("mem-pipeline: not found:") and err.count("\n") == 1, err
