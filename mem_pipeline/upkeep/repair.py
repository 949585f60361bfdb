"""Dropping points the engine can no longer read, and making the users they touched whole."""

from __future__ import annotations

from typing import Any

from .._parts import Parts
from .recovery import repair_user

__all__ = ["repair"]


def repair(parts: Parts, *, dry_run: bool = False) -> dict[str, Any]:
    """Find and drop points the engine can no longer read, and make the users they touched
    consistent again.

    A store written by an older version could hold a fact whose metadata nested too deep for
    the engine: its write-ahead log is trimmed when the store opens (reported here under
    ``wal_repairs``), and a fact whose stored payload cannot be read is found here and removed
    (its collection is rebuilt without it; the edge engine keeps the damaged copy beside it).
    The users whose facts were removed get DELETE events, and their concept counts and links
    are recomputed (as after a crash). ``dry_run`` only reports.
    """
    store = parts.store
    with parts.lock:
        report = store.repair(dry_run=dry_run)
        lost = report["unreadable"]
        if dry_run or not lost:
            return report
        scopes = {s.key(): s for s in store.users(ids=lost.get(store.facts, []))}
        if set(lost) - {store.facts, store.events, store.journal}:
            scopes.update({s.key(): s for s in store.users()})  # counts or links lost
        for scope in scopes.values():
            repair_user(parts, scope, "repair")
        parts.links.invalidate()
        report["users_repaired"] = len(scopes)
        return report
