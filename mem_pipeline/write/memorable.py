"""A learned second opinion on what is worth remembering: a logistic regression on a sentence's
embedding, trained on hand-labelled chat sentences (``eval/data/memorable/train.jsonl``, by
``python -m eval.train_memorable``) and shipped as weights (``_data/memorable.json``).

The offline extractor's rules decide first (``text.smalltalk``); this only ever *drops* a
sentence the rules would keep, when the model is confident it says nothing durable ("what a
week honestly", "that's so sweet of you"): word lists cannot know every way to say small talk.
It never drops what a rule already knows the meaning of (:func:`exempt`: an attribute or slot,
a change or correction, a number or date, a health, work or relationship word), and it is off
when the embedder is not the one the weights were trained for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..models import Category
from ..text.opinion import turns_away
from ..text.slots import changes, is_attribute, says_ended, slot_of
from ._weights import DATA, Embeds, read, shipped
from .categories import category_of
from .reconcile import contrasts, has_correction_cue

__all__ = ["MemorableFilter", "exempt", "load_weights"]

# a number, a month or a day of the week: "Due in October.", "3 dogs, 1 cat", "wfh tue-thu"
_SPECIFIC = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|"
    r"\b(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?s?\b",
    re.IGNORECASE,
)
# a name given: "His name is Biscuit", "my cat's called Miso", "a beagle named Brisket"
_NAMING = re.compile(
    r"\b(?i:name(?:['’]s| is| was)|named|called)\s+[A-Z]"
    # one's own named by their name: "my corgi Dubu", "my best mate Ciarán"
    r"|\b(?i:my|our)\s+(?:(?!(?i:to|in|at|on|of|for|from|with|and|the)\b)[a-z]+\s+){1,2}[A-Z][a-z]"
)
# a first person with its subject dropped, in the negative: "can't drive, no licence", "don't
# drink", "never learned to swim"
_CANNOT = re.compile(r"^\s*(?:can['’]?t|cannot|don['’]?t|never|won['’]?t|didn['’]?t)\s+\w+", re.IGNORECASE)
# a habit of one's own: "My order is always a flat white", "I usually cycle in", "we walk the
# dog every morning"
_HABIT = re.compile(
    r"\b(?:i|my|we|our)\b[^.!?]{0,40}?\b"
    r"(?:always|usually|normally|every (?:day|morning|evening|night|week))\b",
    re.IGNORECASE,
)
#: a language or a skill one has, however short ("fluent in tagalog btw", "I speak Farsi",
#: "native Welsh speaker", "grade 8 piano")
_ABILITY = re.compile(
    r"\b(?:fluent in|(?:i|we) (?:can )?speak|native (?:\w+ )?speaker|bilingual|trilingual|"
    r"grade \d+ (?:in )?\w+|black belt|qualified (?:as an? )?\w+|certified \w+|licensed \w+)\b",
    re.IGNORECASE,
)
#: categories whose word rules name what small talk does not: a condition, a job, a relation
#: (biography's rule is "I'm ...", which small talk says as often)
_NAMED = frozenset({Category.HEALTH, Category.WORK, Category.RELATIONSHIP})


def exempt(text: str) -> bool:
    """Whether a rule already knows what ``text`` is about, so that the model is not asked: an
    attribute or a slot ("kosher", "I live in Leeds"), a name given ("His name is Biscuit", "my
    corgi Dubu"), a negation with its "I" dropped ("can't drive"), a habit of one's own ("My
    order is always a flat white"), a change, correction or
    ending ("Sold the Civic last week", "Small correction, he's at Oakfield", "Ines is at St
    Thomas', not Guy's"), a number or a
    date, or a category the word rules name (health, work, relationship)."""
    if is_attribute(text) or slot_of(text) is not None or _SPECIFIC.search(text) or _NAMING.search(text):
        return True
    if _CANNOT.match(text) or _HABIT.search(text) or _ABILITY.search(text):
        return True
    if changes(text) or has_correction_cue(text) or contrasts(text) or says_ended(text) or turns_away(text):
        return True
    return category_of(text) in _NAMED


WEIGHTS = DATA / "memorable.json"


def load_weights(path: Path = WEIGHTS) -> dict[str, Any] | None:
    """The shipped weights (``model_id``, ``w``, ``b``, ``threshold``), or None without them."""
    return read(path)


class MemorableFilter:
    """``drop(texts)``: which of the sentences the rules kept the model says to drop.

    ``embed``: anything with ``embed(texts) -> (n, d) array`` (the store's embedding cache, so
    that the sentences it keeps are not embedded twice); ``model_id``: the embedder's, which
    must be the one the weights were trained for, else nothing is ever dropped."""

    def __init__(self, embed: Embeds, model_id: str, weights: dict[str, Any] | None = None) -> None:
        weights = weights if weights is not None else shipped(WEIGHTS, model_id)
        self._embed = embed
        self.active = weights is not None and weights.get("model_id") == model_id
        if weights is not None and self.active:
            self._w = np.asarray(weights["w"], dtype=np.float32)
            self._b = float(weights["b"])
            self.threshold = float(weights["threshold"])

    def keep_probability(self, texts: Sequence[str]) -> list[float]:
        """P(the sentence says something durable), by the model alone."""
        if not texts:
            return []
        z = self._embed.embed(list(texts)) @ self._w + self._b
        return [1.0 / (1.0 + math.exp(-float(v))) for v in z]

    def drop(self, texts: Sequence[str]) -> list[bool]:
        """For each sentence: True to drop it (the model is below its threshold and the
        sentence is not :func:`exempt`)."""
        if not self.active or not texts:
            return [False] * len(texts)
        asked = [i for i, t in enumerate(texts) if not exempt(t)]
        out = [False] * len(texts)
        for i, p in zip(asked, self.keep_probability([texts[i] for i in asked])):
            out[i] = p < self.threshold
        return out
