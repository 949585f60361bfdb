"""Load: N threads x mixed add/search/feedback on one on-disk store for ~60 s (``-m soak``).

Not in the default run: ``pytest -m soak -s`` (duration: MEM_PIPELINE_SOAK_S, default 60).
Prints throughput and p95 latency per operation, then verifies the final state: every
acknowledged add is stored once, confirmations add up, history and concept counts consistent.
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections import defaultdict

import pytest
from _checks import assert_consistent

from mem_pipeline import Memory, MemoryConfig

pytestmark = pytest.mark.soak

THREADS = 4
WORDS = ["tea", "hiking", "paris", "cello", "python", "garden", "bees", "coffee", "chess", "dog"]


def test_soak_mixed_load(embedder, store_path) -> None:
    duration = float(os.environ.get("MEM_PIPELINE_SOAK_S", "60"))
    m = Memory(config=MemoryConfig(path=store_path), embedder=embedder)
    lat: dict[str, list[float]] = defaultdict(list)
    adds: dict[str, int] = defaultdict(int)  # text -> acknowledged adds
    errors: list[BaseException] = []
    guard = threading.Lock()
    stop = time.monotonic() + duration

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while time.monotonic() < stop:
                op = rng.choices(["add", "search", "feedback"], weights=[5, 4, 1])[0]
                t0 = time.perf_counter()
                if op == "add":
                    text = f"Note {rng.randrange(300)}: a thing I said about {rng.choice(WORDS)}."
                    m.add(text, user_id=f"u{seed % 2}", infer=False, concepts=rng.sample(WORDS, 2))
                    with guard:
                        adds[f"u{seed % 2}\x1f{text}"] += 1
                elif op == "search":
                    m.search(f"what about {rng.choice(WORDS)}?", user_id=f"u{seed % 2}", limit=3)
                else:
                    r = m.search(
                        f"{rng.choice(WORDS)} again", user_id=f"u{seed % 2}", limit=2, reinforce=False
                    )
                    m.feedback(r, rng.choice([True, False]), user_id=f"u{seed % 2}")
                with guard:
                    lat[op].append(time.perf_counter() - t0)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    assert not errors, errors
    total = sum(len(v) for v in lat.values())
    print(f"\nsoak: {THREADS} threads, {elapsed:.1f} s, {total} ops, {total / elapsed:.1f} ops/s")
    for op, v in sorted(lat.items()):
        p95 = statistics.quantiles(v, n=20)[-1] if len(v) >= 20 else max(v)
        print(f"  {op:<8} n={len(v):<5} mean {statistics.mean(v) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms")
    m.close()
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as again:
        for user in ("u0", "u1"):
            facts = {f.text: f for f in again.get_all(user_id=user)}
            want = {k.split("\x1f", 1)[1]: n for k, n in adds.items() if k.startswith(user + "\x1f")}
            assert set(facts) == set(want)  # nothing lost, nothing extra
            assert {t: f.confirmations for t, f in facts.items()} == want  # no lost reinforcement
            assert_consistent(again, "default", user)
