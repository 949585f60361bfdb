"""The concept layer's write-behind (``MemoryConfig.link_write_delay``): the counts and links an
add changes are written a moment later in one batch, and nothing a caller can observe depends
on that moment. Reads of a user write its waiting deltas first; a process that dies before the
batch leaves a journal entry that the next open completes; ``forget`` drops them; ``close``
writes them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from _checks import assert_consistent, concept_counts, link_counts

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.models import Scope

NOTES = [
    ("The upload timed out again, so I added a retry.", ["timeout", "retry", "upload"]),
    ("Another timeout on the nightly upload; the retry fixed it.", ["timeout", "retry", "upload"]),
    ("I play the cello on Sundays.", ["cello", "music"]),
    ("My cello teacher lives in Porto.", ["cello", "porto", "teacher"]),
]


def _fill(m: Memory, user: str = "ana") -> None:
    for text, concepts in NOTES:
        m.add(text, user_id=user, infer=False, concepts=concepts)


def _raw(m: Memory, user: str) -> dict[str, int]:
    """The user's concept points as they stand in the store, waiting deltas not written."""
    rows = m.store.user_points(m.store.concepts, Scope.of(user))
    return {str(p["name"]): int(p["count"]) for p in rows.values()}


def test_waiting_deltas_are_written_before_any_read(embedder, clock) -> None:
    now = Memory(config=MemoryConfig(path=":memory:", link_write_delay=0), embedder=embedder, clock=clock)
    later = Memory(config=MemoryConfig(path=":memory:", link_write_delay=60), embedder=embedder, clock=clock)
    try:
        _fill(now)
        _fill(later)
        assert _raw(now, "ana")["timeout"] == 2
        assert _raw(later, "ana") == {}  # deferred: nothing written yet, the journal holds it open
        assert later.store.unfinished()
        # a search sees exactly what the synchronous store has
        a = now.search("timeout", user_id="ana", reinforce=False)
        b = later.search("timeout", user_id="ana", reinforce=False)
        assert a.expanded_concepts == b.expanded_concepts
        assert [h.id for h in a.hits] != [] and len(a.hits) == len(b.hits)
        assert _raw(later, "ana") == _raw(now, "ana")
        assert not later.store.unfinished()
        assert link_counts(later, "default", "ana") == link_counts(now, "default", "ana")
        assert (
            now.parts.links.describe(Scope.of("ana"), clock())[0]
            == later.parts.links.describe(Scope.of("ana"), clock())[0]
        )
        assert_consistent(later, "default", "ana")
    finally:
        now.close()
        later.close()


def test_the_background_writer_writes_them_and_clears_the_journal(embedder, clock) -> None:
    m = Memory(config=MemoryConfig(path=":memory:", link_write_delay=0.05), embedder=embedder, clock=clock)
    try:
        _fill(m)
        deadline = time.monotonic() + 10
        while m.store.unfinished() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not m.store.unfinished()
        assert _raw(m, "ana")["cello"] == 2  # written by the background thread, no read asked
        assert_consistent(m, "default", "ana")
    finally:
        m.close()


def test_close_writes_what_waits(store_path, embedder, clock) -> None:
    m = Memory(config=MemoryConfig(path=store_path, link_write_delay=60), embedder=embedder, clock=clock)
    _fill(m)
    m.close()
    m = Memory(config=MemoryConfig(path=store_path, link_write_delay=60), embedder=embedder, clock=clock)
    try:
        assert not m.store.unfinished()
        assert _raw(m, "ana")["timeout"] == 2
        assert_consistent(m, "default", "ana")
    finally:
        m.close()


def test_forget_drops_the_waiting_deltas(store_path, embedder, clock) -> None:
    m = Memory(config=MemoryConfig(path=store_path, link_write_delay=60), embedder=embedder, clock=clock)
    _fill(m, "ana")
    _fill(m, "bob")
    m.forget(user_id="ana")
    m.close()  # writes bob's, must not bring back ana's
    m = Memory(config=MemoryConfig(path=store_path), embedder=embedder, clock=clock)
    try:
        assert set(m.store.count_user_points(Scope.of("ana")).values()) == {0}
        assert concept_counts(m, "default", "bob")["timeout"] == 2
        assert_consistent(m, "default", "bob")
    finally:
        m.close()


CHILD = textwrap.dedent(
    """
    import os, sys
    from mem_pipeline import Memory, MemoryConfig
    m = Memory(config=MemoryConfig.from_env(path=sys.argv[1], link_write_delay=60))
    for i, c in enumerate(["tea", "chess", "tea", "cello"]):
        m.add(f"Note {i} about {c} and the garden.", user_id="ana", infer=False, concepts=[c, "garden"])
    print(len(m.store.unfinished()), flush=True)
    os._exit(0)  # dies with the batch unwritten: no close, no exit handlers
    """
)


def test_a_process_that_dies_before_the_batch_is_completed_on_open(store_path, embedder, caplog) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, store_path],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=True,
    )
    assert int(out.stdout.strip()) >= 1  # the batch's journal entry was open when it died
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
        assert not m.store.unfinished()
        assert concept_counts(m, "default", "ana") == {"tea": 2, "chess": 1, "cello": 1, "garden": 4}
        assert link_counts(m, "default", "ana")[("garden", "tea")] == 2.0
        assert_consistent(m, "default", "ana")
    assert any("repairing an interrupted" in r.getMessage() for r in caplog.records)


def test_close_while_the_writer_embeds_names_is_clean(store_path, embedder, clock, caplog) -> None:
    m = Memory(config=MemoryConfig(path=store_path, link_write_delay=0.01), embedder=embedder, clock=clock)
    for i in range(40):  # 120 new concepts: the background writer embeds their names, unlocked
        m.add(f"Note {i}.", user_id="ana", infer=False, concepts=[f"topic{i}a", f"topic{i}b", f"topic{i}c"])
    time.sleep(0.05)
    m.close()  # the writer stops between chunks; close computes what is left, then the store closes
    assert not any(r.levelname == "ERROR" for r in caplog.records), [r.getMessage() for r in caplog.records]
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder, clock=clock) as m:
        assert not m.store.unfinished()
        assert m.store.unembedded_concepts() == []
        assert len(concept_counts(m, "default", "ana")) == 120
