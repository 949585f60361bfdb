"""The write path: where a turn goes on ``add``.

::

    turns     each user turn is kept as a turn (speaker, time, session; dense + lexical index),
              unless the deployment keeps no raw text (``keep_turns``); ``infer=False`` keeps
              only the turns
    extract   the configured extractor (``extract``: the LLM, in context-sized windows;
              ``offline``: rules) -> facts naming their person; whatever the extractor, a
              relative date in a fact ("yesterday", "last year") is written as the date it
              means, counted from the add's time
    ground    facts their turns do not support are rejected (``ground``)
    embed     one embedding call for the turns and the facts (new concepts' names are embedded
              later, in batches: ``links``); a short answer to the assistant's question is
              embedded with the question ("When is the baby due?" / "Due in October.")
    reconcile per fact, against the stored facts it may repeat or correct, found by similarity
              and by slot (``reconcile``, ``text.slots``); a reply that takes up or turns down
              the assistant's suggestion is merged into the statement it answers, and a
              slip corrected ("I meant Nantes") puts its name into the fact it corrects
    apply     the points, concept counts, links and history events (``apply``); a turn takes its
              place among the turns before it (``turns``); a fact records its source turns

Extraction, embedding and an LLM's reconciliation run outside the store's lock; the writes
run under it, journaled, a few at a time, so one large ``add`` never holds every other caller
for long. If extraction fails the turns are still stored, and the messages are kept as
pending for a retry (``pending``): nothing said is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any

import numpy as np

from .._parts import Parts
from ..errors import ExtractionPendingError, LLMError
from ..models import AddEvent, AddResult, Category, ExtractedFact, Message, Scope, StoredFact
from ..store import VectorLike
from ..text.dates import resolve_relative
from ..text.phrases import candidate_phrases, normalize_concept
from ..text.slots import Slot, slot_of
from ..text.smalltalk import is_small_talk
from ..text.voice import conflicting_specifics
from .apply import apply_decision, embed_text
from .extract import Extractor
from .followups import answers_about, answers_question, follow_up, said_before, with_question
from .ground import grounded_turns
from .pending import keep_pending
from .reconcile import Decision, Reconciler, decide, slot_keeping, unplaced
from .replaces import ReplaceModel

__all__ = ["WRITE_CHUNK", "Writer"]

log = logging.getLogger(__name__)

#: Points written per hold of the store's lock (and per journal entry): a large ``add`` lets
#: other callers in between chunks.
WRITE_CHUNK = 16


class Writer:
    """The write path of one :class:`~mem_pipeline.Memory` (see the module docstring)."""

    def __init__(
        self,
        parts: Parts,
        extractor: Extractor,
        reconciler: Reconciler | None,
        replaces: ReplaceModel | None = None,
    ) -> None:
        self.parts = parts
        self.extractor = extractor
        self.reconciler = reconciler
        #: the learned "does this replace that" (``write.replaces``), asked where the rules
        #: would ADD when no LLM reconciles
        self.replaces = replaces if reconciler is None else None

    def add(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        concepts: list[str],
        infer: bool | None,
        when: datetime,
        pending_id: str | None = None,
    ) -> AddResult:
        """Remember ``msgs`` (already checked) in ``scope``; see ``Memory.add``."""
        raw = infer is False
        result = AddResult(extractor="raw" if raw else self.extractor.name)
        keep = raw or self.parts.config.keep_turns
        turns = [
            (i, m)
            for i, m in enumerate(msgs)
            if m.role == "user" and keep and (raw or not is_small_talk(m.content))
        ]
        facts: list[ExtractedFact] = []
        failure: LLMError | None = None
        unread: list[int] = []  # the messages of the extraction windows that failed
        if not raw:
            try:
                facts, unread, failure = self._extract(scope, msgs, concepts, when, result)
            except LLMError as e:
                failure, unread = e, list(range(len(msgs)))
        turn_texts = [self._turn_text(m) for _, m in turns]
        fact_texts = [embed_text(f.text, f.subject) for f in facts]
        # a short answer to the assistant's question means what the question asks ("When is the
        # baby due?" / "Due in October."): it is embedded with the question before it. Its text,
        # its lexical entry and what it lends its neighbours stay its own
        dense_turns = [with_question(msgs, i, t) for (i, _), t in zip(turns, turn_texts)]
        dense_facts = [
            with_question(msgs, f.source_turns[0], t) if len(f.source_turns) == 1 else t
            for f, t in zip(facts, fact_texts)
        ]
        # one embedding call per add: the turns and the facts. The names of concepts new to
        # this user are embedded later, in batches (``links``): padded to a turn's length in
        # this call, six names cost four times the turn itself. A turn embedded as its own
        # text waits for the write-behind's batch instead, when there is one
        # (``ConceptLinks.dense``): it is written now without its dense vector
        turn_concepts = [concepts or candidate_phrases(m.content)[:8] for _, m in turns]
        waits = [d == t for d, t in zip(dense_turns, turn_texts)]
        if not self._defers_dense(sum(waits)):
            waits = [False] * len(waits)
        now = [d for d, w in zip(dense_turns, waits) if not w]
        vectors = self.parts.embed.embed([*now, *dense_facts])  # none: no call to the model
        given = iter(vectors[: len(now)])
        turn_vecs = [None if w else next(given) for w in waits]
        # the turns the extractor found nothing in (not those it could not read)
        found = {i for f in facts for i in f.source_turns}
        bare = set() if raw else {i for i, _ in turns if i not in found and i not in unread}
        turn_ids = self._write_turns(
            scope,
            msgs,
            meta,
            turns,
            turn_concepts,
            turn_texts,
            turn_vecs,
            when,
            pending_id,
            result,
            bare,
            picked=not concepts,
        )
        if facts:
            fact_vecs = vectors[len(now) : len(now) + len(facts)]
            self._write_facts(scope, msgs, meta, facts, fact_texts, fact_vecs, turn_ids, when, result)
        if failure is not None:
            self._pending(scope, [msgs[i] for i in unread], meta, concepts, when, pending_id, failure, result)
        return result

    # -- turns --------------------------------------------------------------------------------
    def _defers_dense(self, turns: int) -> bool:
        """Whether the vectors of ``turns`` new turns wait for the write-behind: it takes them
        (``ConceptLinks.defers_dense``), and the embedder runs in this process (a remote one's
        errors must reach this ``add``)."""
        local = bool(getattr(self.parts.embed.embedder, "in_process", False))
        return local and turns > 0 and self.parts.links.defers_dense(turns)

    @staticmethod
    def _turn_text(m: Message) -> str:
        """What a turn is embedded as: "speaker: text" (a name in the text finds the person's turns)."""
        return f"{m.name}: {m.content}" if m.name else m.content

    def _write_turns(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        turns: list[tuple[int, Message]],
        concepts: list[list[str]],
        texts: list[str],
        vectors: Sequence[Any],
        when: datetime,
        pending_id: str | None,
        result: AddResult,
        bare: set[int],
        *,
        picked: bool = False,
    ) -> dict[int, str]:
        """Store the turns; the id of each by its index in ``msgs`` (``bare``: the indexes of
        those the extractor found no fact in; a vector of None: the turn's waits for the
        write-behind; ``picked``: their concepts were picked from their words, not given)."""
        ids: dict[int, str] = {}
        raw = result.extractor == "raw"
        decision = Decision("ADD", reason="turn")
        before: list[StoredFact] | None = None  # the user's statement before this add, when asked
        for start in range(0, len(turns), WRITE_CHUNK):
            with self.parts.lock, self.parts.journaled(scope, "add"):
                recent: dict[Any, list[dict[str, Any]]] = {}  # this chunk's view of the latest turns
                for k in range(start, min(start + WRITE_CHUNK, len(turns))):
                    i, m = turns[k]
                    turn = ExtractedFact(
                        text=m.content, category=Category.OTHER, concepts=concepts[k], source_turns=[i]
                    )
                    tmeta = dict(meta)
                    if m.name and "speaker" not in tmeta:
                        tmeta["speaker"] = m.name
                    # a user turn that answers the assistant's question just before it in this
                    # call: the question lends its words to the turn's lexical entry
                    prior = msgs[i - 1] if i > 0 else None
                    asked = (
                        prior.content
                        if prior is not None and prior.role == "assistant" and "?" in prior.content
                        else None
                    )
                    about = None  # a bare answer to the question about the user's statement before
                    if i in bare and answers_question(msgs, i):
                        if before is None:
                            before = said_before(self.parts, scope, meta, set(), when)
                        about = answers_about(msgs, i, m.content, before)
                    events = apply_decision(
                        self.parts,
                        scope,
                        turn,
                        texts[k],
                        vectors[k],
                        decision,
                        tmeta,
                        when,
                        "raw",
                        recent,
                        asked,
                        repeat="keep" if pending_id is not None else "reinforce",
                        bare=i in bare,
                        about=about,
                        picked=picked,
                    )
                    ids[i] = str(events[0].id)
                    (result.events if raw else result.turns).extend(events)
                # the next add of these sessions reads its neighbours from here, while nothing
                # else writes to the store in between (``FactStore.keep_recent``)
                depth = max(self.parts.config.context_window, 1)  # as ``place_turn`` reads
                for session, rows in recent.items():
                    self.parts.store.keep_recent(scope, session, rows, depth)
        return ids

    # -- facts --------------------------------------------------------------------------------
    def _extract(
        self, scope: Scope, msgs: Sequence[Message], concepts: list[str], when: datetime, result: AddResult
    ) -> tuple[list[ExtractedFact], list[int], LLMError | None]:
        """The extractor's grounded facts, with normalised concepts (the caller's added); and
        when some of its windows failed (the others' facts stand), their messages and error."""
        extraction = self.extractor.extract(msgs, when)
        result.llm_calls += extraction.llm_calls
        result.prompt_tokens += extraction.prompt_tokens
        result.completion_tokens += extraction.completion_tokens
        result.windows += extraction.windows
        result.regrounded += extraction.regrounded
        result.backfilled += extraction.backfilled
        result.replaced += extraction.replaced
        result.acts += extraction.acts
        for f in extraction.facts:  # whatever the extractor, a stored fact's dates are absolute
            f.text = resolve_relative(f.text, when)
        facts = self._grounded(extraction.facts + self._changes(scope, extraction.doubtful), msgs, result)
        for f in facts:
            f.concepts = [
                c for c in dict.fromkeys([normalize_concept(c) for c in f.concepts] + concepts) if c
            ]
        unread = sorted({i for indexes, _ in extraction.failed for i in indexes})
        return facts, unread, (extraction.failed[-1][1] if extraction.failed else None)

    def _changes(self, scope: Scope, doubtful: Sequence[ExtractedFact]) -> list[ExtractedFact]:
        """Of the statements the memorable filter doubts, those that replace a stored fact of
        their person ("Back on oat milk for good" after "Switched to soya milk"): a change is
        worth remembering."""
        if self.replaces is None or not doubtful:
            return []
        vecs = self.parts.embed.embed([f.text for f in doubtful])
        with self.parts.lock:
            found = [self._candidates(scope, v, None)[0] for v in vecs]
        return [f for f, near in zip(doubtful, found) if self.replaces.best(f, near) is not None]

    def _write_facts(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        facts: list[ExtractedFact],
        texts: list[str],
        vectors: Any,
        turn_ids: dict[int, str],
        when: datetime,
        result: AddResult,
    ) -> None:
        """Reconcile and store the facts, each with the ids of its source turns."""
        facts, texts, vectors = _distinct(facts, texts, vectors, self.parts.config.dedupe_threshold)
        slots = [slot_of(f.text, f.subject or _speaker(msgs, f) or "the user") for f in facts]
        with self.parts.lock:  # the state the decisions are made on (an LLM answers unlocked)
            found = [self._candidates(scope, vec, slot) for vec, slot in zip(vectors, slots)]
        decisions: list[Decision | None] = [
            decide(
                f,
                slot,
                near,
                in_slot,
                dedupe_threshold=self.parts.config.dedupe_threshold,
                related_threshold=self.parts.config.related_threshold,
            )
            for f, slot, (near, in_slot) in zip(facts, slots, found)
        ]
        moved = {s.subject for s in slots if s is not None and s.family == "residence"}
        if moved:  # where one lives now, said in this add, is not left beside an older place
            decisions = [None if d is None else unplaced(d, moved) for d in decisions]
        with self.parts.lock:  # a reply or a slip may carry on the turn before (``followups``)
            about = follow_up(self.parts, scope, msgs, meta, facts, decisions, set(turn_ids.values()), when)
        if self.replaces is not None:  # what the rules would ADD may replace a fact in other words
            # not a fact another decision of this add already acts on (a slip put right, a reply)
            taken = {d.target.id for d in decisions if d is not None and d.target is not None}
            for k, (f, (near, _)) in enumerate(zip(facts, found)):
                d = decisions[k]
                if d is None or d.action == "ADD":
                    learned = self.replaces.supersede(f, [(s, c) for s, c in near if s.id not in taken])
                    if learned is not None and learned.target is not None:
                        decisions[k] = learned
                        taken.add(learned.target.id)
        self._ask_llm(facts, found, decisions, result)
        for start in range(0, len(facts), WRITE_CHUNK):
            with self.parts.lock, self.parts.journaled(scope, "add"):
                for k in range(start, min(start + WRITE_CHUNK, len(facts))):
                    f, slot = facts[k], slots[k]
                    decision = _still_valid(self.parts, scope, decisions[k], slot, set(result.ids), f.text)
                    fmeta = dict(meta)
                    speaker = _speaker(msgs, f)
                    if speaker and "speaker" not in fmeta:
                        fmeta["speaker"] = speaker
                    sources = [turn_ids[i] for i in f.source_turns if i in turn_ids]
                    origin = f.origin or ("llm" if self.extractor.name == "llm" else "offline")
                    result.events.extend(
                        apply_decision(
                            self.parts,
                            scope,
                            f,
                            texts[k],
                            vectors[k],
                            decision,
                            fmeta,
                            when,
                            origin,
                            sources=sources,
                            slot=f"{slot.subject}/{slot.family}" if slot else None,
                            about=about[k] if decision.action == "ADD" else None,
                        )
                    )

    def _candidates(
        self, scope: Scope, vec: VectorLike, slot: Slot | None
    ) -> tuple[list[tuple[StoredFact, float]], list[tuple[StoredFact, Slot]]]:
        """The stored facts a new fact may repeat or correct: the nearest by cosine, and those
        of its slot (current and superseded, each with its slot)."""
        store = self.parts.store
        cands = store.search(scope, dense=vec, sparse=None, limit=5, kind="fact")
        near = sorted(((c.fact, float(c.dense or 0.0)) for c in cands), key=lambda p: p[1], reverse=True)
        in_slot: list[tuple[StoredFact, Slot]] = []
        if slot is not None:
            for f in store.in_slot(scope, f"{slot.subject}/{slot.family}", include_invalid=True):
                s = slot_of(f.text, str(f.metadata.get("speaker") or "the user"))
                if s is not None:
                    in_slot.append((f, s))
            in_slot.sort(key=lambda p: not p[0].is_valid)
        return near, in_slot

    def _ask_llm(
        self,
        facts: list[ExtractedFact],
        found: list[tuple[list[tuple[StoredFact, float]], list[tuple[StoredFact, Slot]]]],
        decisions: list[Decision | None],
        result: AddResult,
    ) -> None:
        """Decide the facts the rules left undecided: one LLM call for all of them, or ADD
        (offline, or when the LLM fails after its retries; a fact is never dropped)."""
        todo = [k for k, d in enumerate(decisions) if d is None]
        if not todo:
            return
        rec = self.reconciler
        if rec is None:
            for k in todo:
                decisions[k] = Decision(
                    "ADD", reason="related, but nothing says it corrects or repeats a stored fact"
                )
            return
        cfg = self.parts.config
        items = [(facts[k], [f for f, s in found[k][0] if s >= cfg.related_threshold]) for k in todo]
        before = (rec.calls, rec.prompt_tokens, rec.completion_tokens)
        try:
            answers = rec.decide_many(items)
        except LLMError as e:
            log.warning("LLM reconciliation failed, offline rule used: %s", e)
            answers = [Decision("ADD", reason=f"LLM failed ({e}); offline rule: ADD") for _ in todo]
        result.llm_calls += rec.calls - before[0]
        result.prompt_tokens += rec.prompt_tokens - before[1]
        result.completion_tokens += rec.completion_tokens - before[2]
        for k, d in zip(todo, answers):
            decisions[k] = d

    @staticmethod
    def _grounded(
        facts: list[ExtractedFact], msgs: Sequence[Message], result: AddResult
    ) -> list[ExtractedFact]:
        """Drop the facts their cited turns do not support, nor the same speaker's turns next to
        them (each logged and counted)."""
        names = [m.name for m in msgs if m.name]
        kept = []
        for f in facts:
            turns, reason = grounded_turns(f.text, msgs, f.source_turns, speakers=names)
            if turns is not None:
                if turns != f.source_turns:  # the speaker's turns next to the cited ones
                    f.source_turns = turns
                    result.widened += 1
                kept.append(f)
            else:
                log.info("rejected ungrounded fact %r: %s", f.text, reason)
                result.events.append(
                    AddEvent(event="REJECT", id=None, text=f.text, category=f.category, reason=reason)
                )
        return kept

    def _pending(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        concepts: list[str],
        when: datetime,
        pending_id: str | None,
        e: LLMError,
        result: AddResult,
    ) -> None:
        """Keep the messages whose extraction failed as pending (their turns, and the facts of
        any window that did not fail, are stored already) and raise
        :class:`ExtractionPendingError` carrying ``result``."""
        if pending_id is not None:
            self.parts.store.note_pending_failure(pending_id, f"{type(e).__name__}: {e}")
            raise ExtractionPendingError(f"still failing: {e}", pending_id=pending_id, result=result) from e
        with self.parts.lock:
            pid = keep_pending(self.parts, scope, msgs, meta, concepts, when, e)
        stored = f"the turns and {len(result.ids)} facts are stored" if result.ids else "the turns are stored"
        raise ExtractionPendingError(
            f"extraction failed ({e}); {stored}, and the {len(msgs)} messages it could not read were "
            f"kept as pending {pid}: Memory.retry_pending() (mem-pipeline retry-pending) extracts "
            "them later",
            pending_id=pid,
            result=result,
        ) from e


def _speaker(msgs: Sequence[Message], f: ExtractedFact) -> str | None:
    return next((msgs[i].name for i in f.source_turns if 0 <= i < len(msgs) and msgs[i].name), None)


def _still_valid(
    parts: Parts,
    scope: Scope,
    d: Decision | None,
    slot: Slot | None = None,
    written: AbstractSet[str] = frozenset(),
    text: str = "",
) -> Decision:
    """A decision made before the lock was taken, checked again under it: a target another
    writer removed or replaced meanwhile turns a SUPERSEDE or UPDATE into an ADD; a statement
    that the value stopped, whose target a fact of this same ``add`` (``written``) already
    replaced ("We moved to Leeds. I don't live in Manchester anymore."), is a NOOP: the change
    is recorded, and "not in Manchester" would only stand beside Leeds as a fact about
    Manchester. A new value of a slot (``text``) whose target this add replaced, leaving a part
    of it that still sets the slot, replaces that part."""
    if d is None:
        return Decision("ADD", reason="undecided")
    if d.target is None or d.action == "ADD":
        return d
    stored = {f.id: f for f in parts.store.get_facts(d.target.scope, [d.target.id, *(f.id for f in d.also)])}
    live = {fid: f for fid, f in stored.items() if f.is_valid}
    if d.target.id not in live:
        gone = stored.get(d.target.id)
        if (
            d.action == "SUPERSEDE"
            and slot is not None
            and slot.stopped
            and gone is not None
            and gone.superseded_by in written
        ):
            return Decision("NOOP", target=gone, reason=f"{d.reason}; this add already replaced it")
        rest = _left_of(parts, scope, gone, slot, written) if d.action == "SUPERSEDE" else None
        if rest is not None and slot is not None:
            # "I'm not at Brennan & Walsh anymore. Started Monday as a compliance analyst at
            # Sierra Pines": the new job replaces what the first sentence left of the old one
            # ("I'm a paralegal"), as it would have replaced the whole
            return slot_keeping(
                Decision("SUPERSEDE", target=rest, reason=f"{d.reason}; what this add left of it"),
                text,
                slot,
            )
        return Decision("ADD", reason=f"{d.reason}; its target changed meanwhile")
    return Decision(
        d.action,
        live[d.target.id],
        d.text,
        d.reason,
        tuple(live[f.id] for f in d.also if f.id in live),
        tuple(k for k in d.keep if k[0] in live and live[k[0]].text == k[1]),  # unchanged since
    )


def _left_of(
    parts: Parts, scope: Scope, gone: StoredFact | None, slot: Slot | None, written: AbstractSet[str]
) -> StoredFact | None:
    """What a fact of this add (``written``) left current of ``gone`` when it replaced it
    (``apply.split_off``: same source turns), if that still sets ``slot``."""
    if gone is None or slot is None or slot.stopped or gone.superseded_by not in written:
        return None
    key = f"{slot.subject}/{slot.family}"
    rests = [
        f
        for f in parts.store.get_facts(scope, sorted(written - {gone.superseded_by}))
        if f.is_valid and f.kind == "fact" and f.slot == key and f.sources == gone.sources
    ]
    return rests[0] if len(rests) == 1 else None


def _distinct(
    facts: list[ExtractedFact], texts: list[str], vectors: Any, threshold: float
) -> tuple[list[ExtractedFact], list[str], Any]:
    """The facts of one add without near-duplicates of each other (cosine >= ``threshold``): the
    first says it, with the source turns of the ones dropped."""
    keep: list[int] = []
    for k in range(len(facts)):
        twin = next(
            (
                j
                for j in keep
                if float(np.dot(vectors[k], vectors[j])) >= threshold
                and not conflicting_specifics(texts[j], texts[k])
            ),
            None,
        )
        if twin is None:
            keep.append(k)
        else:
            facts[twin].source_turns = list(
                dict.fromkeys([*facts[twin].source_turns, *facts[k].source_turns])
            )
    return [facts[k] for k in keep], [texts[k] for k in keep], np.asarray([vectors[k] for k in keep])
