"""A raw turn's dense vector waits for the write-behind (``ConceptLinks.dense``): the turn is
written at once without it, the background thread embeds the waiting turns in one call, and no
read, delete or reopened store can tell the difference from a turn embedded before it was
written."""

from __future__ import annotations

import textwrap
import time

import numpy as np
from _checks import run_python

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.links import DENSE_BACKLOG
from mem_pipeline.models import Scope

TURNS = [
    "My sister adopted a retired greyhound last spring.",
    "We spent the weekend hiking above Chamonix.",
    "Work has been hectic since the merger.",
]
ANA = Scope.of("ana")
LATER = MemoryConfig(path=":memory:", link_write_delay=60)  # nothing written behind unless asked


def _add(m: Memory, texts: list[str], user: str = "ana") -> list[str]:
    ids = []
    for text in texts:
        res = m.add([{"role": "user", "content": text, "name": "Ana"}], user_id=user, infer=False)
        ids.append(str(res.events[0].id))
    return ids


def _dense(m: Memory) -> dict[str, np.ndarray]:
    """Each current turn's stored dense vector, by its text."""
    facts = m.get_all(user_id="ana")
    vecs = m.store.dense_vectors([f.id for f in facts])
    return {f.text: vecs[f.id] for f in facts if f.id in vecs}


def test_a_turn_is_written_at_once_and_its_vector_before_any_search(embedder, clock) -> None:
    with Memory(config=LATER, embedder=embedder, clock=clock) as m:
        _add(m, TURNS)
        assert sorted(f.text for f in m.get_all(user_id="ana")) == sorted(TURNS)  # stored at once
        assert sorted(t for _, t in m.store.without_dense(ANA)) == sorted(f"Ana: {t}" for t in TURNS)
        assert m.store.unfinished()  # the journal entry stays open until the vectors are written
        hits = m.search("Which pet did my sibling get?", user_id="ana", reinforce=False, min_score=0).hits
        assert hits[0].text == TURNS[0] and hits[0].parts.similarity > 0.3  # found by meaning
        assert m.store.without_dense(ANA) == [] and not m.store.unfinished()
        stored = _dense(m)
        direct = embedder.embed_batch([f"Ana: {t}" for t in TURNS])
        for text, vec in zip(TURNS, direct):
            np.testing.assert_allclose(stored[text], vec, atol=1e-6)


def test_the_background_thread_embeds_what_waits(embedder) -> None:
    with Memory(config=MemoryConfig(path=":memory:", link_write_delay=0.05), embedder=embedder) as m:
        _add(m, TURNS)
        deadline = time.monotonic() + 30
        while not m.parts.links.settled() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert m.parts.links.settled()
        assert m.store.without_dense(ANA) == [] and not m.store.unfinished()
        assert len(_dense(m)) == len(TURNS)


def test_past_the_backlog_an_add_embeds_its_own_turns(embedder, clock) -> None:
    texts = [f"Note {i}: the {w} needs watering." for i, w in enumerate(["fern", "basil", "mint"] * 12)]
    with Memory(config=LATER, embedder=embedder, clock=clock) as m:
        _add(m, texts[: DENSE_BACKLOG + 3])
        assert len(m.store.without_dense(ANA)) == DENSE_BACKLOG
    with Memory(config=LATER, embedder=embedder, clock=clock) as m:  # one add of many turns
        many = [{"role": "user", "content": t} for t in texts[: DENSE_BACKLOG + 1]]
        m.add(many, user_id="ana", infer=False)
        assert m.store.without_dense(ANA) == []
        m.add([{"role": "user", "content": t} for t in texts[-2:]], user_id="ana", infer=False)
        assert len(m.store.without_dense(ANA)) == 2


def test_a_remote_embedder_embeds_before_the_write(embedder, clock) -> None:
    class Remote:  # an embedder of another process: its errors must reach the add
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_batch(self, texts):  # type: ignore[no-untyped-def]
            return embedder.embed_batch(texts)

    with Memory(config=LATER, embedder=Remote(), clock=clock) as m:
        _add(m, TURNS)
        assert m.store.without_dense(ANA) == []


def test_deleting_or_updating_a_waiting_turn(embedder, clock) -> None:
    with Memory(config=LATER, embedder=embedder, clock=clock) as m:
        ids = _add(m, TURNS)
        m.delete(ids[0], user_id="ana")
        m.update(ids[1], "We spent the weekend climbing in the Dolomites.", user_id="ana")
        assert m.store.without_dense(ANA) == []
        assert sorted(_dense(m)) == sorted(["We spent the weekend climbing in the Dolomites.", TURNS[2]])


CHILD = textwrap.dedent(
    """
    import os, sys
    from mem_pipeline import Memory, MemoryConfig
    m = Memory(config=MemoryConfig.from_env(path=sys.argv[1], link_write_delay=60))
    for text in sys.argv[2:]:
        m.add([{"role": "user", "content": text, "name": "Ana"}], user_id="ana", infer=False)
    from mem_pipeline.models import Scope
    print(len(m.store.without_dense(Scope.of("ana"))), flush=True)
    os._exit(0)  # dies with the vectors unwritten
    """
)


def test_turns_a_process_left_without_vectors_get_them_on_open(store_path, embedder) -> None:
    assert int(run_python(CHILD, store_path, *TURNS).strip()) == len(TURNS)
    with Memory(config=MemoryConfig(path=store_path), embedder=embedder) as m:
        assert not m.store.unfinished()
        assert m.store.without_dense(ANA) == []
        stored = _dense(m)
        for text, vec in zip(TURNS, embedder.embed_batch([f"Ana: {t}" for t in TURNS])):
            np.testing.assert_allclose(stored[text], vec, atol=1e-6)
