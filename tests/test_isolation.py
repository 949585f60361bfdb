"""Isolation: no read returns or is influenced by another scope's data; forget leaves no trace.

A random multi-tenant, multi-user workload runs on one shared store; each scope's operations
are replayed alone on a fresh store. Every read of a scope in the shared run (search with its
association hits and expanded concepts, get_all, history, feedback) must equal the same read
in its solo run. The two tenants use the same user names and the users share words and
concepts, so any leak through a filter, the concept layer or a link would show.

Dense-only scoring (``use_sparse=False``) makes "not influenced" exact: with the lexical
signal on, Qdrant's IDF statistics are collection-wide, so other scopes' texts change lexical
*scores* (never which facts can be returned). That is documented in the Guarantees.
"""

from __future__ import annotations

import uuid
from typing import Any

from _checks import assert_consistent, user_points
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_pipeline import Memory, MemoryConfig, NotFoundError

SCOPES = [("t1", "ana"), ("t1", "bob"), ("t2", "ana"), ("t2", "bob")]
SENTENCES = [
    ("I go hiking in the Alps with my dog.", ["hiking", "alps", "dog"]),
    ("My dog is afraid of thunder.", ["dog", "thunder"]),
    ("I drink green tea every morning.", ["tea", "morning"]),
    ("I hike with my sister on Sundays.", ["hiking", "sister"]),
    ("My sister lives in Lisbon.", ["sister", "lisbon"]),
    ("I'm allergic to peanuts.", ["peanut allergy"]),
]
QUERIES = ["where do I go hiking?", "tell me about my dog", "what about my sister?", "tea"]

ops = st.lists(
    st.tuples(
        st.sampled_from(range(len(SCOPES))),
        st.sampled_from(["add", "add", "add", "search", "feedback", "delete", "forget"]),
        st.integers(0, 99),
        st.booleans(),
    ),
    min_size=4,
    max_size=10,
)


def _canon(obj: Any) -> Any:
    """``obj`` with each fact id replaced by its order of first appearance: ids are random, so
    two runs of the same operations compare by what the ids point at, not their values."""
    labels: dict[str, str] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            try:
                uuid.UUID(x)
            except ValueError:
                return x
            return labels.setdefault(x, f"#{len(labels)}")
        if isinstance(x, dict):
            return {walk(k): walk(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(walk(v) for v in x)
        return x

    return walk(obj)


def _hits(r: Any) -> list[tuple[Any, ...]]:
    return [(h.id, h.source, tuple(h.via.path) if h.via else None, round(h.score, 3), h.text) for h in r.hits]


def _w(weights: dict[str, float]) -> dict[str, float]:
    # 3 decimals: the shared embedding cache may hold a vector computed in another batch
    # (ONNX padding moves the last float bits); that is numeric noise, not another scope's data
    return {k: round(v, 3) for k, v in weights.items()}


def _run(m: Memory, workload: list[tuple[int, str, int, bool]], only: int | None) -> dict[int, Any]:
    """Run the workload (or only one scope's part); return what each read saw, by op index."""
    seen: dict[int, Any] = {}
    last: dict[int, list[str]] = {}
    for i, (s, op, n, flag) in enumerate(workload):
        if only is not None and s != only:
            continue
        tenant, user = SCOPES[s]
        kw = {"user_id": user, "tenant": tenant}
        if op == "add":
            text, cs = SENTENCES[n % len(SENTENCES)]
            # raw turns with concepts, or the offline extractor and its reconciliation
            res = m.add(text, infer=False, concepts=cs, **kw) if flag else m.add(text, **kw)
            seen[i] = [(e.event, e.id) for e in res.events]
        elif op == "search":
            r = m.search(QUERIES[n % len(QUERIES)], limit=2, **kw)
            last[s] = [h.id for h in r.hits]
            seen[i] = (_hits(r), _w(r.query_concepts), _w(r.expanded_concepts))
        elif op == "feedback":
            # the scope's last recall, plus every other scope's fact ids: those must be ignored
            foreign = [
                f.id for t, u in SCOPES if (t, u) != (tenant, user) for f in m.get_all(user_id=u, tenant=t)
            ]
            fb = m.feedback([*last.get(s, []), *foreign], flag, query=QUERIES[n % len(QUERIES)], **kw)
            seen[i] = fb
        elif op == "delete":
            facts = m.get_all(**kw)
            if facts:
                m.delete(facts[n % len(facts)].id, **kw)
            seen[i] = len(facts)
        else:
            seen[i] = m.forget(**kw)
            assert set(user_points(m, tenant, user).values()) == {0}
    return seen


def _reads(m: Memory, s: int) -> dict[str, Any]:
    tenant, user = SCOPES[s]
    kw = {"user_id": user, "tenant": tenant}
    facts = m.get_all(include_invalid=True, **kw)
    return {
        "facts": [
            (f.id, f.text, f.confirmations, f.recalls, round(f.valence, 6), f.concepts, f.is_valid)
            for f in facts
        ],
        "history": {f.id: [(e.event, e.old_text, e.new_text) for e in m.history(f.id, **kw)] for f in facts},
        "pending": m.pending(**kw),
        "searches": [
            (_hits(r), _w(r.query_concepts), _w(r.expanded_concepts))
            for r in (m.search(q, limit=3, reinforce=False, **kw) for q in QUERIES)
        ],
        "points": user_points(m, tenant, user),
    }


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workload=ops)
def test_scopes_never_see_or_influence_each_other(embedder: Any, clock: Any, workload: Any) -> None:
    cfg = MemoryConfig(path=":memory:", use_sparse=False)
    with Memory(config=cfg, embedder=embedder, clock=clock) as shared:
        seen = _run(shared, workload, None)
        for s, (tenant, user) in enumerate(SCOPES):
            assert_consistent(shared, tenant, user)
            with Memory(config=cfg, embedder=embedder, clock=clock) as solo:
                alone = _run(solo, workload, s)
                mine = {i: v for i, v in seen.items() if workload[i][0] == s}
                assert _canon(mine) == _canon(alone)
                assert _canon(_reads(shared, s)) == _canon(_reads(solo, s))


def test_forget_one_user_leaves_no_trace_and_spares_the_rest(mem: Memory) -> None:
    for s, (tenant, user) in enumerate(SCOPES):
        for text, cs in SENTENCES[s : s + 4]:
            mem.add(text, user_id=user, tenant=tenant, infer=False, concepts=cs)
        mem.add(
            SENTENCES[0][0], user_id=user, tenant=tenant, agent_id="coach", infer=False, concepts=["x", "y"]
        )
    r = mem.search("hiking with my dog", user_id="ana", tenant="t1")
    mem.feedback(r, True, user_id="ana", tenant="t1")
    before = {s: _reads(mem, s) for s in range(1, 4)}
    (victim,) = mem.get_all(user_id="ana", tenant="t1")[:1]
    assert mem.forget(user_id="ana", tenant="t1") == 5
    assert set(user_points(mem, "t1", "ana").values()) == {0}
    assert mem.get_all(user_id="ana", tenant="t1", include_invalid=True) == []
    assert mem.history(victim.id, user_id="ana", tenant="t1") == []
    assert mem.search("hiking with my dog", user_id="ana", tenant="t1").hits == []
    try:
        mem.get(victim.id, user_id="ana", tenant="t1")
        raise AssertionError("forgotten fact still readable")
    except NotFoundError:
        pass
    assert {s: _reads(mem, s) for s in range(1, 4)} == before  # nobody else was touched
