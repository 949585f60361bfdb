"""Seed checks for persistence and scoping, as a user would run them."""

from __future__ import annotations

import json

import pytest
import qdrant_edge as qe

from mem_pipeline import NotFoundError
from mem_pipeline.cli import main
from mem_pipeline.store._edge_types import NO_VECTOR


def test_save_reopen_scope_correct_delete(open_memory, store_path) -> None:
    m = open_memory(store_path)
    res = m.add("My favourite climbing gym is Boulder Barn.", user_id="ana", infer=False)
    (fid,) = res.ids
    m.close()

    m = open_memory(store_path)
    assert m.get(fid, user_id="ana").text == "My favourite climbing gym is Boulder Barn."
    hits = m.search("which climbing gym do I like?", user_id="ana").hits
    assert hits and hits[0].id == fid
    # another user, another tenant: absent, by search and by id
    assert m.search("climbing gym", user_id="bob").hits == []
    assert m.search("climbing gym", user_id="ana", tenant="acme").hits == []
    with pytest.raises(NotFoundError):
        m.get(fid, user_id="bob")
    with pytest.raises(NotFoundError):
        m.get(fid, user_id="ana", tenant="acme")
    with pytest.raises(NotFoundError):
        m.delete(fid, user_id="bob")

    m.update(fid, "My favourite climbing gym is The Arch.", user_id="ana")
    m.close()

    m = open_memory(store_path)
    assert m.get(fid, user_id="ana").text == "My favourite climbing gym is The Arch."
    hist = m.history(fid, user_id="ana")
    assert [e.event for e in hist] == ["ADD", "UPDATE"]
    assert hist[1].old_text == "My favourite climbing gym is Boulder Barn."
    assert hist[1].new_text == "My favourite climbing gym is The Arch."
    assert m.history(fid, user_id="bob") == []
    m.delete(fid, user_id="ana")
    m.close()

    m = open_memory(store_path)
    with pytest.raises(NotFoundError):
        m.get(fid, user_id="ana")
    assert m.search("climbing gym", user_id="ana").hits == []
    assert [e.event for e in m.history(fid, user_id="ana")] == ["ADD", "UPDATE", "DELETE"]


def test_forget_leaves_nothing_of_that_user_only(open_memory, store_path) -> None:
    m = open_memory(store_path)
    m.add("I keep bees on my balcony.", user_id="ana")
    m.add("Actually I keep bees on the roof now.", user_id="ana")
    m.add("I keep bees too.", user_id="bob")
    m.add("I keep bees in the acme office.", user_id="ana", tenant="acme")
    assert m.forget(user_id="ana") == 4  # two facts (one superseded) and the two turns that said them
    m.close()
    m = open_memory(store_path)
    from mem_pipeline.models import Scope

    counts = m.store.count_user_points(Scope.of("ana"))
    assert counts == {name: 0 for name in counts}
    assert m.get_all(user_id="ana", include_invalid=True) == []
    assert len(m.get_all(user_id="bob", kind="fact")) == 1
    assert len(m.get_all(user_id="ana", tenant="acme", kind="fact")) == 1


def test_repeated_add_never_duplicates(mem) -> None:
    for _ in range(3):
        mem.add("I play the cello in an amateur orchestra.", user_id="ana")
    facts = mem.get_all(user_id="ana", kind="fact")
    assert len(facts) == 1
    assert facts[0].confirmations == 3
    (turn,) = mem.get_all(user_id="ana", kind="turn")  # the same turn again is the same turn
    assert facts[0].sources == [turn.id]


def test_agent_and_run_scopes(mem) -> None:
    mem.add("I prefer answers in bullet points.", user_id="ana", agent_id="writer")
    mem.add("I prefer answers in French.", user_id="ana", agent_id="tutor", run_id="r1")
    assert [f.text for f in mem.get_all(user_id="ana", agent_id="writer", kind="fact")] == [
        "I prefer answers in bullet points."
    ]
    assert len(mem.get_all(user_id="ana", agent_id="tutor", run_id="r2")) == 0
    assert len(mem.get_all(user_id="ana", kind="fact")) == 2  # the user sees all their agents' facts
    assert len(mem.get_all(user_id="ana", kind="turn")) == 2


def test_turn_context_same_in_one_call_or_many(embedder, clock, engine) -> None:
    """Turns added in one call lend context exactly as when added one call each (the call
    keeps its own view of the latest turns instead of reading them back per turn)."""
    from mem_pipeline import Memory, MemoryConfig

    turns = [
        ("s1", "I adopted a cat named Miso."),
        ("s1", "She sleeps on the piano all day."),
        ("s1", "The vet said she is healthy."),
        ("s2", "We moved to Lisbon in May."),
        ("s1", "Miso hates the vacuum cleaner."),
        ("s2", "The flat has a small balcony."),
    ]

    def index(batched: bool) -> list[tuple[str, str, int]]:
        with Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock) as m:
            msgs = [{"role": "user", "content": t} for _, t in turns]
            if batched:
                for session in ("s1", "s2"):
                    m.add(
                        [x for x, (s, _) in zip(msgs, turns) if s == session],
                        user_id="u",
                        infer=False,
                        metadata={"session": session},
                    )
            else:
                for session in ("s1", "s2"):
                    for x, (s, _) in zip(msgs, turns):
                        if s == session:
                            m.add([x], user_id="u", infer=False, metadata={"session": session})
            scope = m.get_all(user_id="u")[0].scope
            # the contexts a turn lends are written behind: write what waits, and read under the
            # store's lock (the write-behind thread writes holding it), as a search does
            with m.parts.lock:
                m.parts.links.flush(scope)
                pts = m.store.user_points(m.store.facts, scope)
            return sorted((p["text"], p["index_text"], int(p.get("ctx_after", 0))) for p in pts.values())

    one_by_one, in_one_call = index(False), index(True)
    assert one_by_one == in_one_call
    lent = dict((t, i) for t, i, _ in in_one_call)
    assert "She sleeps on the piano" in lent["The vet said she is healthy."]  # context was lent
    assert "Lisbon" not in lent["The vet said she is healthy."]  # never across sessions


def test_forget_clears_what_this_process_remembers(mem) -> None:
    """After forget, the same process (whose concept caches were warm) recalls nothing of the
    user: no hit, no query concept, no expanded concept; then the user starts afresh."""
    for _ in range(2):
        mem.add("I play the cello with my friend Milo.", user_id="ana", concepts=["cello", "milo"])
        mem.add("Milo teaches chess on Fridays.", user_id="ana", concepts=["milo", "chess"])
    warm = mem.search("what about the cello and chess?", user_id="ana")
    assert warm.hits and warm.query_concepts
    mem.forget(user_id="ana")
    after = mem.search("what about the cello and chess?", user_id="ana")
    assert after.hits == [] and after.query_concepts == {} and after.expanded_concepts == {}
    mem.add("I play the violin.", user_id="ana", concepts=["violin"])
    again = mem.search("what about the cello and violin?", user_id="ana")
    assert [h.text for h in again.hits] == ["I play the violin."]
    assert set(again.query_concepts) == {"violin"}


def test_compact_moves_the_store_to_disk_and_loses_nothing(open_memory, store_path, engine) -> None:
    m = open_memory(store_path)
    said = [
        "I live in Leeds with my partner Sam.",
        "My favourite climbing gym is Boulder Barn.",
        "I'm allergic to peanuts.",
        "We adopted a greyhound called Pepper.",
    ]
    for i, text in enumerate(said):
        m.add(text, user_id="ana" if i % 2 else "bob")
    questions = [("which climbing gym do I like?", "ana"), ("where do I live?", "bob"), ("dog's name", "ana")]
    before = [[h.id for h in m.search(q, user_id=u).hits] for q, u in questions]
    took = m.compact()
    if engine != "edge":
        assert took == {}  # qdrant-client's embedded mode and a server manage their own segments
        return
    assert "mem_pipeline_facts" in took and all(s >= 0 for s in took.values())
    # every payload index is on disk now, every point of a payload-only collection carries the
    # mark that lets the engine rewrite its segments, and reads are what they were
    unmarked = qe.CountRequest(exact=True, filter=qe.Filter(must_not=[qe.HasVectorCondition(NO_VECTOR)]))
    for name, shard in m.store.client._shards.items():
        indexes = shard.info().payload_schema.values()
        assert all(info.params is not None and info.params.on_disk for info in indexes)
        if name in ("mem_pipeline_links", "mem_pipeline_events"):
            assert shard.count(qe.CountRequest(exact=True)) > 0 and shard.count(unmarked) == 0
    assert [[h.id for h in m.search(q, user_id=u).hits] for q, u in questions] == before
    # a write after compaction lands (in memory) beside the compacted segment, and both survive
    res = m.add("I switched to oat milk.", user_id="ana")
    (new,), fresh = res.ids, {res.ids[0], *(t.id for t in res.turns)}
    m.close()
    m = open_memory(store_path)
    again = [[h.id for h in m.search(q, user_id=u).hits if h.id not in fresh] for q, u in questions]
    assert again == before
    assert m.get(new, user_id="ana").text == "I switched to oat milk."
    assert len(m.get_all(user_id="ana", kind="fact")) + len(m.get_all(user_id="bob", kind="fact")) == 5
    assert m.compact()  # again: indexes already on disk are kept, the segments merge
    m.close()


def test_cli_compact(open_memory, store_path, engine, capsys) -> None:
    m = open_memory(store_path)
    (fid,) = m.add("My favourite climbing gym is Boulder Barn.", user_id="ana").ids
    m.close()
    assert main(["compact", "--path", store_path, "--json"]) == 0
    took = json.loads(capsys.readouterr().out)["seconds"]
    assert ("mem_pipeline_facts" in took) == (engine == "edge")
    assert main(["compact", "--path", store_path]) == 0
    assert "compact" in capsys.readouterr().out
    m = open_memory(store_path)
    assert m.get(fid, user_id="ana").text == "My favourite climbing gym is Boulder Barn."
    m.close()
