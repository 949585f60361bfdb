"""Feedback: whether recalled facts helped moves each fact's valence and the concept links from
the question's concepts to the fact's."""

from __future__ import annotations

from collections.abc import Sequence

from .._parts import Parts
from ..models import Scope

__all__ = ["feedback"]


def feedback(
    parts: Parts, scope: Scope, ids: Sequence[str], query_concepts: Sequence[str], amount: float
) -> dict[str, int]:
    """Each fact's valence moves by ``0.2 * amount`` (bounded to [-1, 1]), and a fact that
    helped counts one more use (``recalls``: reinforcement, bounded); the links from
    ``query_concepts`` to each fact's concepts move by ``0.5 * amount`` (each link at most once
    per call, bounded). Ids of other scopes are ignored. Returns how many facts and links
    moved."""
    with parts.lock:
        facts = parts.store.get_facts(scope, ids)  # other users' ids are simply absent
        now = parts.now()
        for f in facts:
            fields: dict[str, float | int] = {"valence": max(-1.0, min(1.0, f.valence + 0.2 * amount))}
            if amount > 0:  # it was used: reinforcement grows with use, not with being recalled
                fields["recalls"] = f.recalls + 1
            parts.store.set_fact_fields(f.id, fields)
        targets = {c for f in facts for c in f.concepts}
        moved = (
            parts.links.feedback(scope, query_concepts, sorted(targets), amount, now) if query_concepts else 0
        )
    return {"facts": len(facts), "links": moved}
