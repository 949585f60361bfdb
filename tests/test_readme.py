"""Every code block of README.md does what the README says.

The blocks run top to bottom, as a newcomer follows them, in one fresh directory whose
``.venv`` is this test's environment: Python blocks with this interpreter, shell blocks with
bash, offline. A comment before a block says how else to treat it:

- ``<!-- readme-test: syntax-only (why) -->``: cannot run here (PyPI, a paid call, a model
  download); its syntax is checked;
- ``<!-- readme-test: setup (why) -->``: a set-up command; what follows its last ``&&`` runs
  (the install steps need PyPI);
- ``<!-- readme-test: llm (why) -->``: runs with ``OPENAI_BASE_URL`` at a local scripted server;
- ``<!-- readme-test: slow (why) -->``: a measurement; syntax checked, the ``python -m`` modules
  and the repository files it names must exist.

A comment after a block, ``<!-- readme-test: expect "TEXT" -->``, says what its output must
hold. Nothing runs that installs (``pip install``, ``-m venv``): ``.venv`` is this environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _llm_server import ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = re.compile(r"^<!-- readme-test: (\w[\w-]*)(.*?)-->$")
MODES = {"run", "syntax-only", "setup", "llm", "slow"}
PORT = "8077"  # the README's port; the test serves on a free one instead


@dataclass
class Block:
    lang: str
    code: str
    line: int
    mode: str = "run"
    expect: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang}, {self.mode})"


def blocks(text: str | None = None) -> list[Block]:
    """The README's fenced blocks with the markers around them."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    out: list[Block] = []
    mode, i = "run", 0
    while i < len(lines):
        line = lines[i].strip()
        marker = MARKER.match(line)
        if marker:
            kind, arg = marker.group(1), marker.group(2).strip()
            if kind == "expect":
                out[-1].expect.append(json.loads(arg))
            else:
                assert kind in MODES, f"README.md:{i + 1}: unknown marker {kind!r}"
                mode = kind
        elif line.startswith("```") and len(line) > 3:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            out.append(Block(line[3:].strip(), "\n".join(lines[i + 1 : end]) + "\n", i + 1, mode))
            mode, i = "run", end
        elif line.startswith("```"):  # a plain block (a diagram): skipped to its end
            i = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        i += 1
    return out


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _env(tmp: Path) -> dict[str, str]:
    """The environment of a newcomer's shell: no key, no store path, data dirs in ``tmp``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "QDRANT_")) and k not in ("MEM_PIPELINE_LLM", "MEM_PIPELINE_PATH")
    }
    env["XDG_DATA_HOME"] = str(tmp / "xdg-data")
    return env


def _syntax(block: Block) -> None:
    if block.lang == "python":
        compile(block.code, str(block), "exec")
    elif block.lang == "bash":
        p = subprocess.run(["bash", "-n", "-c", block.code], capture_output=True, text=True)
        assert p.returncode == 0, f"{block}: {p.stderr}"
    elif block.lang == "json":
        json.loads(block.code)
    else:
        raise AssertionError(f"{block}: no check for {block.lang!r} blocks")


def _run(block: Block, cwd: Path, env: dict[str, str], code: str) -> str:
    """Run ``code`` of ``block`` in ``cwd``; its stdout (a failure shows both streams)."""
    assert "pip install" not in code and "-m venv" not in code, f"{block} would install"
    if block.lang == "python":
        script = cwd.parent / f"readme_{block.line}.py"
        script.write_text(code, encoding="utf-8")
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-eo", "pipefail", "-c", code]
    p = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):  # a server the block left (its group, ours)
            os.killpg(p.pid, signal.SIGTERM)
    assert p.returncode == 0, f"{block} exited {p.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
    for text in block.expect:
        assert text in out, f"{block} should print {text!r}\n--- stdout\n{out}\n--- stderr\n{err}"
    return out


# -- the tests ----------------------------------------------------------------------------------
def test_every_block_is_checked_and_none_points_outside_the_clone() -> None:
    found = blocks()
    assert {b.lang for b in found} == {"bash", "python", "json"}
    assert sum(b.mode == "run" for b in found) >= 8  # most of the README runs
    text = README.read_text(encoding="utf-8")
    assert not re.search(r"(?<!\.)\.\./", text), "a user's clone has nothing beside it"
    for b in found:
        if b.lang == "bash":  # commands use the clone's .venv, as set up above
            bare = re.findall(r"(?:^|[;&|(]|\$\()\s*(mem-pipeline|python|pytest)\b", b.code, re.M)
            assert not bare, f"{b}: a bare {bare[0]} (use .venv/bin/{bare[0]})"


def test_the_two_setup_commands_and_the_one_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text[text.index("## Set up") : text.index("\n## ", text.index("## Set up") + 1)]
    commands = [b.code.strip() for b in blocks(setup)]
    assert len(commands) == 2 and all(c.startswith("python3 -m venv .venv && ") for c in commands)
    assert commands[0].endswith(".venv/bin/mem-pipeline demo")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (test_cmd,) = re.findall(r"^TEST_CMD='(.*)'$", ci, re.M)
    assert commands[1] == test_cmd


@pytest.mark.parametrize("block", blocks(), ids=str)
def test_every_block_is_valid(block: Block) -> None:
    _syntax(block)
    if block.lang == "json" and "mcpServers" in block.code:
        (server,) = json.loads(block.code)["mcpServers"].values()
        assert server["command"].endswith("/.venv/bin/mem-pipeline") and server["args"] == ["mcp"]
        assert set(server["env"]) <= {"MEM_PIPELINE_USER", "MEM_PIPELINE_TENANT", "MEM_PIPELINE_PATH"}
    if block.mode == "slow":
        for module in re.findall(r"\.venv/bin/python -m ([\w.]+)", block.code):
            assert importlib.util.find_spec(module) is not None, f"{block}: no module {module}"
        for path in re.findall(r"(?<![\w/])((?:eval|tests|mem_pipeline)/[\w./-]+)", block.code):
            assert (ROOT / path).exists(), f"{block}: no {path}"


def test_the_readme_runs_as_written(tmp_path: Path, engine: str) -> None:
    if engine != "edge":
        pytest.skip("the README is followed once, on the default engine")
    home = tmp_path / "clone"
    home.mkdir()
    (home / ".venv").symlink_to(Path(sys.prefix))  # the environment set up as the README says
    assert (home / ".venv" / "bin" / "mem-pipeline").exists()
    env = _env(tmp_path)
    port = _free_port()
    ran = []
    for block in blocks():
        if block.lang == "json" or block.mode in ("syntax-only", "slow"):
            continue
        code = block.code.replace(PORT, port)
        if block.mode == "setup":  # what the set-up command sets up for
            code = code.rsplit("&&", 1)[1].strip()
        if block.mode == "llm":
            server = ScriptedLLM(text_reply="How about a lentil curry?")
            try:
                out = _run(block, home, {**env, "OPENAI_BASE_URL": server.url}, code)
            finally:
                server.close()
            assert "How about a lentil curry?" in out and server.requests, block
        else:
            _run(block, home, env, code)
        ran.append(block.line)
    assert len(ran) >= 9
    assert (home / "memory-store").is_dir()  # the store the README's blocks share
    assert not (tmp_path / "xdg-data").exists()  # nothing wrote to the default store
