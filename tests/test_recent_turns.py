"""A session added one turn at a time: each add lends its neighbours' words to the new turn's
lexical entry, reading them from what the add before it kept on an embedded store (the only
writer), and from the store again after any other write."""

from __future__ import annotations

from typing import Any

from mem_pipeline import Memory


def _say(mem: Memory, text: str) -> str:
    res = mem.add(
        [{"role": "user", "content": text, "name": "Ana"}], user_id="u", infer=False, metadata={"session": 1}
    )
    (fid,) = res.ids
    return fid


def _payload(mem: Memory, fid: str) -> dict[str, Any]:
    mem.parts.links.flush()  # the contexts an add lends the turns before it wait for its batch
    (rec,) = mem.store.client.retrieve(mem.store.facts, [fid], with_payload=True)
    return dict(rec.payload or {})


def test_neighbours_come_from_the_last_add_until_something_else_writes(mem: Memory, engine: str) -> None:
    first = _say(mem, "I adopted a greyhound called Biscuit.")
    second = _say(mem, "She sleeps on the sofa all day.")
    assert bool(mem.store._recent) is (engine == "edge")  # a server or local mode keeps nothing
    assert "sofa" in _payload(mem, first)["index_text"]  # the new turn lent its words back
    mem.delete(second, user_id="u")
    third = _say(mem, "We walk along the canal every morning.")
    lent = _payload(mem, third)["index_text"]
    assert "Biscuit" in lent and "sofa" not in lent  # the deleted turn lends nothing
    fourth = _say(mem, "Then she naps again.")
    lent = _payload(mem, fourth)["index_text"]
    assert "canal" in lent and "Biscuit" in lent and "sofa" not in lent


def test_a_view_is_dropped_once_the_store_is_written_by_another_path(mem: Memory, engine: str) -> None:
    _say(mem, "I adopted a greyhound called Biscuit.")
    if engine != "edge":
        return
    (key,) = list(mem.store._recent)
    assert mem.store._kept_recent(*key, 2) is not None
    mem.add("I live in Leeds.", user_id="u")  # a fact written: the facts collection moved on
    assert mem.store._kept_recent(*key, 2) is None and key not in mem.store._recent
