"""The concept layer's write-behind (``MemoryConfig.link_write_delay``): the counts and links an
add changes are written a moment later in one batch, and nothing a caller can observe depends
on that moment. Reads of a user write its waiting deltas first; a process that dies before the
batch leaves a journal entry that the next open completes; ``forget`` drops them; ``close``
writes them."""

from __future__ import annotations

import textwrap
import time
from typing import Any

from _checks import assert_consistent, concept_counts, link_counts, run_python

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
    assert int(run_python(CHILD, store_path).strip()) >= 1  # the batch's journal entry was open when it died
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
        assert not m.store.unfinished()
        assert concept_counts(m, "default", "ana") == {"tea": 2, "chess": 1, "cello": 1, "garden": 4}
        assert link_counts(m, "default", "ana")[("garden", "tea")] == 2.0
        assert_consistent(m, "default", "ana")
    assert any("repairing an interrupted" in r.getMessage() for r in caplog.records)


def test_settle_does_now_what_the_writer_would_do_next(store_path, embedder, clock) -> None:
    """``settle`` writes every user's waiting batch and the name vectors then due, in the
    caller's thread (``eval.compare_mem0`` bills each add with it)."""
    # a long delay: the background writer never gets to it first
    config = MemoryConfig(path=store_path, link_write_delay=60)
    with Memory(config=config, embedder=embedder, clock=clock) as m:
        for i in range(70):  # 70 chosen concepts: more than a batch of names
            m.add(f"Note {i}.", user_id="ana", infer=False, concepts=[f"topic{i}"])
        assert not m.parts.links.settled()
        m.parts.links.settle()
        assert m.parts.links.settled()
        assert m.store.unembedded_concepts() == []
        assert len(concept_counts(m, "default", "ana")) == 70


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


# -- what else waits with the deltas: history rows and the contexts turns lend their neighbours

SESSION = [
    "I adopted a greyhound called Biscuit.",
    "She sleeps on the sofa all day.",
    "We walk along the canal every morning.",
    "Then she naps again.",
    "My sister Ines lives in Porto.",
    "She visits every Easter.",
]


def _turns(m: Memory, user: str = "ana") -> list[str]:
    ids = []
    for i, text in enumerate(SESSION):
        res = m.add(
            [{"role": "user", "content": text, "name": "Ana"}],
            user_id=user,
            infer=False,
            metadata={"session": 1 + i // 4},
        )
        ids.extend(res.ids)
    return ids


def _contexts(m: Memory, user: str = "ana") -> dict[str, tuple[Any, Any, Any]]:
    """Each stored turn's lexical entry, as the store holds it: text -> (index text, followers
    lent, lexical vector)."""
    recs, _ = m.store.client.scroll(m.store.facts, limit=1000, with_payload=True, with_vectors=["lexical"])
    out = {}
    for r in recs:
        p = r.payload or {}
        if p.get("user_id") == user:
            v = (r.vector or {}).get("lexical")
            out[str(p["text"])] = (p.get("index_text"), p.get("ctx_after"), None if v is None else v.indices)
    return out


def test_turn_contexts_and_history_wait_and_come_out_the_same(embedder, clock) -> None:
    now = Memory(config=MemoryConfig(path=":memory:", link_write_delay=0), embedder=embedder, clock=clock)
    later = Memory(config=MemoryConfig(path=":memory:", link_write_delay=60), embedder=embedder, clock=clock)
    try:
        a, b = _turns(now), _turns(later)
        assert now.parts.links.settled() and not later.parts.links.settled()
        first = _contexts(later)[SESSION[0]]
        assert "sofa" not in first[0] and not first[1]  # what the next turns lend it waits
        assert [e.event for e in later.history(b[0], user_id="ana")] == ["ADD"]  # history reads first
        # a search writes the user's waiting contexts before it reads
        hits = later.search("where does Biscuit sleep", user_id="ana", reinforce=False)
        assert [h.text for h in hits.hits] == [
            h.text for h in now.search("where does Biscuit sleep", user_id="ana", reinforce=False).hits
        ]
        assert _contexts(later) == _contexts(now)
        # more turns wait, then a delete writes them first, and the turn deleted is no one's
        # neighbour after it
        for m, ids in ((now, a), (later, b)):
            m.add("Biscuit loves the canal.", user_id="ana", infer=False, metadata={"session": 1})
            m.delete(ids[3], user_id="ana")
            m.add("One more about Biscuit.", user_id="ana", infer=False, metadata={"session": 1})
        assert _contexts(later) != _contexts(now)  # the last add's contexts wait
        later.parts.links.flush()
        assert later.parts.links.settled()
        assert _contexts(later) == _contexts(now)
        assert not later.store.unfinished()
        assert [e.event for e in later.history(b[3], user_id="ana")] == ["ADD", "DELETE"]
    finally:
        now.close()
        later.close()


def test_forget_drops_waiting_history_and_contexts(store_path, embedder, clock) -> None:
    m = Memory(config=MemoryConfig(path=store_path, link_write_delay=60), embedder=embedder, clock=clock)
    ids = _turns(m, "ana")
    _turns(m, "bob")
    m.forget(user_id="ana")  # nothing of ana's may be written after this, by close or the writer
    m.close()
    m = Memory(config=MemoryConfig(path=store_path), embedder=embedder, clock=clock)
    try:
        assert set(m.store.count_user_points(Scope.of("ana")).values()) == {0}
        assert m.history(ids[0], user_id="ana") == []
        assert len(_contexts(m, "bob")) == len(SESSION)
    finally:
        m.close()


CHILD_TURNS = textwrap.dedent(
    """
    import os, sys
    from mem_pipeline import Memory, MemoryConfig
    m = Memory(config=MemoryConfig.from_env(path=sys.argv[1], link_write_delay=60))
    for i, text in enumerate(sys.argv[2:]):
        m.add([{"role": "user", "content": text, "name": "Ana"}], user_id="ana", infer=False,
              metadata={"session": 1 + i // 4})
    os._exit(0)  # dies with the contexts and history rows unwritten
    """
)


def test_a_process_that_dies_before_the_batch_gets_its_contexts_and_history_on_open(
    store_path, tmp_path, embedder, clock
) -> None:
    run_python(CHILD_TURNS, store_path, *SESSION)
    ref = Memory(config=MemoryConfig(path=str(tmp_path / "ref"), link_write_delay=0), embedder=embedder)
    try:
        _turns(ref)
        with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
            assert not m.store.unfinished()
            assert _contexts(m) == _contexts(ref)  # recovery lent the turns what waited
            for f in m.get_all(user_id="ana"):
                events = m.history(f.id, user_id="ana")
                assert [e.event for e in events] == ["ADD"] and events[0].detail.get("recovered")
            assert_consistent(m, "default", "ana")
    finally:
        ref.close()
