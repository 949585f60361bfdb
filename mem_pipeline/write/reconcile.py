"""Reconciliation: what to do with a new fact given the nearest stored facts of its scope.

- similarity >= ``dedupe_threshold`` and no conflicting specifics (numbers, negations, dates,
  names: :func:`~mem_pipeline._text.conflicting_specifics`): REINFORCE the nearest stored fact
  (no new point, no LLM); with conflicting specifics the fact is treated as *related*;
- ``related_threshold`` <= similarity < ``dedupe_threshold``: a *related* fact. With an LLM
  reconciler, one call decides ADD / UPDATE / SUPERSEDE / NOOP. Without one, the offline rule:
  SUPERSEDE the nearest fact of the same category when the new text carries an explicit
  correction cue ("actually", "no longer", "not ... anymore", "moved to", "changed"), else ADD;
- otherwise ADD.

The decision is a plain value; ``Memory`` carries it out and writes the history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..llm import LLMClient, render_prompt
from ..models import ExtractedFact, ReconcileOutput, StoredFact
from ..text.voice import conflicting_specifics, third_person

__all__ = ["Decision", "LLMReconciler", "Reconciler", "has_correction_cue", "offline_decision"]

Action = Literal["ADD", "REINFORCE", "UPDATE", "SUPERSEDE", "NOOP"]


@dataclass(frozen=True)
class Decision:
    action: Action
    target: StoredFact | None = None
    text: str | None = None  # new text for UPDATE (merged), else the fact's own text
    reason: str = ""


class Reconciler(Protocol):
    """Decides for a fact with related (not duplicate) neighbours. ``calls``/``tokens`` count cost."""

    def decide(self, fact: ExtractedFact, neighbours: Sequence[tuple[StoredFact, float]]) -> Decision: ...


_CORRECTION = re.compile(
    r"\b(actually|correction|i meant|no longer|not any ?more|anymore|instead|changed|switched"
    r"|moved to|now (live|work|go|use)|not .{1,30} but|rather than|used to)\b",
    re.IGNORECASE,
)


def has_correction_cue(text: str) -> bool:
    return bool(_CORRECTION.search(text))


def offline_decision(
    fact: ExtractedFact,
    neighbours: Sequence[tuple[StoredFact, float]],
    *,
    dedupe_threshold: float,
    related_threshold: float,
    reconciler: Reconciler | None = None,
) -> Decision:
    """The decision for one fact. ``neighbours`` are (stored fact, cosine), best first."""
    if not neighbours:
        return Decision("ADD", reason="no stored fact is similar")
    best, sim = neighbours[0]
    if sim >= dedupe_threshold:
        conflict = conflicting_specifics(third_person(fact.text), third_person(best.text))
        if not conflict:
            return Decision("REINFORCE", target=best, reason=f"near-duplicate (cosine {sim:.3f})")
        sim = min(sim, dedupe_threshold - 1e-6)  # same topic, different specifics: related
    related = [(f, s) for f, s in neighbours if s >= related_threshold]
    if not related:
        return Decision("ADD", reason=f"nearest cosine {sim:.3f} is below the related threshold")
    if reconciler is not None:
        return reconciler.decide(fact, related)
    if has_correction_cue(fact.text):
        for f, s in related:
            if f.category == fact.category:
                return Decision(
                    "SUPERSEDE", target=f, reason=f"correction cue, same category, cosine {s:.3f}"
                )
    return Decision("ADD", reason=f"related (cosine {sim:.3f}) but no correction cue")


class LLMReconciler:
    """One LLM call for a fact with related stored facts: ``prompts/reconcile.md``.

    Stored ids never reach the model: facts are listed with small integers and the answer's
    ``target`` is mapped back, so the model cannot invent or mistype an id. A target outside
    the list is treated as ADD (logged): nothing is overwritten on a guess.
    """

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def decide(self, fact: ExtractedFact, neighbours: Sequence[tuple[StoredFact, float]]) -> Decision:
        import json

        listed = [f for f, _ in neighbours[:5]]
        stored = [
            {"n": i, "text": f.text, "category": f.category.value, "since": f.valid_from.date().isoformat()}
            for i, f in enumerate(listed)
        ]
        prompt = render_prompt(
            "reconcile",
            new_fact=json.dumps(fact.text, ensure_ascii=False),
            stored=json.dumps(stored, ensure_ascii=False, indent=1),
        )
        out = self.llm.complete(ReconcileOutput, prompt)
        self.calls += out.calls
        self.prompt_tokens += out.prompt_tokens
        self.completion_tokens += out.completion_tokens
        v = out.value
        if v.action == "ADD":
            return Decision("ADD", reason=f"LLM: {v.reason}".strip())
        if v.target is None or not 0 <= v.target < len(listed):
            return Decision("ADD", reason=f"LLM answered {v.action} for no listed fact ({v.target})")
        target = listed[v.target]
        text = v.text if v.action == "UPDATE" and v.text else None
        return Decision(v.action, target=target, text=text, reason=f"LLM: {v.reason}".strip())
