"""The read path: where a question goes on ``search``.

::

    analyse    speakers it names, dates, "when" / name questions, the user's concepts it names
               (``query``: one frozen :class:`~mem_pipeline.read.query.Query`)
    candidates dense + lexical search over the scope's facts and turns, each candidate scored
               by both signals, read as payloads (no objects built yet)
    rank       relevance x decay x reinforcement with the query's boosts; the concept boost
               (``rank``, pure)
    floor      the question must be about something held: no hit when the best candidate's
               ``confidence`` is below ``min_score``, so an unrelated question gets nothing
    set aside  for a question about the asker's present, what they said later on the same
               thing sets the earlier items aside (``newer``, pure)
    fold       a turn whose fact is also a hit folds under that fact
    associate  facts reached only through concept links, beside the hits (``associate``)
    -> Recall  hits and associations, explained; ``Recall.to_prompt()`` the data block
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .._parts import Parts
from ..models import Scope
from ..recall import Hit, Recall, Source
from ..store import Candidate, VectorLike
from ..text.dates import asks_plan
from ..text.lexical import sparse_query
from ..text.phrases import about_person, asks_where, asks_who, gives_person, gives_place
from ..text.slots import asked_relation, relation_names, speaks_of
from .associate import Reach, pick, reach
from .hits import hit_of, score_parts
from .newer import set_aside
from .query import Query, analyse
from .rank import (
    Ranked,
    Rows,
    agreed_first,
    confidence,
    fold,
    history_last,
    latest_in_slot,
    names_asked,
    rank,
    sets_slot,
)

__all__ = ["Reader"]


#: How many facts that say a relation's word are read for the names it was given, and how
#: many names a question about it takes (``Reader._named_as``).
NAMED_AS_POOL = 20
MAX_NAMES = 3

#: The least confidence of a fact that sets the slot a question asks about (``_relevant``).
SLOT_CONFIDENCE = 0.5


class Reader:
    """The read path of one :class:`~mem_pipeline.Memory` (see the module docstring)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        #: the ranking fields of the payloads read, as long as the store's cache keeps them
        self.rows = Rows(parts.store.briefs.size)

    def search(
        self,
        scope: Scope,
        text: str,
        *,
        limit: int,
        at: datetime,
        filters: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        reinforce: bool = False,
        expand: bool | None = None,
        min_score: float | None = None,
    ) -> Recall:
        """See ``Memory.search`` (arguments already checked)."""
        parts, cfg = self.parts, self.parts.config
        # the query's concepts feed the concept boost and the expansion; with both off,
        # matching them (which may embed query n-grams) would be work for nothing
        expanding = cfg.expand_links if expand is None else expand
        use_concepts = bool(cfg.concept_boost or expanding)
        q = analyse(parts, scope, text, at, use_concepts=use_concepts)
        floor = cfg.min_score if min_score is None else min_score
        # One thread: the model already keeps both cores busy, and following the concept links
        # beside it on a helper thread made the search no faster (paired, LoCoMo) and the
        # embedding slower. The query's n-grams are embedded only when its words name none
        # of the user's concepts (the rare case), to match them to concept names.
        vec = parts.embed.embed_one(q.dense_text)
        grams = parts.embed.embed(list(q.grams)) if use_concepts and q.grams else None
        parts.links.embed_waiting(scope)  # the vectors of the user's latest turns, unlocked
        with parts.lock:
            parts.links.flush(scope)  # what the user's adds left waiting (their turns' contexts)
            qc = dict(q.concepts) if use_concepts else {}
            if grams is not None:
                qc = parts.links.name_matches(scope, qc, grams)
            qc, boost, found = self._concepts(scope, qc, expanding, at) if qc else (qc, {}, None)
            relation = asked_relation(text)
            known = self._named_as(scope, relation) if relation is not None else ()
            if known and q.sparse is not None:
                q = dataclasses.replace(q, sparse=sparse_query(" ".join([text, *known])))
            cands = self._candidates(
                scope, q, vec, max(limit * cfg.pool_per_hit, cfg.candidate_pool), filters, include_invalid
            )
            ranked = rank(
                cands,
                now=at,
                half_lives=cfg.half_lives_days,
                dense_weight=cfg.dense_weight,
                decay_floor=cfg.decay_floor,
                use_decay=cfg.use_decay,
                named_speakers=q.named,
                speaker_boost=cfg.speaker_boost,
                dates=q.dates,
                date_boost=cfg.date_boost,
                session_boost=cfg.session_boost,
                reply_boost=cfg.reply_boost,
                when_boost=cfg.when_boost if q.asks_when else 0.0,
                name_boost=cfg.name_boost if q.asks_name else 0.0,
                given_boost=cfg.name_boost if q.asks_called else 0.0,
                people=q.people,
                slot=q.slot,
                slot_boost=cfg.slot_boost,
                named=speaks_of(relation, known) if relation is not None else None,
                current_boost=cfg.current_boost if q.asks_now else 0.0,
                memo=self.rows,
                concepts=boost,
                concept_boost=cfg.concept_boost,
                top=3 * limit,  # all that the floor reads and a search returns from
            )
            about = about_person(q.text, bool(q.named)) or bool(qc)
            ranked = self._relevant(ranked, about, floor, 3 * limit, q.slot, q.text, known)
            aside: dict[str, str] = {}
            # only for a question about how things stand now, the asker's or anyone's ("where
            # does ngozi live?"): one about the past or a date (LoCoMo's "what did Caroline
            # research?") keeps every earlier item (a question about a plan names when it is
            # for: "Where are we going in July?")
            dated = bool(q.dates) and not asks_plan(q.text)
            if cfg.newer_sets_aside and q.asks_state and not (q.asks_when or dated or include_invalid):
                # "where?" wants a place, "who?" a person
                answers = gives_place if asks_where(q.text) else gives_person if asks_who(q.text) else None
                ranked, aside = self._newer(ranked, cfg.newer_sets_aside, q.asks_many, answers)  # 3 x limit
            if q.slot is not None and q.asks_now and not include_invalid:
                ranked = latest_in_slot(ranked, q.slot)
            if cfg.history_last and q.asks_now:
                ranked = history_last(ranked)
            ranked = agreed_first(ranked, cfg.agreed_first)
            hits = [_hit(r, folded) for r, folded in fold(ranked, limit)]
            if hits and reinforce:  # the caller says it will use them (a recall alone does not)
                by_id = {c.id: c for c in cands}
                for h in hits:
                    parts.store.set_fact_fields(
                        h.id, {"recalls": int(by_id[h.id].payload.get("recalls", 0)) + 1}
                    )
            if found is None:
                return Recall(query=text, hits=hits, query_concepts=qc, set_aside=aside)
            # a hit's own turns are not associations either: its fact already says them (as a
            # turn folds under its fact), and a corrected fact's first turn says what it no
            # longer holds
            direct = {h.id for h in hits} | {t for h in hits for t in h.sources} | set(aside)
            assoc = pick(found, direct, cfg.association_limit)
            return Recall(
                query=text,
                hits=hits,
                associations=assoc,
                query_concepts=qc,
                expanded_concepts=found.expanded,
                set_aside=aside,
            )

    def _concepts(
        self, scope: Scope, qc: dict[str, float], expanding: bool, at: datetime
    ) -> tuple[dict[str, float], dict[str, float], Reach | None]:
        """The query's concepts, the concept boost's weights (match x specificity), and what
        their links reach (with expansion on and concepts to expand)."""
        cfg = self.parts.config
        boost: dict[str, float] = {}
        if qc and cfg.concept_boost:
            spec = self.parts.links.specificity(scope, list(qc))
            boost = {c: w * spec[c] for c, w in qc.items()}
        found = reach(self.parts, scope, at, qc, self.rows) if expanding and qc else None
        return qc, boost, found

    def _relevant(
        self,
        ranked: list[Ranked],
        about: bool,
        floor: float,
        scan: int,
        slot: str | None = None,
        question: str = "",
        known: Sequence[str] = (),
    ) -> list[Ranked]:
        """The ranked candidates with their confidence (for the first ``scan``, which is all a
        search returns from). With a ``floor``: none at all when the best of them is below it
        (the question is about nothing this memory holds), else those at ``hit_floor`` or more.
        ``about``: the question is about what this memory holds (the person, a speaker, a
        concept of theirs); a fact that sets the ``slot`` the question asks for is relevant
        however its words compare ("can I eat salmon?" and "Pescatarian"): its confidence is at
        least :data:`SLOT_CONFIDENCE`. A candidate that names what the ``question`` asks about
        ("which city is defne in?" and "My girlfriend Defne ...") is about it too, and so is
        a fact that speaks of the relation a question asks about ("what's my husband called?"
        and "My husband Anselm and I run a goat farm ...": ``text.slots.names_relation``), at
        least :data:`SLOT_CONFIDENCE` too, and so is a fact that names the person by a name
        the user gave the relation (``known``: "Ngozi swapped the ward..."). A turn the
        extractor found no fact in (``StoredFact.bare``) never passes the ``floor`` alone."""
        cfg = self.parts.config
        relation = asked_relation(question) if question else None
        named = speaks_of(relation, known) if relation is not None else None
        out = []
        for r in ranked[:scan]:
            held = about or (bool(question) and names_asked(question, r.text))
            conf = confidence(r.cand.dense or 0.0, held, cfg.confidence_weights)
            if (slot is not None and sets_slot(r.cand.payload, slot)) or (
                named is not None and r.cand.kind == "fact" and named(r.text)
            ):
                conf = max(conf, SLOT_CONFIDENCE)
            r.parts = r.parts._replace(confidence=conf)
            out.append(r)
        if not floor:
            return out
        # a turn the extractor found nothing in ("Help, I spilt red wine on the rug, how do I get
        # it out??") does not make the question one about what is held ("what do I like to
        # drink?"); it is still returned when something else is
        if max((r.parts.confidence for r in out if not r.cand.payload.get("bare")), default=0.0) < floor:
            return []
        return [r for r in out if r.parts.confidence >= cfg.hit_floor]

    def _named_as(self, scope: Scope, relation: str) -> list[str]:
        """The names the user gave their ``relation`` in what they said, superseded facts too
        (``text.slots.relation_names``: "My wife Ngozi is a midwife" -> "ngozi"): one lexical
        query for the relation's word over the scope's facts. A question about the relation
        ("what does my wife do for work?") is then also one about the person by name, which is
        how a later statement speaks of them ("Ngozi swapped the ward for a lecturing job")."""
        found = self.parts.store.search(
            scope,
            dense=None,
            sparse=sparse_query(relation),
            limit=NAMED_AS_POOL,
            include_invalid=True,
            kind="fact",
        )
        names: list[str] = []
        for c in found:
            for n in relation_names(str(c.payload.get("text", "")), relation):
                if n not in names:
                    names.append(n)
        return names[:MAX_NAMES]

    def _newer(
        self, ranked: list[Ranked], similar: float, broad: bool, answers: Callable[[str], int] | None
    ) -> tuple[list[Ranked], dict[str, str]]:
        """What a later item among ``ranked`` sets aside (``read.newer``). The vectors are read
        only when a fact is among them (a raw-turn store pays nothing)."""
        if len(ranked) < 2 or not any(r.cand.kind == "fact" for r in ranked):
            return ranked, {}
        vectors = self.parts.store.dense_vectors([r.id for r in ranked])
        return set_aside(ranked, vectors, similar=similar, broad=broad, answers=answers)

    def _candidates(
        self,
        scope: Scope,
        q: Query,
        vec: VectorLike,
        pool: int,
        filters: Mapping[str, Any] | None,
        include_invalid: bool,
    ) -> list[Candidate]:
        """The dense and lexical searches' candidates, each with both scores: a candidate found
        by one search alone gets its true score from the other (in the same round trip), so
        that min-max scales both signals over the same candidates."""
        return self.parts.store.search(
            scope,
            dense=vec,
            sparse=q.sparse,
            limit=pool,
            filters=filters,
            include_invalid=include_invalid,
            fill=True,
        )


def _hit(r: Ranked, folded: list[str]) -> Hit:
    """The hit of a returned candidate (built for these only)."""
    p = r.parts
    parts = score_parts(
        similarity=p.similarity,
        lexical=p.lexical,
        relevance=p.relevance,
        decay=p.decay,
        reinforcement=p.reinforcement,
        concept=p.concept,
        association=0.0,
        reply=p.reply,
        confidence=p.confidence,
    )
    source: Source = "semantic" if r.cand.dense is not None else "lexical"
    return hit_of(r.id, r.cand.payload, r.score, source, parts, folded=folded)
