"""Finding the facts whose strength has faded (recency x reinforcement, with no floor)."""

from __future__ import annotations

from datetime import datetime

from .._parts import Parts
from ..decay import decayed_strength
from ..models import Scope, StoredFact

__all__ = ["faded"]


def faded(parts: Parts, scope: Scope, at: datetime, min_strength: float) -> list[StoredFact]:
    """The current facts of ``scope`` whose decayed strength at ``at`` is below
    ``min_strength``. Superseded facts are not listed: they are history, not memory."""
    cfg = parts.config
    return [
        f
        for f in parts.store.scroll_facts(scope)
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
