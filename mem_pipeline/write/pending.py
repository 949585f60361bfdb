"""Pending turns: the turns of an ``add`` whose extraction failed, kept durably until a retry
processes them, so that nothing the user said is lost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from .._parts import Parts
from ..errors import ExtractionPendingError
from ..models import AddResult, Message, Scope

__all__ = ["keep_pending", "list_pending", "retry_pending"]


def keep_pending(
    parts: Parts,
    scope: Scope,
    msgs: Sequence[Message],
    meta: dict[str, Any],
    concepts: list[str],
    when: datetime,
    error: Exception,
) -> str:
    """Store the turns of a failed extraction; their pending id."""
    return parts.store.add_pending(
        scope,
        {
            "messages": [m.model_dump() for m in msgs],
            "metadata": meta,
            "concepts": concepts,
            "timestamp": when.isoformat(),
            "error": f"{type(error).__name__}: {error}"[:2000],
            "created_ts": parts.now().timestamp(),
            "attempts": 1,
        },
    )


def list_pending(parts: Parts, scope: Scope) -> list[dict[str, Any]]:
    """The turns of this user still waiting for extraction (with the last error)."""
    with parts.lock:
        return [{"id": pid, **rec} for pid, rec in parts.store.list_pending(scope)]


def retry_pending(
    parts: Parts, scope: Scope | None, add: Callable[[str, dict[str, Any]], AddResult]
) -> list[AddResult]:
    """Process pending turns (one user's, or everyone's), oldest first, through ``add(pending
    id, record)``. A turn that succeeds is removed from pending; one that fails again stays,
    with the new error and its attempt count, and the others are still tried."""
    results = []
    for pid, rec in parts.store.list_pending(scope):
        try:
            res = add(pid, rec)
        except ExtractionPendingError:
            continue
        parts.store.delete_pending([pid])
        results.append(res)
    return results
