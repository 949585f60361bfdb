"""Crash consistency: a child process adding facts is killed with SIGKILL at random points.

After each kill the store is opened again (the child is dead, so its lock is gone): every fact
whose ``add`` returned (the child prints its id only then) is there exactly once, its history
has its ADD event, concept counts and links match the facts, and a pending turn is still
pending. The rounds are bounded in time (``_BUDGET_S``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from _checks import assert_consistent, concept_counts

from mem_pipeline import ExtractionPendingError, Memory, MemoryConfig

_BUDGET_S = 40.0
_MIN_ROUNDS = 4
_MAX_ROUNDS = 10
USERS = ("ana", "bob")

CHILD = textwrap.dedent(
    """
    import random, sys
    from mem_pipeline import Memory, MemoryConfig
    path, round_no, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    words = ["tea", "hiking", "paris", "cello", "python", "garden", "bees", "coffee", "chess"]
    m = Memory(config=MemoryConfig.from_env(path=path))  # MEM_PIPELINE_ENGINE: the test's engine
    print("ready", flush=True)
    while True:
        user = rng.choice(["ana", "bob"])
        n = rng.randrange(60)  # repeats of earlier facts (this round's or older) reinforce them
        concepts = rng.sample(words, rng.randint(1, 3))
        res = m.add(f"Fact number {n} about my week, in my own words.", user_id=user,
                    infer=False, concepts=concepts)
        for e in res.events:
            print(f"{user} {e.event} {e.id}", flush=True)
    """
)


def _run_child(path: str, round_no: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """Start the child, kill it with SIGKILL after a random number of acknowledged adds (or
    before the first), return the acknowledged (user, event, id) lines."""
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, path, str(round_no), str(rng.randrange(10**9))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    acked = threading.Event()
    want = rng.randint(0, 12)

    def reader() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line.strip())
            if len(lines) - 1 >= want:  # the first line is "ready"
                acked.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        if not acked.wait(timeout=60):
            p.kill()
            p.wait()
            raise AssertionError(f"child made no progress: {lines} {p.stderr.read() if p.stderr else ''}")
        time.sleep(rng.uniform(0.0, 0.25))  # land anywhere inside the next add
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
        t.join(timeout=10)
        if p.stderr is not None:
            p.stderr.close()
    assert p.returncode == -signal.SIGKILL, (p.returncode, lines)
    return [tuple(ln.split(" ", 2)) for ln in lines[1:] if ln.count(" ") == 2]  # type: ignore[misc]


def test_sigkill_during_adds_loses_nothing_acknowledged(store_path, embedder, caplog) -> None:
    rng = random.Random(int(os.environ.get("MEM_PIPELINE_CRASH_SEED", "8")))
    # a pending turn (the LLM endpoint refuses: nothing listens on port 9) must survive the crashes
    cfg = MemoryConfig(
        path=store_path,
        llm="openai",
        llm_base_url="http://127.0.0.1:9/v1",
        llm_api_key="k",
        llm_max_retries=0,
    )
    with Memory(config=cfg, embedder=embedder) as m, pytest.raises(ExtractionPendingError):
        m.add("I'm allergic to peanuts.", user_id="ana")

    acknowledged: dict[str, set[str]] = {u: set() for u in USERS}
    started = time.monotonic()
    rounds = 0
    while rounds < _MAX_ROUNDS and (rounds < _MIN_ROUNDS or time.monotonic() - started < _BUDGET_S):
        for user, event, fid in _run_child(store_path, rounds, rng):
            assert event in ("ADD", "REINFORCE"), event
            acknowledged[user].add(fid)
        rounds += 1
        with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
            for user in USERS:
                facts = {f.id: f for f in m.get_all(user_id=user)}
                missing = acknowledged[user] - set(facts)
                assert not missing, f"round {rounds}: acknowledged facts lost: {missing}"
                assert_consistent(m, "default", user)
            (pending,) = m.pending(user_id="ana")
            assert pending["messages"][0]["content"] == "I'm allergic to peanuts."
    assert sum(map(len, acknowledged.values())) > 0
    repaired = sum("repairing an interrupted" in r.getMessage() for r in caplog.records)
    print(f"{rounds} rounds, {sum(map(len, acknowledged.values()))} facts acknowledged, {repaired} repaired")
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
        assert concept_counts(m, "default", "ana") or concept_counts(m, "default", "bob")
