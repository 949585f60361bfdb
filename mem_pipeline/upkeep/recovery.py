"""Crash recovery: every write that spans several points is journaled (``Parts.journaled``),
and a write left unfinished (by a crash or an error) is completed from the facts, which are the
truth."""

from __future__ import annotations

import logging
from typing import Any

from .._parts import Parts, event_row
from ..models import Scope
from ..write.turns import missing_contexts

__all__ = ["recover", "repair_user"]

log = logging.getLogger(__name__)


def recover(parts: Parts) -> int:
    """Complete the writes a crash interrupted; returns how many were repaired.

    A ``forget`` is redone. For any other write, the user's facts are the truth (each fact is
    one atomic point write): history events missing for them are added (marked
    ``recovered``), concept counts and links are recomputed from them, and turns still
    without their dense vector get it. Concepts still without their name vector get it.
    """
    with parts.lock:
        todo = parts.store.unfinished()
        for jid, rec in todo:
            scope = Scope.of(rec["user_id"], rec["tenant"])
            log.warning("repairing an interrupted %s of user %r", rec.get("op"), scope.user_id)
            repair_user(parts, scope, str(rec.get("op")))
            parts.store.end(jid)
        # name vectors of new concepts are computed in batches after their write: those a
        # process left uncomputed (it ended first) are computed now
        parts.links.embed_names()
    return len(todo)


def repair_user(parts: Parts, scope: Scope, op: str) -> None:
    """Make one user's history, concept counts and links agree with its facts (or redo a
    ``forget``)."""
    store, links = parts.store, parts.links
    if op == "forget":
        store.delete_user(scope)
        links.invalidate(scope)
        return
    # turns whose vectors waited for the write-behind when the process ended
    waiting = store.without_dense(scope)
    if waiting:
        store.set_dense(list(zip([fid for fid, _ in waiting], parts.embed.embed([t for _, t in waiting]))))
    facts = list(store.scroll_facts(scope, include_invalid=True, whole_user=True))
    links.rebuild(scope, [f for f in facts if f.is_valid])  # writes what waits of the user first
    # the contexts turns lend the turns before them wait for the write-behind too
    store.set_lexicals(missing_contexts(store.raw_turns(scope), parts.config.context_window))
    history: dict[str, list[dict[str, Any]]] = {}
    for r in store.user_points(store.events, scope).values():
        history.setdefault(r["fact_id"], []).append(r)
    now = parts.now()
    why = {"reason": "recovered after an interrupted write", "recovered": True}
    for f in facts:
        rows = sorted(history.pop(f.id, []), key=lambda r: (r.get("at_ts", 0.0), r.get("seq", 0)))
        kinds = [r["event"] for r in rows]
        new: list[dict[str, Any]] = []
        if "ADD" not in kinds:
            new.append(event_row(f.id, "ADD", None, f.text, now, **why))
            rows, kinds = [], []
        else:
            i = len(kinds) - 1 - kinds[::-1].index("ADD")
            rows, kinds = rows[i:], kinds[i:]
            texts = [r.get("new_text") for r in rows if r["event"] in ("ADD", "UPDATE")]
            if texts[-1] != f.text:
                new.append(event_row(f.id, "UPDATE", texts[-1], f.text, now, **why))
        for _ in range(f.confirmations - 1 - kinds.count("REINFORCE")):
            new.append(event_row(f.id, "REINFORCE", f.text, f.text, now, **why))
        if not f.is_valid and "SUPERSEDE" not in kinds:
            new.append(event_row(f.id, "SUPERSEDE", f.text, None, now, superseded_by=f.superseded_by, **why))
        store.add_events(f.scope, new)
    for fid, rows in history.items():  # history of facts no longer stored: deleted
        rows.sort(key=lambda r: (r.get("at_ts", 0.0), r.get("seq", 0)))
        if rows[-1]["event"] != "DELETE":
            last = rows[-1]
            fscope = Scope.of(last["user_id"], last["tenant"], last.get("agent_id"), last.get("run_id"))
            store.add_events(fscope, [event_row(fid, "DELETE", last.get("new_text"), None, now, **why)])
