"""A learned answer to "does this statement replace that stored fact?": two logistic regressions
on what the rules see in the pair, the new statement's words and the two sentences' embeddings,
trained on hand-labelled pairs (``eval/data/replaces/``, by ``python -m eval.train_replaces``)
and shipped as weights (``_data/replaces.json``).

The offline reconciler's rules (``write.reconcile``) know changes by their cues ("actually",
"moved to", "no longer") and by slots. People say many changes in other words: "these days
it's a crisp Albariño for me" after "I'm strictly a red wine person", "back on oat milk for
good" after "switched to soya milk", "I've come round to hotels" after "I book Airbnbs". Where
the rules would ADD, this model is asked about the nearest stored facts of the same person; one
it is confident the statement replaces is superseded, and the clauses of that fact the
statement does not touch are kept (``clauses.remainder``). It also keeps a sentence the
memorable filter doubts when the sentence replaces a stored fact (a change is worth
remembering). It is used on the offline path only (an LLM reconciler decides there) and is off
when the embedder is not the one the weights were trained for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from ..models import ExtractedFact, StoredFact
from ..text.opinion import polarity, turns_away
from ..text.slots import changes, says_current, says_ended, slot_of, tells_history
from ._about import names, person, topic
from ._weights import DATA, Embeds, shipped
from .clauses import remainder
from .ground import puts_off
from .reconcile import Decision, has_correction_cue

__all__ = ["ReplaceModel", "pair_features", "related_features", "rule_features", "words"]

WEIGHTS = DATA / "replaces.json"
#: below this cosine a stored fact is not asked about: the statement is about something else
MIN_COSINE = 0.2
#: how many of the nearest stored facts are asked about
ASKED = 3


#: a statement that wonders or plans has not changed anything yet ("thinking of switching to tea")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|might|maybe|thinking (?:of|about)|considering|wondering|should i|would)\b", re.IGNORECASE
)
#: another person named by relation ("my brother just moved to York" ends nothing of mine)
_RELATION = re.compile(
    r"\b(?:my|our) (?:brother|sister|mum|mom|dad|father|mother|son|daughter|wife|husband|partner|"
    r"friend|boss|flatmate|roommate|cousin|aunt|uncle|gran\w*|colleague)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z']+")
#: what adds to what holds rather than replacing it ("... a dance studio in town too")
#: (an additive "too" ends its clause: "missed it too much" adds nothing)
_ADDS = re.compile(
    r"\btoo\b(?=\s*(?:[.!,;]|$))|\b(?:also|as well|on top of|in addition|another|besides)\b", re.IGNORECASE
)


def words(text: str) -> set[str]:
    """The words and word pairs of ``text``, lowercased (the model's vocabulary is of these)."""
    w = _WORD.findall(text.lower())
    return set(w) | {f"{a} {b}" for a, b in pairwise(w)}


def rule_features(old: str, new: str, cosine: float) -> list[float]:
    """What the rules see in a pair (pure): the cosine; the new statement's change, ending,
    current-value, history and turning-away cues; opposite opinions; the same slot, and a new
    value of it; shared topic words and names; a question; a hypothetical; another person."""
    mine, theirs = slot_of(new), slot_of(old)
    same_slot = bool(mine and theirs and mine.family == theirs.family)
    return [
        cosine,
        float(has_correction_cue(new)),
        float(changes(new)),
        float(says_ended(new)),
        float(says_current(new)),
        float(tells_history(new)),
        float(turns_away(new)),
        float(polarity(new) == -polarity(old) != 0),
        float(same_slot),
        float(same_slot and mine is not None and theirs is not None and mine.value != theirs.value),
        min(len(topic(old) & topic(new)), 3) / 3,
        float(bool(names(old) & names(new))),
        float("?" in new),
        float(bool(_HYPOTHETICAL.search(new))),
        float(bool(_RELATION.search(new)) and not _RELATION.search(old)),
    ]


def pair_features(
    olds: Sequence[str], news: Sequence[str], u: np.ndarray, v: np.ndarray, index: Mapping[str, int]
) -> np.ndarray:
    """The model's features for pairs (pure): :func:`rule_features`, which words of the
    vocabulary (``index``: word -> its column) the new statement says, and the difference of the
    two unit vectors ``v - u``, (n, d) each (which way the statement moved from the stored one)."""
    u, v = np.atleast_2d(u), np.atleast_2d(v)
    rows = []
    for k, (old, new) in enumerate(zip(olds, news)):
        said = np.zeros(len(index))
        for w in words(new):
            if w in index:
                said[index[w]] = 1.0
        rows.append(np.concatenate([rule_features(old, new, float(u[k] @ v[k])), said, v[k] - u[k]]))
    return np.asarray(rows, dtype=np.float64)


def related_features(olds: Sequence[str], news: Sequence[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The relatedness half's features (pure): the cosine, shared topic words and names, and the
    element-wise product of the two unit vectors (which things both are about)."""
    u, v = np.atleast_2d(u), np.atleast_2d(v)
    rows = [
        [float(u[k] @ v[k]), min(len(topic(o) & topic(n)), 3) / 3, float(bool(names(o) & names(n)))]
        for k, (o, n) in enumerate(zip(olds, news))
    ]
    return np.hstack([np.asarray(rows, dtype=np.float64), 10.0 * u * v])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


class ReplaceModel:
    """``probability(olds, new)``: P(``new`` makes each stored sentence no longer true), the
    product of two logistic regressions: that ``new`` changes what ``old`` says, given that they
    are about the same thing (trained on the hand-labelled pairs), and that they are about the
    same thing at all (the hand-labelled pairs against unrelated pairings of their sentences).

    ``embed``: anything with ``embed(texts) -> (n, d) array`` of unit vectors (the store's
    embedding cache: the facts it compares were embedded when they were written)."""

    def __init__(self, embed: Embeds, weights: dict[str, Any]) -> None:
        self._embed = embed
        self._change = (np.asarray(weights["change"]["w"]), float(weights["change"]["b"]))
        self._related = (np.asarray(weights["related"]["w"]), float(weights["related"]["b"]))
        self.threshold = float(weights["threshold"])
        #: the vocabulary's words, each with its column (built once, not per pair)
        self._index = {w: i for i, w in enumerate(weights["vocabulary"])}

    @classmethod
    def shipped(cls, embed: Embeds, model_id: str, path: Path = WEIGHTS) -> ReplaceModel | None:
        """The shipped model for the embedder ``model_id``, or None (no weights, or weights of
        another embedder)."""
        weights = shipped(path, model_id)
        return cls(embed, weights) if weights is not None else None

    def probability(self, olds: Sequence[str], new: str) -> list[float]:
        if not olds:
            return []
        vecs = self._embed.embed([*olds, new])
        u, v = vecs[:-1], np.repeat(vecs[-1:], len(olds), axis=0)
        news = [new] * len(olds)
        (wc, bc), (wr, br) = self._change, self._related
        change = _sigmoid(pair_features(olds, news, u, v, self._index) @ wc + bc)
        related = _sigmoid(related_features(olds, news, u, v) @ wr + br)
        return [float(p) for p in change * related]

    def best(
        self, fact: ExtractedFact, neighbours: Sequence[tuple[StoredFact, float]]
    ) -> tuple[float, StoredFact, float] | None:
        """(probability, stored fact, cosine) for the stored fact ``fact`` most confidently
        replaces, among its nearest ``neighbours`` (fact, cosine) of the same person, when the
        model is above its threshold; else None."""
        text = fact.text
        if puts_off(text) or "?" in text or tells_history(text) or _ADDS.search(text):
            # "hmm dunno, let me check with Aiko first", a question, "used to ... as a kid",
            # "these days I run a dance studio too": none of them ends anything
            return None
        me = person(fact.subject)
        mine = slot_of(fact.text)
        asked = [
            (f, s)
            for f, s in neighbours[:ASKED]
            if s >= MIN_COSINE
            and f.is_valid
            and not (me and (other := person(f.metadata.get("speaker"))) and other != me)
            # a new job ends no home: a fact whose slot the rules know (where one lives, works,
            # one's diet) is replaced by a statement of that slot or not by the model
            and ((theirs := slot_of(f.text)) is None or (mine is not None and theirs.family == mine.family))
        ]
        if not asked:
            return None
        probs = self.probability([f.text for f, _ in asked], fact.text)
        p, (target, sim) = max(zip(probs, asked), key=lambda t: t[0])
        return (p, target, sim) if p >= self.threshold else None

    def supersede(
        self, fact: ExtractedFact, neighbours: Sequence[tuple[StoredFact, float]]
    ) -> Decision | None:
        """A SUPERSEDE of the stored fact :meth:`best` finds, or None. The superseded fact keeps
        the clauses the model does not say ``fact`` replaces ("I'm a physio at a clinic in Cork,
        and I play camogie" keeps the camogie when a move to Limerick ends the Cork clause)."""
        found = self.best(fact, neighbours)
        if found is None:
            return None
        p, target, sim = found
        d = Decision("SUPERSEDE", target=target, reason=f"learned: replaces it (p {p:.2f}, cosine {sim:.3f})")
        rest = remainder(
            target.text, lambda clause: self.probability([clause], fact.text)[0] >= self.threshold
        )
        return replace(d, keep=((target.id, target.text, rest),)) if rest is not None else d
