"""``Memory.reindex`` / ``mem-pipeline reindex``: lexical vectors built by an older lexical
analysis are rebuilt from the stored index text, per user or for the whole store, resumably."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mem_pipeline import Memory
from mem_pipeline.cli import main
from mem_pipeline.models import Scope
from mem_pipeline.text import lexical
from mem_pipeline.text.lexical import LEXICAL_VERSION, sparse_doc

TURNS = [
    "We adopted a beagle called Biscuit last spring.",
    "My sister Lena lives in Kyoto and teaches piano.",
    "The deploy failed again because the worker timed out.",
]


def _write_as_old_version(m: Memory, user: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Add raw turns the way version 1 of the analysis did (average length 16, no version
    field on the fact)."""
    with monkeypatch.context() as mp:
        mp.setattr(lexical, "_AVG_LEN", 16.0)
        mp.setattr(lexical, "LEXICAL_VERSION", 1)
        ids = []
        for t in TURNS:
            res = m.add([{"role": "user", "content": t, "name": user}], user_id=user, infer=False)
            ids.extend(e.id for e in res.events if e.id)
        m.parts.links.flush()  # the contexts the turns lent each other, written by that version too
    return ids


def _stored(m: Memory, ids: list[str]) -> dict[str, tuple[Any, dict[str, Any]]]:
    recs = m.store.client.retrieve(m.store.facts, ids=ids, with_payload=True, with_vectors=["lexical"])
    out = {}
    for r in recs:
        vec = r.vector if isinstance(r.vector, dict) else {}
        out[str(r.id)] = (vec.get("lexical"), dict(r.payload or {}))
    return out


def _as_pairs(sparse: Any) -> list[tuple[int, float]]:
    return sorted(zip(sparse.indices, (round(v, 5) for v in sparse.values)))


def _current(text: str) -> list[tuple[int, float]]:
    """The lexical vector the current analysis builds for ``text``."""
    idx, vals = sparse_doc(text)
    return sorted(zip(idx, (round(v, 5) for v in vals)))


def test_reindex_rebuilds_old_lexical_vectors_per_user_then_all(open_memory, store_path, monkeypatch) -> None:
    m = open_memory(store_path)
    ids_a = _write_as_old_version(m, "ann", monkeypatch)
    ids_b = _write_as_old_version(m, "bob", monkeypatch)
    before = _stored(m, ids_a + ids_b)
    for vec, payload in before.values():
        assert "lexical_version" in payload and payload["lexical_version"] == 1
        # the old vector really differs from what the current analysis builds
        assert _as_pairs(vec) != _current(payload["index_text"])
    m.close()

    m = open_memory(store_path)  # the upgraded process
    assert m.reindex(user_id="ann", dry_run=True) == len(ids_a)
    assert _stored(m, ids_a) == {k: before[k] for k in ids_a}  # a dry run changes nothing
    assert m.reindex(user_id="ann") == len(ids_a)
    after = _stored(m, ids_a + ids_b)
    for fid in ids_a:
        vec, payload = after[fid]
        assert _as_pairs(vec) == _current(payload["index_text"])
        assert payload["lexical_version"] == LEXICAL_VERSION
        assert payload["index_text"] == before[fid][1]["index_text"]  # the text is kept
    for fid in ids_b:  # another user's facts are untouched by a scoped reindex
        assert after[fid] == before[fid]
    assert m.reindex(user_id="ann") == 0  # nothing left for that user
    assert m.reindex(dry_run=True) == len(ids_b)
    assert m.reindex() == len(ids_b)  # the whole store
    assert m.reindex() == 0
    hits = m.search("beagle Biscuit", user_id="bob", limit=1)
    assert hits.hits and "Biscuit" in hits.hits[0].text and hits.hits[0].parts.lexical > 0


def test_new_facts_need_no_reindex(mem) -> None:
    for t in TURNS:
        mem.add([{"role": "user", "content": t, "name": "ann"}], user_id="ann", infer=False)
    assert mem.reindex(dry_run=True) == 0


def test_reindex_drops_a_vector_the_analysis_no_longer_builds(mem) -> None:
    """A text the current analysis finds no content words in keeps no lexical vector."""
    from qdrant_client import models

    res = mem.add([{"role": "user", "content": "Yes, and you?"}], user_id="ann", infer=False)
    fid = next(e.id for e in res.events if e.id)
    assert _stored(mem, [fid])[fid][0] is None  # only stopwords: no lexical vector
    # as an older analysis that kept stopwords would have left it
    old = models.SparseVector(indices=[7], values=[1.0])
    mem.store.client.update_vectors(
        mem.store.facts, points=[models.PointVectors(id=fid, vector={"lexical": old})]
    )
    mem.store.set_fact_fields(fid, {"lexical_version": 1})
    assert _stored(mem, [fid])[fid][0] is not None
    assert mem.reindex(user_id="ann") == 1
    vec, payload = _stored(mem, [fid])[fid]
    assert vec is None and payload["lexical_version"] == LEXICAL_VERSION


def test_cli_reindex(store_path, monkeypatch, capsys) -> None:
    from mem_pipeline import LocalEmbedder, MemoryConfig

    m = Memory(config=MemoryConfig(path=store_path), embedder=LocalEmbedder())
    _write_as_old_version(m, "ann", monkeypatch)
    m.close()
    assert main(["reindex", "--path", store_path, "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dry_run": True, "facts": len(TURNS)}
    assert main(["reindex", "--path", store_path, "--user", "ann", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dry_run": False, "facts": len(TURNS)}
    assert main(["reindex", "--path", store_path]) == 0
    assert "updated 0 facts" in capsys.readouterr().out


def test_rebuild_reads_the_text_as_stored_now(mem, monkeypatch) -> None:
    """A writer may extend a fact's index text (turn context) after reindex listed it: the
    vector is built from the text as stored when it is rebuilt, and a fact the writer already
    rebuilt is left alone."""
    ids = _write_as_old_version(mem, "ann", monkeypatch)
    (page,) = list(mem.store.stale_lexical(Scope.of("ann")))
    assert sorted(page) == sorted(ids)
    extended = "ann: We adopted a beagle called Biscuit last spring.\nann: she loves the beach"
    mem.store.set_fact_fields(ids[0], {"index_text": extended})  # still version 1
    mem.store.set_lexical(ids[1], "ann: a brand new text about kayaks", {})  # now current
    assert len(mem.store.rebuild_lexical(page)) == len(ids) - 1
    vec, payload = _stored(mem, [ids[0]])[ids[0]]
    assert payload["index_text"] == extended and _as_pairs(vec) == _current(extended)
    vec, _ = _stored(mem, [ids[1]])[ids[1]]
    assert _as_pairs(vec) == _current("ann: a brand new text about kayaks")


def test_reindex_links_the_replies_of_turns_written_before_reply_links(mem) -> None:
    """Turns an older version wrote have no ``reply_to``: reindex finds the turn each answers
    from the order they were written, per session, exactly as ``add`` does, and only once."""
    turns = [
        ("Jo", "What's your favourite dish from the show?", 1, None),
        ("Nate", "Did you see the game last night?", 2, None),  # another session in between
        ("Nate", "Coconut milk ice cream, no contest.", 1, None),  # answers Jo (session 1)
        ("Jo", "Yes! What a finish.", 2, None),  # answers Nate (session 2)
        ("Jo", "Any plans for the weekend?", None, None),
        ("Nate", "Sleeping in.", None, None),  # no session: the turn before it in the scope
        ("Jo", "Where are you flying to?", 3, "travel"),
        ("Nate", "Lisbon, then Porto.", 3, None),  # no agent: reads every agent's turns
        ("Jo", "Tea or coffee?", 4, None),
        ("Nate", "Coffee, always.", 4, "travel"),  # agent "travel" reads only its own turns
    ]

    def add_all(user: str) -> list[str]:
        ids = []
        for name, text, session, agent in turns:
            meta = {} if session is None else {"session": session}
            msg = {"role": "user", "content": text, "name": name}
            ids += mem.add([msg], user_id=user, agent_id=agent, infer=False, metadata=meta).ids
        return ids

    ids, other = add_all("conv"), add_all("other")

    def replies(user: str, user_ids: list[str]) -> list[str | None]:
        by_id = {f.id: f.reply_to for f in mem.store.get_facts(Scope.of(user), user_ids)}
        return [by_id[i] for i in user_ids]

    written = replies("conv", ids)
    assert written == [None, None, ids[0], ids[1], None, ids[4], None, ids[6], None, None]
    for user_ids in (ids, other):  # as an older version left them
        mem.store.client.set_payload(
            mem.store.facts, payload={"reply_to": None, "turn_links": None}, points=user_ids
        )
    mem.store.briefs.clear()  # written behind the store's back, as by another version
    assert mem.reindex(user_id="conv", dry_run=True) == len(turns)
    assert replies("conv", ids) == [None] * len(turns)
    assert mem.reindex(user_id="conv") == len(turns)
    assert replies("conv", ids) == written
    assert replies("other", other) == [None] * len(turns)  # not asked for
    assert mem.reindex(user_id="conv") == 0  # done once
    assert mem.reindex() == len(turns)  # everyone: the other user's turns
    o = other
    assert replies("other", o) == [None, None, o[0], o[1], None, o[4], None, o[6], None, None]
