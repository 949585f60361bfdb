"""The concept-link layer: normalisation, links, expansion with provenance, feedback, hubs."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from _checks import _rows

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline import links as links_module
from mem_pipeline.concepts import LinkStats, expand, link_strength, pair_deltas, query_grams
from mem_pipeline.models import Scope
from mem_pipeline.store import PICKED

NOTES = [
    ("The deploy timed out after the release.", ["Timeout", "deploy"]),
    ("Retried the request and it went through.", ["timeouts", "Retry"]),
    ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
]
REPEAT = ("The upload timed out again; one retry fixed it.", ["timeout", "retry"])


def _store_notes(m: Memory, user: str = "dev", notes=NOTES) -> dict[str, str]:
    ids = {}
    for text, concepts in notes:
        (ids[text],) = m.add(text, user_id=user, infer=False, concepts=concepts).ids
    return ids


def test_link_strength_serves_small_and_large_stores() -> None:
    # five-fact store: timeout in 3 facts, retry in 3, together in 2 -> a real link
    assert link_strength(LinkStats(n_ab=2, n_a=3, n_b=3)) == pytest.approx(2 / 3)
    # plain PPMI would be log(p_ab / (p_a p_b)) = log((2/5) / (3/5 * 3/5)) ~ 0.11: near zero
    # 50,000-fact store: a hub in 2,000 facts that meets x once -> far under the 0.2 floor
    assert link_strength(LinkStats(n_ab=1, n_a=2000, n_b=1)) < 0.03
    # decay halves a link per half-life; feedback adds, never below zero
    assert link_strength(LinkStats(2, 3, 3, age_days=180)) == pytest.approx(1 / 3)
    assert link_strength(LinkStats(0, 3, 3, feedback=0.5)) == pytest.approx(0.25)
    assert link_strength(LinkStats(2, 3, 3, feedback=-1.0)) < 0.2  # under the floor
    assert link_strength(LinkStats(1, 3, 3, feedback=-1.0)) == 0.0


def test_expand_limits_hops_fanout_and_total() -> None:
    table = {
        "a": [("b", 0.9), ("c", 0.8), ("d", 0.7), ("e", 0.6)],
        "b": [("f", 0.5)],
        "f": [("g", 0.9)],
        "c": [],
        "d": [],
    }
    out = expand(
        {"a": 1.0}, lambda cs: {c: table.get(c, []) for c in cs}, max_hops=2, fanout=3, max_expanded=8
    )
    assert set(out) == {"b", "c", "d", "f"}  # e cut by fan-out, g by the hop limit
    assert out["f"].path == ["a", "b", "f"] and out["f"].weights == [0.9, 0.5]
    assert out["f"].weight == pytest.approx(0.45)
    assert len(expand({"a": 1.0}, lambda cs: {c: table.get(c, []) for c in cs}, max_expanded=2)) == 2


def test_pair_deltas() -> None:
    pairs, concepts = pair_deltas(["a", "b"], ["a", "c"])
    assert pairs == {("a", "c"): 1, ("a", "b"): -1}
    assert concepts == {"c": 1, "b": -1}


def test_query_grams_normalise() -> None:
    assert "timeout" in query_grams("Why do my Timeouts happen?")
    assert "timed out" in query_grams("the job timed out")


def test_timeout_retry_backoff_scenario_across_processes(tmp_path, embedder, clock) -> None:
    path = str(tmp_path / "s")
    m = Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock)
    ids = _store_notes(m)
    backoff = ids[NOTES[2][0]]
    # seen once, the timeout-retry pair is not followed yet
    r = m.search("timeout", user_id="dev", limit=1)
    assert r.query_concepts == {"timeout": 1.0}
    assert "retry" not in r.expanded_concepts
    assert backoff not in [h.id for h in r.hits]
    # the pairing repeats: now a read for "timeout" reaches the backoff note through "retry"
    m.add(REPEAT[0], user_id="dev", infer=False, concepts=REPEAT[1])
    r = m.search("timeout", user_id="dev", limit=1)
    assert "retry" in r.expanded_concepts
    hit = next(h for h in r.associations if h.id == backoff)
    assert hit.source == "association"
    assert hit.via is not None and hit.via.query_concept == "timeout"
    assert hit.via.path == ["timeout", "retry"] and hit.via.weights[0] > 0.2
    assert r.hits and all(h.source != "association" for h in r.hits)  # never in a hit's place
    assert "backoff" not in r.expanded_concepts
    # "timed out" finds the concept "timeout" by name embedding
    assert "timeout" in m.search("it timed out", user_id="dev").query_concepts
    # ... only as a fallback: a query that names a concept exactly embeds no n-grams
    found, rest = m.parts.links.query_terms(Scope.of("dev"), "a timeout, then it timed out")
    assert found == {"timeout": 1.0} and rest == []
    # feedback: the backoff note helped -> backoff becomes a neighbour of timeout
    assert m.feedback([backoff], True, user_id="dev", query="timeout")["links"] >= 1
    m.close()
    m = Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock)  # a new process
    r = m.search("timeout", user_id="dev", limit=1)
    assert r.expanded_concepts.get("backoff", 0) > 0
    assert m.get(backoff, user_id="dev").valence == pytest.approx(0.2)
    # harmful feedback weakens it again, never below zero
    for _ in range(4):
        m.feedback([backoff], False, user_id="dev", query="timeout")
    r = m.search("timeout", user_id="dev", limit=1)
    assert "backoff" not in r.expanded_concepts
    m.close()


def test_a_picked_concept_earns_its_name_vector_once_two_turns_carry_it(tmp_path, embedder, clock) -> None:
    """Name vectors serve the rare fallback match of a query's words. A concept chosen by an
    extractor or the caller is embedded in the background at once; one the rules picked from
    a raw turn's words (two in three of LoCoMo's are said once) once a second turn carries it,
    or when a fallback match of that user needs every name."""
    path = str(tmp_path / "s")
    picked = ["Rowing on the canal at dawn again.", "No rowing on the canal today, it froze."]
    scope = Scope.of("dev")
    with Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock) as m:
        _store_notes(m)  # the caller's concepts
        m.add(picked[0], user_id="dev", infer=False)
    with Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock) as m:
        waiting = {p["name"] for _, p in m.store.unembedded_concepts(scope)}
        assert waiting == {"rowing", "canal", "dawn"}  # the chosen ones were embedded on close
        assert m.store.unembedded_concepts(scope, picked_at=2) == []  # each picked once: none due
        m.add(picked[1], user_id="dev", infer=False)  # "canal" and "rowing" said twice now
    with Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock) as m:
        assert {p["name"] for _, p in m.store.unembedded_concepts(scope)} == {"dawn", "froze"}
        # a fallback match embeds the user's names still waiting: "timed out" finds "timeout"
        assert "timeout" in m.search("it timed out", user_id="dev").query_concepts
        assert m.store.unembedded_concepts(scope) == []
        # a picked name chosen later (by the caller here) is due its vector at once
        m.add("Ice on the canal again.", user_id="ann", infer=False)
        assert {r["name"]: r["vec"] for r in _rows(m, m.store.concepts, "default", "ann")}["ice"] == PICKED
        m.add("Skating on the ice.", user_id="ann", infer=False, concepts=["ice"])
        assert {r["name"]: r["vec"] for r in _rows(m, m.store.concepts, "default", "ann")}["ice"] != PICKED


def test_a_fallback_match_embeds_only_the_latest_picked_names(tmp_path, embedder, clock, monkeypatch) -> None:
    """A large store's first fallback match does not embed every name said once: at most
    ``FALLBACK_PICKED`` of them, the latest said."""
    monkeypatch.setattr(links_module, "FALLBACK_PICKED", 2)
    days = [datetime(2026, 1, d, tzinfo=timezone.utc) for d in (1, 2, 3)]
    with Memory(config=MemoryConfig(path=str(tmp_path / "s")), embedder=embedder, clock=clock) as m:
        for text, day in zip(["Kayaking on Sunday.", "Pottery class tonight.", "Bought a ukulele."], days):
            m.add(text, user_id="ana", infer=False, timestamp=day)
        m.search("any news about my pup?", user_id="ana")  # names no concept: the fallback
        left = [p for _, p in m.store.unembedded_concepts(Scope.of("ana"))]
        assert left and all(p["last_ts"] == days[0].timestamp() for p in left)  # the two latest embedded


def test_links_and_facts_read_whole_stay_in_step_with_writes(tmp_path, embedder, clock, monkeypatch) -> None:
    """A user's followable links and facts' concepts, read whole on the first search, follow the
    writes after it: a later search expands and associates as a new process does, whether that
    process reads them whole or per concept; so do the concept counts (specificity) derived from
    the whole read, and the payload cache it fills."""
    path = str(tmp_path / "s")
    m = Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock)
    ids = _store_notes(m, "dev", [*NOTES, REPEAT])
    assert "retry" in m.search("timeout", user_id="dev").expanded_concepts
    u = m.parts.links._user(Scope.of("dev"))
    assert u.links_whole is True and u.facts_whole is True
    # after that read, "deploy" and "backoff" meet twice (their link becomes followable), each
    # on new facts, and a backoff note is deleted
    m.add("The deploy went fine with a backoff.", user_id="dev", infer=False, concepts=["deploy", "backoff"])
    m.add("Another deploy, the backoff again.", user_id="dev", infer=False, concepts=["deploy", "backoff"])
    m.delete(ids[NOTES[2][0]], user_id="dev")
    warm = m.search("deploy", user_id="dev", limit=1)
    assert "backoff" in warm.expanded_concepts
    assert warm.associations and ids[NOTES[2][0]] not in [h.id for h in warm.associations]
    names = sorted({c for _, cs in [*NOTES, REPEAT] for c in cs} | {"deploy", "backoff", "no such"})
    spec = m.parts.links.specificity(Scope.of("dev"), names)
    assert spec["deploy"] < 1.0  # on several facts
    m.close()
    for at_most, whole in ((links_module.WHOLE_LINKS, True), (0, False)):
        monkeypatch.setattr(links_module, "WHOLE_LINKS", at_most)
        monkeypatch.setattr(links_module, "WHOLE_FACTS", at_most)
        fresh = Memory(config=MemoryConfig(path=path), embedder=embedder, clock=clock)
        r = fresh.search("deploy", user_id="dev", limit=1)
        assert r.expanded_concepts == warm.expanded_concepts
        assert [(h.id, h.score) for h in r.associations] == [(h.id, h.score) for h in warm.associations]
        assert [h.id for h in r.hits] == [h.id for h in warm.hits]
        # (a fresh process's lexical scores differ from a warm one's in the eighth digit)
        assert [h.score for h in r.hits] == pytest.approx([h.score for h in warm.hits], rel=1e-6)
        assert fresh.parts.links.specificity(Scope.of("dev"), names) == spec
        u = fresh.parts.links._user(Scope.of("dev"))
        assert u.links_whole is whole and u.facts_whole is whole
        fresh.close()


def test_links_are_scoped_and_follow_deletion(mem) -> None:
    ids = _store_notes(mem, "dev", [*NOTES, REPEAT])
    _store_notes(mem, "other", [("The cron job hit a timeout.", ["timeout", "cron"])] * 1)
    assert "retry" not in mem.search("timeout", user_id="other").expanded_concepts
    assert "cron" not in mem.search("timeout", user_id="dev").expanded_concepts
    assert mem.search("timeout", user_id="dev", tenant="t2").expanded_concepts == {}
    # delete the repeat: the pair falls back to one sighting and is no longer followed
    mem.delete(mem.search("upload timed out", user_id="dev", limit=1).hits[0].id, user_id="dev")
    assert "retry" not in mem.search("timeout", user_id="dev").expanded_concepts
    # forget removes concepts and links of that user only
    mem.forget(user_id="dev")
    counts = mem.store.count_user_points(Scope.of("dev"))
    assert counts == {k: 0 for k in counts}
    assert mem.search("timeout", user_id="other").query_concepts == {"timeout": 1.0}
    assert ids


def test_hub_concept_does_not_leak_fillers(mem) -> None:
    _store_notes(mem, "dev", [*NOTES, REPEAT])
    for i in range(200):
        mem.add(
            f"Status note {i}: the dashboard showed metric {i} as normal.",
            user_id="dev",
            infer=False,
            concepts=["status", f"metric {i}"],
        )
    mem.add(
        "The status page went red during the timeout.",
        user_id="dev",
        infer=False,
        concepts=["status", "timeout"],
    )
    for q in ("timeout", "backoff settings", "deploy"):
        r = mem.search(q, user_id="dev", limit=3)
        assert not any("Status note" in h.text for h in r.hits if h.via is not None), q
        assert "status" not in r.expanded_concepts
    # direct-hit precision unchanged by the layer
    on = mem.search("deploy timed out", user_id="dev", limit=3)
    off = mem.search("deploy timed out", user_id="dev", limit=3, expand=False)
    direct = [h.id for h in on.hits if h.source not in ("association", "concept")]
    assert direct == [h.id for h in off.hits]


def test_expansion_can_be_switched_off(mem) -> None:
    _store_notes(mem, "dev", [*NOTES, REPEAT])
    r = mem.search("timeout", user_id="dev", limit=1, expand=False)
    assert all(h.source != "association" for h in r.hits) and r.expanded_concepts == {}
    assert datetime.now(timezone.utc)  # clock independent
