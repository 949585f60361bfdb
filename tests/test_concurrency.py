"""Threads sharing one Memory: the result equals sequential execution.

``Memory`` serialises writes and reads with one ``RLock``. Here threads add overlapping facts
(the same text from several threads reinforces one fact; concepts overlap so link counts are
read-modify-written) while others search with recall reinforcement on. Nothing may be lost or
duplicated: confirmations, concept and link counts and recall counters all add up.
(Several processes on one embedded store: the second gets ``StoreLockedError``, test_errors.)
"""

from __future__ import annotations

import random
import threading
from typing import Any

from _checks import assert_consistent, concept_counts, link_counts

from mem_pipeline import Memory, MemoryConfig

WORDS = ["tea", "hiking", "paris", "cello", "python", "garden", "bees", "coffee"]
THREADS = 4
OPS = 12


def _ops(seed: int) -> list[tuple[str, str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(OPS):
        n = rng.randrange(10)  # few distinct texts: many threads reinforce the same fact
        out.append(("add", f"Fact {n}: something I care about.", rng.sample(WORDS, rng.randint(1, 3))))
        out.append(("search", f"what do I know about {rng.choice(WORDS)}?", []))
    return out


def _state(m: Memory) -> dict[str, Any]:
    facts = m.get_all(user_id="u")
    return {
        "facts": sorted((f.text, f.confirmations, tuple(sorted(f.concepts))) for f in facts),
        "concepts": concept_counts(m, "default", "u"),
        "links": link_counts(m, "default", "u"),
    }


def test_threads_sharing_one_memory_equal_sequential(embedder, clock) -> None:
    plans = [_ops(seed) for seed in range(THREADS)]
    shared = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock)
    direct_hits = [0] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def worker(i: int) -> None:
        try:
            start.wait()
            for op, text, cs in plans[i]:
                if op == "add":
                    shared.add(text, user_id="u", infer=False, concepts=cs)
                else:
                    r = shared.search(text, user_id="u", limit=3, reinforce=True)
                    direct_hits[i] += sum(h.source in ("semantic", "lexical") for h in r.hits)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors

    seq = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock)
    for plan in plans:
        for op, text, cs in plan:
            if op == "add":
                seq.add(text, user_id="u", infer=False, concepts=cs)
    try:
        # reinforcement merges concepts as a set union, so the order of adds does not matter
        assert _state(shared) == _state(seq)
        assert_consistent(shared, "default", "u")
        # every recall reinforcement counted once: no lost read-modify-write of "recalls"
        assert sum(f.recalls for f in shared.get_all(user_id="u")) == sum(direct_hits)
        assert sum(f.confirmations for f in shared.get_all(user_id="u")) == THREADS * OPS
    finally:
        shared.close()
        seq.close()


def test_stemming_from_several_threads_gives_the_stems_one_thread_gives() -> None:
    """The snowball stemmer keeps its word in the object: threads sharing one corrupted it."""
    import threading

    from mem_pipeline.text.lexical import stem

    raw = stem.__wrapped__  # past the cache, so that every call runs the stemmer
    roots = ("connect", "relat", "happi", "organis", "generous")
    words = [f"{w}{s}" for w in roots for s in ("ing", "ed", "ness", "ation", "s")]
    words = words * 400
    expected = [raw(w) for w in words]
    errors: list[BaseException] = []
    results: dict[int, list[str]] = {}

    def work(k: int) -> None:
        try:
            results[k] = [raw(w) for w in words]
        except BaseException as e:  # noqa: BLE001 - any failure of the stemmer is the finding
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == expected for r in results.values())
