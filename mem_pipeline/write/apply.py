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
from ..models import AddEvent, ExtractedFact, Kind, Scope, StoredFact, new_fact_id
from ..store import VectorLike, legacy_id, repeat_key
from ..text.lexical import as_context
from ..text.phrases import candidate_phrases, normalize_concept
from ..text.slots import slot_of, tells_end
from ..text.voice import first_person
from .ground import GROUNDED, support
from .reconcile import Decision
from .turns import place_turn

__all__ = ["apply_decision", "delete", "embed_text", "reinforce", "rewrite", "split_off", "supersede"]


def embed_text(text: str, subject: str | None) -> str:
    """What a fact is embedded as: a fact about the user in the user's own voice ("The user
    lives in Cork" -> "I live in Cork"; ``text.voice.first_person``), so that it compares with
    the user's questions and turns; a fact about a named person as it is ("Caroline went...")."""
    return first_person(text) if subject in (None, "the user") else text


def inherited_words(replaced: Sequence[StoredFact], index_text: str) -> str:
    """The lexical entry of a fact that supersedes ``replaced``: its own, with their words lent
    as context (``text.lexical.as_context``, counted half). A correction answers the questions
    its predecessor answered, and those questions use the predecessor's words: "My wife Ngozi
    is a midwife", then "Ngozi swapped the ward for a lecturing job" is what "what does my wife
    do for work?" asks for, and only the old fact says "wife". The dense vector stays the
    fact's own."""
    lent = [as_context(embed_text(old.text, old.metadata.get("speaker"))) for old in replaced]
    return "\n".join([*lent, index_text])


def apply_decision(
    parts: Parts,
    scope: Scope,
    fact: ExtractedFact,
    embed_text: str,
    vec: VectorLike | None,
    decision: Decision,
    meta: dict[str, Any],
    when: datetime,
    origin: str,
    recent: dict[Any, list[dict[str, Any]]] | None = None,
    asked: str | None = None,
    *,
    sources: Sequence[str] = (),
    slot: str | None = None,
    repeat: str = "reinforce",
    bare: bool = False,
    about: str | None = None,
    picked: bool = False,
) -> list[AddEvent]:
    """Carry out ``decision`` for one new fact, or raw turn (``origin == "raw"``); the events
    it makes. ``sources``: the ids of the turns a fact came from; ``slot``: the attribute it
    sets; ``bare``: a turn the extractor found no fact in (``StoredFact.bare``); ``about``: the
    fact a new fact only answers a question about (``StoredFact.about``); ``picked``: its concepts
    were picked by rules from its words (``ConceptLinks.update``); ``vec`` None: a raw
    turn written without its dense vector, which the write-behind computes. An exact
    repeat of a stored fact or turn reinforces it, or with ``repeat="keep"`` (a retried add
    finding what it wrote the first time) is only reported."""
    store, now = parts.store, parts.now()
    kind: Kind = "turn" if origin == "raw" else "fact"
    if decision.action == "NOOP":
        target = decision.target.id if decision.target else None
        noop = AddEvent(
            event="NOOP", id=target, text=fact.text, category=fact.category, reason=decision.reason
        )
        return [noop]
    if decision.action == "REINFORCE" and decision.target is not None:
        return [reinforce(parts, scope, decision.target, fact, when, decision.reason, sources)]
    if decision.action == "UPDATE" and decision.target is not None:
        new_text = decision.text or fact.text
        rewrite(
            parts,
            scope,
            decision.target,
            new_text,
            fact.concepts,
            now,
            reason=decision.reason,
            when=when,
            sources=sources,
        )
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
        if repeat == "keep":
            return [
                AddEvent(
                    event="NOOP", id=existing.id, kind=existing.kind, text=fact.text, reason="already stored"
                )
            ]
        return [reinforce(parts, scope, existing, fact, when, "exact repeat", sources)]
    fid = new_fact_id()
    index_text, reply_to = embed_text, None
    if origin == "raw":
        index_text, reply_to = place_turn(parts, scope, fid, fact.text, embed_text, meta, recent, asked)
    if decision.action == "SUPERSEDE" and decision.target is not None:
        index_text = inherited_words((decision.target, *decision.also), index_text)
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
        kind=kind,  # type: ignore[arg-type]
        sources=list(dict.fromkeys(sources)),
        slot=slot,
        bare=bare,
        about=about,
    )
    store.upsert_facts([(stored, vec, embed_text, index_text)])
    if vec is None:  # a turn whose vector the write-behind computes (``ConceptLinks.dense``)
        parts.links.dense(scope, [(fid, embed_text)])
    parts.links.update(scope, [], stored.concepts, when, fact_id=stored.id, picked=picked)
    events: list[dict[str, Any]] = [event_row(fid, "ADD", None, fact.text, now, reason=decision.reason)]
    out = [
        AddEvent(
            event="ADD", id=fid, kind=kind, text=fact.text, category=fact.category, reason=decision.reason
        )
    ]
    if decision.action == "SUPERSEDE" and decision.target is not None:
        kept = {fid_: rest for fid_, _, rest in decision.keep}
        split: list[AddEvent] = []
        for old in (decision.target, *decision.also):
            events += supersede(parts, scope, old, fid, fact.text, when, decision.reason)
            if old.id in kept:
                event, rows = split_off(parts, scope, old, kept[old.id], when, decision.reason)
                split.append(event)
                events += rows
        out = [
            AddEvent(
                event="SUPERSEDE",
                id=fid,
                kind=kind,
                text=fact.text,
                category=fact.category,
                previous_id=decision.target.id,
                reason=decision.reason,
            ),
            *split,
        ]
    parts.record_history(scope, events)
    return out


def supersede(
    parts: Parts,
    scope: Scope,
    old: StoredFact,
    by: str,
    text: str,
    when: datetime,
    reason: str,
) -> list[dict[str, Any]]:
    """Mark ``old`` replaced by fact ``by`` (kept, with ``invalid_at``, for history), and with it
    the turns it came from that still say it (``_saying``): a turn "I live in Lisbon and I work
    as a nurse" whose Lisbon fact a move replaced would otherwise still answer "where do I
    live?" (its other facts stay current as facts). A fact of no slot (a taste, a habit: "Fave
    snack rn is salt n vinegar crisps") that ``text`` says is over ("I've gone off crisps",
    ``text.slots.tells_end``) goes whole, and with it what only answered a question about it
    (``StoredFact.about``: "walkers or nothing"). A fact that sets a slot is replaced in that
    slot only, and an answer about the rest of it stays ("We rent in Leeds with Biscuit the
    greyhound" / "How does Biscuit cope?" / "He sleeps 20 hours a day"); so does an answer
    about a thing whose date or detail changed ("the race is on 21 June now" / "Three runs a
    week"). The history rows to write (the caller writes them)."""
    now = parts.now()
    stale = {
        "valid": False,
        "invalid_ts": when.timestamp(),
        "superseded_by": by,
        "updated_ts": now.timestamp(),
    }
    parts.links.update(scope, old.concepts, [], when, fact_id=old.id)  # current facts only
    parts.store.set_fact_fields(old.id, stale)
    rows = [event_row(old.id, "SUPERSEDE", old.text, text, now, superseded_by=by, reason=reason)]
    sources = [t for t in parts.store.get_facts(scope, old.sources) if t.is_valid and t.kind == "turn"]
    for turn in _saying(old, sources):
        parts.links.update(scope, turn.concepts, [], when, fact_id=turn.id)
        parts.store.set_fact_fields(turn.id, stale)
        why = f"its fact {old.id} was superseded"
        rows.append(event_row(turn.id, "SUPERSEDE", turn.text, text, now, superseded_by=by, reason=why))
    if old.kind == "fact" and old.slot is None and tells_end(text):
        for answer in parts.store.answering(scope, [old.id]):
            why = f"it answered a question about {old.id}, which was superseded"
            rows += supersede(parts, scope, answer, by, text, when, why)
    return rows


def _saying(fact: StoredFact, turns: Sequence[StoredFact]) -> list[StoredFact]:
    """The turns among ``fact``'s sources that say it: each that supports it as grounding asks
    (``ground``'s share of its words), else the one that supports most of it. A turn that only
    completed a fact over two turns (``ground.widen``: "The harbour views are great" after "I
    live in Boston") says something else of its own, and stays current."""
    speaker = fact.metadata.get("speaker")

    def names(t: StoredFact) -> list[str]:
        return [str(s) for s in {speaker, t.metadata.get("speaker")} if s]

    scored = [(support(fact.text, [t.text], speakers=names(t)), t) for t in turns]
    best = max((s for s, _ in scored), default=0.0)
    return [t for s, t in scored if s >= min(best, GROUNDED)]


def split_off(
    parts: Parts, scope: Scope, old: StoredFact, text: str, when: datetime, reason: str
) -> tuple[AddEvent, list[dict[str, Any]]]:
    """A new fact of what a superseded fact still says that its successor does not correct
    (``clauses.remainder``: "I'm 43 and just started learning to skateboard", corrected to 34,
    still says "Just started learning to skateboard"): the same category, creation time,
    metadata and source turns, the concepts it still names, the slot it sets now. It was last
    said when the correction left it standing (``when``): a correction of one half confirms the
    other, so what the person says later of the first half does not set the second aside
    (``read.newer``). Its ADD event names the fact it came from. The event, and the history
    row to write."""
    now = parts.now()
    speaker = old.metadata.get("speaker")
    said = {normalize_concept(c) for c in candidate_phrases(text)}
    sets = slot_of(text, str(speaker or "the user"))
    fid = new_fact_id()
    kept = old.model_copy(
        update={
            "id": fid,
            "text": text,
            "updated_at": now,
            "last_seen_at": max(old.last_seen_at, when),
            "concepts": [c for c in old.concepts if normalize_concept(c) in said],
            "slot": f"{sets.subject}/{sets.family}" if sets else None,
            "confirmations": 1,
            "recalls": 0,
        }
    )
    index_text = embed_text(text, speaker)
    parts.store.upsert_facts([(kept, parts.embed.embed_one(index_text), index_text, index_text)])
    parts.links.update(scope, [], kept.concepts, when, fact_id=fid)
    why = f"what {old.id} still says after its correction ({reason})"
    row = event_row(fid, "ADD", None, text, now, reason=why)
    return AddEvent(event="ADD", id=fid, kind=kept.kind, text=text, category=kept.category, reason=why), [row]


def reinforce(
    parts: Parts,
    scope: Scope,
    target: StoredFact,
    fact: ExtractedFact,
    when: datetime,
    reason: str,
    sources: Sequence[str] = (),
) -> AddEvent:
    """One more confirmation of ``target``: counts, last seen, the new fact's concepts (and the
    turns it came from) added."""
    now = parts.now()
    concepts = list(dict.fromkeys([*target.concepts, *fact.concepts]))[:MAX_CONCEPTS]
    last_seen = max(target.last_seen_at, when)
    fields: dict[str, Any] = {
        "confirmations": target.confirmations + 1,
        "last_seen_ts": last_seen.timestamp(),
        "updated_ts": now.timestamp(),
        "concepts": concepts,
    }
    if sources and target.kind == "fact":
        fields["sources"] = list(dict.fromkeys([*target.sources, *sources]))
    parts.store.set_fact_fields(target.id, fields)
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
    parts.record_history(scope, [row])
    return AddEvent(
        event="REINFORCE",
        id=target.id,
        kind=target.kind,
        text=fact.text,
        category=target.category,
        reason=reason,
    )


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
    when: datetime | None = None,
    sources: Sequence[str] = (),
) -> None:
    """Replace a fact's text (same id): new vectors, merged concepts, an UPDATE event. ``now``
    is when the store changed; ``when`` (default ``now``), when it was said: the time the
    concept links it adds are dated (an ``add`` with an explicit timestamp). ``sources``: turns
    the new text also comes from (a merge), added to the fact's own."""
    index_text = text if target.kind == "turn" else embed_text(text, target.metadata.get("speaker"))
    vec = parts.embed.embed_one(index_text)
    updated = target.model_copy(
        update={
            "text": text,
            "updated_at": now,
            # the new text was said then: as new as what said it (``read.newer``)
            "last_seen_at": max(target.last_seen_at, when or now),
            "concepts": list(dict.fromkeys([*target.concepts, *concepts]))[:MAX_CONCEPTS],
            "sources": list(dict.fromkeys([*target.sources, *sources])),
        }
    )
    parts.store.upsert_facts([(updated, vec, index_text, index_text)])
    parts.links.update(scope, target.concepts, updated.concepts, when or now, fact_id=target.id)
    parts.record_history(scope, [event_row(target.id, event, target.text, text, now, reason=reason)])


def delete(parts: Parts, scope: Scope, facts: Sequence[StoredFact], reason: str) -> None:
    """Delete facts and turns; their concepts leave the counts and links; each gets a DELETE
    event. A fact made from a deleted turn stays, without that turn among its sources, and its
    history says so (an UPDATE with ``source_deleted``): no fact points at nothing silently."""
    now = parts.now()
    gone = {f.id for f in facts}
    parts.store.delete_facts(list(gone))
    for f in facts:
        if f.is_valid:  # a superseded fact's links were already removed
            parts.links.update(scope, f.concepts, [], now, fact_id=f.id)
    rows = [event_row(f.id, "DELETE", f.text, None, now, reason=reason) for f in facts]
    turns = [f.id for f in facts if f.kind == "turn"]
    for fact in parts.store.citing(scope, turns):
        if fact.id in gone:
            continue
        lost = [t for t in fact.sources if t in gone]
        parts.store.set_fact_fields(fact.id, {"sources": [t for t in fact.sources if t not in gone]})
        rows.append(
            event_row(
                fact.id,
                "UPDATE",
                fact.text,
                fact.text,
                now,
                reason="a source turn was deleted",
                source_deleted=lost,
            )
        )
    parts.record_history(scope, rows)
