"""Applying a decision: the points, concept counts and history events each action writes.

ADD (with SUPERSEDE of an older fact), REINFORCE, UPDATE, NOOP for the facts of an ``add``;
``rewrite`` and ``delete`` for ``update()``, ``delete()`` and ``prune``. Every change writes its
history event (``_parts.event_row``); the caller holds the lock and the journal entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .._inputs import MAX_CONCEPTS
from .._parts import Parts, event_row
from ..models import AddEvent, ExtractedFact, Scope, StoredFact, new_fact_id
from ..store import VectorLike, legacy_id, repeat_key
from ..text.voice import third_person
from .reconcile import Decision
from .turns import place_turn

__all__ = ["apply_decision", "delete", "reinforce", "rewrite"]


def apply_decision(
    parts: Parts,
    scope: Scope,
    fact: ExtractedFact,
    embed_text: str,
    vec: VectorLike,
    decision: Decision,
    meta: dict[str, Any],
    when: datetime,
    origin: str,
    recent: dict[Any, list[dict[str, Any]]] | None = None,
    asked: str | None = None,
) -> list[AddEvent]:
    """Carry out ``decision`` for one new fact (or raw turn); the events it makes."""
    store, now = parts.store, parts.now()
    if decision.action == "NOOP":
        target = decision.target.id if decision.target else None
        return [
            AddEvent(event="NOOP", id=target, text=fact.text, category=fact.category, reason=decision.reason)
        ]
    if decision.action == "REINFORCE" and decision.target is not None:
        return [reinforce(parts, scope, decision.target, fact, when, decision.reason)]
    if decision.action == "UPDATE" and decision.target is not None:
        new_text = decision.text or fact.text
        rewrite(parts, scope, decision.target, new_text, fact.concepts, now, reason=decision.reason)
        return [
            AddEvent(
                event="UPDATE",
                id=decision.target.id,
                text=new_text,
                category=decision.target.category,
                reason=decision.reason,
            )
        ]
    # ADD, possibly superseding a target; an exact repeat (``store.repeat_key``) reinforces
    same = (scope, origin, fact.text, embed_text, meta)
    existing = store.find_repeat(scope, repeat_key(*same), legacy_id(*same))
    if existing is not None:
        return [reinforce(parts, scope, existing, fact, when, "exact repeat")]
    fid = new_fact_id()
    index_text, reply_to = embed_text, None
    if origin == "raw":
        index_text, reply_to = place_turn(parts, scope, fid, fact.text, embed_text, meta, recent, asked)
    stored = StoredFact(
        id=fid,
        text=fact.text,
        category=fact.category,
        concepts=fact.concepts[:MAX_CONCEPTS],
        scope=scope,
        metadata=meta,
        created_at=when,
        updated_at=now,
        last_seen_at=when,
        valid_from=when,
        origin=origin,  # type: ignore[arg-type]
        reply_to=reply_to,
    )
    store.upsert_facts([(stored, vec, embed_text, index_text)])
    parts.links.update(scope, [], stored.concepts, when, fact_id=stored.id)
    events: list[dict[str, Any]] = [event_row(fid, "ADD", None, fact.text, now, reason=decision.reason)]
    out = [AddEvent(event="ADD", id=fid, text=fact.text, category=fact.category, reason=decision.reason)]
    if decision.action == "SUPERSEDE" and decision.target is not None:
        old = decision.target
        parts.links.update(scope, old.concepts, [], when, fact_id=old.id)  # current facts only
        store.set_fact_fields(
            old.id,
            {
                "valid": False,
                "invalid_ts": when.timestamp(),
                "superseded_by": fid,
                "updated_ts": now.timestamp(),
            },
        )
        events.append(
            event_row(
                old.id, "SUPERSEDE", old.text, fact.text, now, superseded_by=fid, reason=decision.reason
            )
        )
        out = [
            AddEvent(
                event="SUPERSEDE",
                id=fid,
                text=fact.text,
                category=fact.category,
                previous_id=old.id,
                reason=decision.reason,
            )
        ]
    store.add_events(scope, events)
    return out


def reinforce(
    parts: Parts, scope: Scope, target: StoredFact, fact: ExtractedFact, when: datetime, reason: str
) -> AddEvent:
    """One more confirmation of ``target``: counts, last seen, the new fact's concepts added."""
    now = parts.now()
    concepts = list(dict.fromkeys([*target.concepts, *fact.concepts]))[:MAX_CONCEPTS]
    last_seen = max(target.last_seen_at, when)
    parts.store.set_fact_fields(
        target.id,
        {
            "confirmations": target.confirmations + 1,
            "last_seen_ts": last_seen.timestamp(),
            "updated_ts": now.timestamp(),
            "concepts": concepts,
        },
    )
    parts.links.update(scope, target.concepts, concepts, when, fact_id=target.id)
    row = event_row(
        target.id,
        "REINFORCE",
        target.text,
        fact.text,
        now,
        reason=reason,
        confirmations=target.confirmations + 1,
    )
    parts.store.add_events(scope, [row])
    return AddEvent(event="REINFORCE", id=target.id, text=fact.text, category=target.category, reason=reason)


def rewrite(
    parts: Parts,
    scope: Scope,
    target: StoredFact,
    text: str,
    concepts: Sequence[str],
    now: datetime,
    *,
    reason: str = "",
    event: str = "UPDATE",
) -> None:
    """Replace a fact's text (same id): new vectors, merged concepts, an UPDATE event."""
    index_text = text if target.origin == "raw" else third_person(text)
    vec = parts.embed.embed_one(index_text)
    updated = target.model_copy(
        update={
            "text": text,
            "updated_at": now,
            "concepts": list(dict.fromkeys([*target.concepts, *concepts]))[:MAX_CONCEPTS],
        }
    )
    parts.store.upsert_facts([(updated, vec, index_text, index_text)])
    parts.links.update(scope, target.concepts, updated.concepts, now, fact_id=target.id)
    parts.store.add_events(scope, [event_row(target.id, event, target.text, text, now, reason=reason)])


def delete(parts: Parts, scope: Scope, facts: Sequence[StoredFact], reason: str) -> None:
    """Delete facts; their concepts leave the counts and links; each gets a DELETE event."""
    now = parts.now()
    parts.store.delete_facts([f.id for f in facts])
    for f in facts:
        if f.is_valid:  # a superseded fact's links were already removed
            parts.links.update(scope, f.concepts, [], now, fact_id=f.id)
    parts.store.add_events(
        scope, [event_row(f.id, "DELETE", f.text, None, now, reason=reason) for f in facts]
    )
