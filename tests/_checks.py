"""Invariants of a store, checked from the outside (shared by the reliability tests).

They read the collections with qdrant-client's public API and recompute what the concept layer
should hold from the facts themselves, independently of ``concepts.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from itertools import combinations
from typing import Any

from qdrant_client import models

from mem_pipeline import Memory
from mem_pipeline.models import Scope
from mem_pipeline.text.lexical import normalize_text


def run_python(code: str, *args: str) -> str:
    """Run ``code`` in a new interpreter with ``args`` (a process that may die on purpose);
    its standard output."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=True,
    )
    return out.stdout


def _rows(mem: Memory, collection: str, tenant: str, user: str) -> list[dict[str, Any]]:
    mem.parts.links.flush()  # the raw store: the counts and links still waiting are written first
    flt = models.Filter(
        must=[
            models.FieldCondition(key="tenant", match=models.MatchValue(value=tenant)),
            models.FieldCondition(key="user_id", match=models.MatchValue(value=user)),
        ]
    )
    out: list[dict[str, Any]] = []
    offset = None
    while True:
        recs, offset = mem.store.client.scroll(
            collection, scroll_filter=flt, limit=512, offset=offset, with_payload=True
        )
        out.extend({"_id": str(r.id), **(r.payload or {})} for r in recs)
        if offset is None:
            return out


def events(mem: Memory, tenant: str, user: str) -> list[dict[str, Any]]:
    return _rows(mem, mem.store.events, tenant, user)


def concept_counts(mem: Memory, tenant: str, user: str) -> dict[str, int]:
    return {r["name"]: int(r["count"]) for r in _rows(mem, mem.store.concepts, tenant, user)}


def link_counts(mem: Memory, tenant: str, user: str) -> dict[tuple[str, str], float]:
    return {
        (r["a"], r["b"]): float(r["count"])
        for r in _rows(mem, mem.store.links, tenant, user)
        if float(r["count"]) > 0
    }


def expected_counts(
    mem: Memory, tenant: str, user: str
) -> tuple[dict[str, int], dict[tuple[str, str], float]]:
    """Concept and pair counts as the valid facts of the user (all agents and runs) imply."""
    concepts: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for f in mem.get_all(user_id=user, tenant=tenant):
        cs = sorted(set(f.concepts))
        concepts.update(cs)
        pairs.update(combinations(cs, 2))
    return dict(concepts), {k: float(v) for k, v in pairs.items()}


def assert_consistent(mem: Memory, tenant: str, user: str) -> None:
    """No duplicate fact, history matches the facts, concept counts match the facts."""
    facts = mem.get_all(user_id=user, tenant=tenant, include_invalid=True)
    ids = [f.id for f in facts]
    assert len(ids) == len(set(ids))
    # a raw turn and an extracted fact with the same words are two records by design
    by_scope: Counter[tuple[str, str, str]] = Counter(
        (f.scope.key(), f.origin, normalize_text(f.text) + repr(sorted(f.metadata.items())))
        for f in facts
        if f.is_valid
    )
    dupes = [k for k, n in by_scope.items() if n > 1]
    assert not dupes, f"duplicate facts: {dupes}"

    evs = events(mem, tenant, user)
    by_fact: dict[str, list[dict[str, Any]]] = {}
    for e in evs:
        by_fact.setdefault(e["fact_id"], []).append(e)
    for evl in by_fact.values():
        evl.sort(key=lambda e: (e["at_ts"], e["seq"]))
    for f in facts:
        kinds = [e["event"] for e in by_fact.get(f.id, [])]
        assert "ADD" in kinds, f"fact {f.id} {f.text!r} has no ADD event: {kinds}"
        since_add = kinds[len(kinds) - 1 - kinds[::-1].index("ADD") :]  # a fact can be re-added
        assert since_add.count("REINFORCE") == f.confirmations - 1, (
            f"fact {f.id}: confirmations {f.confirmations} but history {kinds}"
        )
        if not f.is_valid:
            assert "SUPERSEDE" in kinds, f"superseded fact {f.id} without SUPERSEDE event"
    live = set(ids)
    for fid, evl in by_fact.items():
        kinds = [e["event"] for e in evl]
        if fid not in live:
            assert "DELETE" in kinds, f"history of {fid} ({kinds}) but no such fact and no DELETE event"

    want_c, want_l = expected_counts(mem, tenant, user)
    assert concept_counts(mem, tenant, user) == want_c
    assert link_counts(mem, tenant, user) == want_l


def user_points(mem: Memory, tenant: str, user: str) -> dict[str, int]:
    mem.parts.links.flush()
    return mem.store.count_user_points(Scope.of(user, tenant))
