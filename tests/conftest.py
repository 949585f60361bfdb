from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
from mem_pipeline import store as store_module

# Tests never use a key or an endpoint from the environment.
for _var in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEM_PIPELINE_LLM",
    "QDRANT_URL",
    "MEM_PIPELINE_PATH",
    "MEM_PIPELINE_ENGINE",
):
    os.environ.pop(_var, None)


@pytest.fixture(autouse=True, params=store_module.ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs once per embedded engine, so the engines cannot drift apart: a store
    this test creates (in process, or in a child process through ``MEM_PIPELINE_ENGINE``)
    uses this engine."""
    name = str(request.param)
    monkeypatch.setattr(store_module, "DEFAULT_ENGINE", name)
    monkeypatch.setenv("MEM_PIPELINE_ENGINE", name)
    return name


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real local embedder, loaded once (it is stateless)."""
    return LocalEmbedder()


class Clock:
    """An injectable clock: tests move time instead of sleeping."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        from datetime import timedelta

        self.now = self.now + timedelta(**kw)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc))


@pytest.fixture
def mem(embedder: LocalEmbedder, clock: Clock) -> Iterator[Memory]:
    m = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock)
    yield m
    m.close()


@pytest.fixture
def store_path(tmp_path: Path) -> str:
    return str(tmp_path / "store")


@pytest.fixture
def open_memory(embedder: LocalEmbedder, clock: Clock):  # type: ignore[no-untyped-def]
    """Open a Memory on a path (closed at the end of the test)."""
    opened: list[Memory] = []

    def _open(path: str, **kw: object) -> Memory:
        m = Memory(config=MemoryConfig(path=path, **kw), embedder=embedder, clock=clock)  # type: ignore[arg-type]
        opened.append(m)
        return m

    yield _open
    for m in opened:
        m.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-mode",
        default="none",
        choices=["none", "once", "new_episodes", "all", "rewrite"],
        help="vcrpy record mode for LLM cassettes ('none' in CI: a missing cassette fails). "
        "Re-record: MEM_PIPELINE_TEST_LLM_URL=... pytest -m llm --record-mode=rewrite",
    )


@pytest.fixture
def record_mode(request: pytest.FixtureRequest) -> str:
    mode = str(request.config.getoption("--record-mode"))
    return "all" if mode == "rewrite" else mode


@pytest.fixture
def cli_fast_embedder(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process CLI runs open a Memory per command: give them the loaded embedder."""
    import mem_pipeline.memory as memory_module

    monkeypatch.setattr(memory_module, "LocalEmbedder", lambda **kw: embedder)


@pytest.fixture
def cli_store(tmp_path_factory: pytest.TempPathFactory, engine: str) -> str:
    """One store per engine shared by the CLI tests (a new store costs seconds to create):
    each test acts for users of its own."""
    return str(tmp_path_factory.getbasetemp() / f"cli-store-{engine}")
