"""The write path: where a turn goes on ``add``.

::

    turns     user turns, checked (``_inputs``)
    extract   the configured extractor (``extract``: the LLM; ``offline``: rules); infer=False
              keeps each user turn verbatim
    ground    facts the user's turns do not support are rejected (``ground``)
    embed     one embedding call for the facts and the names of new concepts
    reconcile per fact: near-duplicate -> REINFORCE; related -> ADD / UPDATE / SUPERSEDE / NOOP
              (``reconcile``)
    apply     the points, concept counts, links and history events (``apply``); a raw turn
              takes its place among the turns before it (``turns``)

Extraction and embedding run outside the store's lock; the writes run under it, journaled, a
few facts at a time, so one large ``add`` never holds every other caller for long. An
extraction that fails keeps the turns as pending (``pending``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .._parts import Parts
from ..errors import ExtractionPendingError, LLMError
from ..models import AddEvent, AddResult, Category, ExtractedFact, Message, Scope, StoredFact
from ..store import VectorLike
from ..text.phrases import candidate_phrases, normalize_concept
from ..text.voice import third_person
from ..upkeep.recovery import journaled
from .apply import apply_decision
from .extract import Extractor
from .ground import ground, grounding_sources
from .pending import keep_pending
from .reconcile import Decision, Reconciler, offline_decision

__all__ = ["WRITE_CHUNK", "Writer"]

log = logging.getLogger(__name__)

#: Facts written per hold of the store's lock (and per journal entry): a large ``add`` lets
#: other callers in between chunks.
WRITE_CHUNK = 16


class Writer:
    """The write path of one :class:`~mem_pipeline.Memory` (see the module docstring)."""

    def __init__(self, parts: Parts, extractor: Extractor, reconciler: Reconciler | None) -> None:
        self.parts = parts
        self.extractor = extractor
        self.reconciler = reconciler

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
        if raw:
            facts = [
                ExtractedFact(
                    text=m.content,
                    category=Category.OTHER,
                    concepts=concepts or candidate_phrases(m.content)[:8],
                    source_turns=[i],
                )
                for i, m in enumerate(msgs)
                if m.role == "user"
            ]
        else:
            facts = self._extract(scope, msgs, meta, concepts, when, pending_id, result)
        if not facts:
            return result
        texts = [self._embed_text(f, msgs, raw) for f in facts]
        # one embedding call per add: the facts, and the names of concepts new to this user
        # (the concept layer then finds their vectors in the cache)
        names = self.parts.links.unknown(scope, [c for f in facts for c in f.concepts])
        vectors = self.parts.embed.embed([*texts, *names])[: len(texts)]
        origin = "raw" if raw else ("llm" if self.extractor.name == "llm" else "offline")
        todo = list(zip(facts, texts, vectors))
        for start in range(0, len(todo), WRITE_CHUNK):
            with self.parts.lock, journaled(self.parts, scope, "add"):
                recent: dict[Any, list[dict[str, Any]]] = {}  # this chunk's view of the latest turns
                for fact, text, vec in todo[start : start + WRITE_CHUNK]:
                    result.events.extend(
                        self._write(scope, msgs, meta, fact, text, vec, origin, when, recent, result)
                    )
        return result

    def _extract(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        concepts: list[str],
        when: datetime,
        pending_id: str | None,
        result: AddResult,
    ) -> list[ExtractedFact]:
        """The extractor's grounded facts, with normalised concepts (the caller's added). On
        failure the turns are kept as pending and :class:`ExtractionPendingError` is raised."""
        try:
            extraction = self.extractor.extract(msgs, when)
        except LLMError as e:
            if pending_id is not None:
                self.parts.store.note_pending_failure(pending_id, f"{type(e).__name__}: {e}")
                raise ExtractionPendingError(f"still failing: {e}", pending_id=pending_id) from e
            with self.parts.lock:
                pid = keep_pending(self.parts, scope, msgs, meta, concepts, when, e)
            raise ExtractionPendingError(
                f"extraction failed ({e}); the turns were kept as pending {pid}: "
                "Memory.retry_pending() (mem-pipeline retry-pending) processes them later",
                pending_id=pid,
            ) from e
        result.llm_calls += extraction.llm_calls
        result.prompt_tokens += extraction.prompt_tokens
        result.completion_tokens += extraction.completion_tokens
        facts = self._grounded(extraction.facts, msgs, result)
        for f in facts:
            f.concepts = [
                c for c in dict.fromkeys([normalize_concept(c) for c in f.concepts] + concepts) if c
            ]
        return facts

    def _write(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        fact: ExtractedFact,
        text: str,
        vec: VectorLike,
        origin: str,
        when: datetime,
        recent: dict[Any, list[dict[str, Any]]],
        result: AddResult,
    ) -> list[AddEvent]:
        """Decide and apply one fact (the caller holds the lock and the journal entry)."""
        speaker = msgs[fact.source_turns[0]].name if fact.source_turns else None
        fmeta = dict(meta)
        if speaker and "speaker" not in fmeta:
            fmeta["speaker"] = speaker
        if origin == "raw":
            decision = Decision("ADD", reason="raw turn")
        else:
            decision = self._decide(scope, fact, vec, result)
        # a raw user turn that answers the assistant's question just before it in this call:
        # the question lends its words to the turn's lexical entry
        i = fact.source_turns[0] if fact.source_turns else 0
        prior = msgs[i - 1] if origin == "raw" and i > 0 else None
        asks = prior is not None and prior.role == "assistant" and "?" in prior.content
        asked = prior.content if prior is not None and asks else None
        return apply_decision(
            self.parts, scope, fact, text, vec, decision, fmeta, when, origin, recent, asked
        )

    def _decide(self, scope: Scope, fact: ExtractedFact, vec: VectorLike, result: AddResult) -> Decision:
        """Reconcile one fact; LLM cost is added to ``result``. If the LLM reconciler fails
        after its retries, the offline rule decides (the fact is never dropped)."""
        cfg = self.parts.config
        neighbours = self._neighbours(scope, vec)
        kw: dict[str, Any] = {
            "dedupe_threshold": cfg.dedupe_threshold,
            "related_threshold": cfg.related_threshold,
        }
        rec = self.reconciler
        before = (
            getattr(rec, "calls", 0),
            getattr(rec, "prompt_tokens", 0),
            getattr(rec, "completion_tokens", 0),
        )
        try:
            decision = offline_decision(fact, neighbours, reconciler=rec, **kw)
        except LLMError as e:
            log.warning("LLM reconciliation failed, offline rule used: %s", e)
            d = offline_decision(fact, neighbours, **kw)
            decision = Decision(d.action, d.target, d.text, f"LLM failed ({e}); offline rule: {d.reason}")
        result.llm_calls += getattr(rec, "calls", 0) - before[0]
        result.prompt_tokens += getattr(rec, "prompt_tokens", 0) - before[1]
        result.completion_tokens += getattr(rec, "completion_tokens", 0) - before[2]
        return decision

    def _neighbours(self, scope: Scope, vec: VectorLike) -> list[tuple[StoredFact, float]]:
        cands = self.parts.store.search(scope, dense=vec, sparse=None, limit=5)
        pairs = [(c.fact, float(c.dense or 0.0)) for c in cands]
        pairs.sort(key=lambda p: p[1], reverse=True)
        return pairs

    @staticmethod
    def _grounded(
        facts: list[ExtractedFact], msgs: Sequence[Message], result: AddResult
    ) -> list[ExtractedFact]:
        """Drop facts the user's own words do not support (each logged and counted)."""
        user_texts = grounding_sources(msgs)
        kept = []
        for f in facts:
            reason = ground(f.text, user_texts)
            if reason is None:
                kept.append(f)
            else:
                log.info("rejected ungrounded fact %r: %s", f.text, reason)
                result.events.append(
                    AddEvent(event="REJECT", id=None, text=f.text, category=f.category, reason=reason)
                )
        return kept

    @staticmethod
    def _embed_text(fact: ExtractedFact, msgs: Sequence[Message], raw: bool) -> str:
        """What is embedded and indexed: a raw turn as "speaker: text"; an inferred fact in the
        third person ("I" -> "the user"), so facts compare in one voice (see
        ``eval/dedupe_threshold.py``: paraphrase median cosine 0.70 -> 0.89)."""
        if raw:
            name = msgs[fact.source_turns[0]].name if fact.source_turns else None
            return f"{name}: {fact.text}" if name else fact.text
        return third_person(fact.text)
