"""Finding the facts whose strength has faded (recency x reinforcement, with no floor)."""

from __future__ import annotations

from datetime import datetime

from .._parts import Parts
from ..decay import decayed_strength
from ..models import Scope, StoredFact

__all__ = ["faded"]


def faded(parts: Parts, scope: Scope, at: datetime, min_strength: float) -> list[StoredFact]:
    """The current facts and turns of ``scope`` whose decayed strength at ``at`` is below
    ``min_strength``. Superseded facts are not listed: they are history, not memory. A turn a
    remaining fact cites is its evidence and stays however old it is."""
    cfg = parts.config
    items = list(parts.store.scroll_facts(scope))
    weak = [
        f
        for f in items
        if decayed_strength(
            f.last_seen_at,
            at,
            half_life_days=cfg.half_life(f.category.value),
            confirmations=f.confirmations,
            recalls=f.recalls,
            valence=f.valence,
            importance=f.importance,
        )
        < min_strength
    ]
    weak_ids = {f.id for f in weak}
    cited = {t for f in items if f.kind == "fact" and f.id not in weak_ids for t in f.sources}
    return [f for f in weak if f.id not in cited]
