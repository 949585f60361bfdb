"""The category a fact's slot tells (``text.slots``): where one lives is biography, one's job
work, one's diet a preference (health when it is medical), someone else's attribute a
relationship; then keyword rules, the first that matches. Shared by the offline extractor and
the LLM path,
where a slot the rules recognise outranks the model's label."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..models import Category
from ..text.dates import date_ranges
from ..text.slots import PROFESSIONS, STEP_KIN, slot_of
from ._weights import DATA, Embeds, shipped

__all__ = [
    "CATEGORY_WEIGHTS",
    "CategoryModel",
    "categories_of",
    "category_of",
    "guess_category",
    "slot_category",
    "timed",
]

# a diet for medical reasons is health; one chosen for ethics or taste, a preference
_MEDICAL = re.compile(r"\b(allerg\w*|intoleran\w*|coeliac|celiac|diabet\w*|doctor|medical|ibs|crohn)", re.I)
_BY_SLOT = {
    "residence": Category.BIOGRAPHY,
    "age": Category.BIOGRAPHY,
    "work": Category.WORK,
    "shift": Category.WORK,
    "arrangement": Category.WORK,
    "relationship": Category.RELATIONSHIP,
    "smoking": Category.HEALTH,
    "drinking": Category.HEALTH,
    "reply_style": Category.PREFERENCE,
    "address": Category.PREFERENCE,
}


def slot_category(text: str, speaker: str = "the user") -> Category | None:
    """The category of the slot ``text`` sets, or None when it sets none the rules map (pure)."""
    slot = slot_of(text, speaker)
    if slot is None:
        return None
    if slot.subject != speaker.lower():
        return Category.RELATIONSHIP
    if slot.family == "diet":
        return Category.HEALTH if _MEDICAL.search(text) else Category.PREFERENCE
    return _BY_SLOT.get(slot.family)


_WORKS_AS = re.compile(
    rf"\b(?:i['’]?m|i am|works? as|worked as|working as|job as|became|is) an? (?:[\w-]+ ){{0,2}}"
    rf"(?:{PROFESSIONS})s?\b",
    re.IGNORECASE,
)

_KIN = (
    r"wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|father|parent|mom|mum|dad|sister|"
    r"brother|twin|cousin|aunt|uncle|niece|nephew|in-law|colleague|neighbou?r|roommate|flatmate|"
    rf"{STEP_KIN}"
)

# Category rules: the first rule whose pattern matches wins. Transparent on purpose.
_CATEGORY_RULES: list[tuple[Category, re.Pattern[str]]] = [
    (Category.WORK, _WORKS_AS),
    (
        Category.HEALTH,
        re.compile(
            r"\b(allerg\w*|asthma\w*|colou?r[- ]?blind|dyslexi\w*|epilep\w*|diabet\w*|"
            r"doctor|medication|medicine|pills?|injur\w*|sick|ill"
            r"|illness|therapy|therapist|surgery|pain|migraine\w*|vegan|vegetarian|gluten|lactose"
            r"|diet|blood|pregnan\w*|hospital|symptom\w*|sleep|insomnia|anxiety|depress\w*|sprain\w*"
            r"|coeliac|celiac|intoleran\w*|diagnos\w*|fractur\w*|concussion|physio\w*|crutches|stitches|epipen|inhaler|(?:broke|broken|twisted|"
            r"dislocated|pulled|tore|torn|hurt) (?:my |his |her |a )?(?:wrist|ankle|arm|leg|knee|back"
            r"|shoulder|hip|finger|toe|foot|hand|collarbone|rib|neck|hamstring|acl))\b",
            re.I,
        ),
    ),
    (
        Category.PLAN,
        re.compile(
            r"\b(plan(ning)? to|going to|gonna|will(?! never)|want to|wants to|hope to|intend\w*|next "
            r"(week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow"
            r"|goal|aim to|schedul\w*|appointment|deadline|someday|soon"
            r"|i['’]?m (?:flying|travel+ing|heading|driving|off|going) to)\b",
            re.I,
        ),
    ),
    (
        Category.RELATIONSHIP,
        re.compile(
            rf"\b({_KIN}|kids?|children|sibling\w*|friend\w*|grandm\w*|grandp\w*|married|divorc\w*"
            r"|dating|fianc\w*|family"
            # several of one's own ("my twin sisters"), not anyone's ("her neighbours")
            rf"|(?:my|our)\s+(?:[\w-]+\s+)?(?:{_KIN})s|(?:my|our)\s+(?:[\w-]+\s+)?wives)\b",
            re.I,
        ),
    ),
    (
        Category.WORK,
        re.compile(
            r"\b(work(ing)? (at|for|as|on)|job|employer|boss|manager|company|startup|office|career"
            r"|for a living"
            rf"|project|client|team|{PROFESSIONS}|salary|promot\w*|hired|retired|retirement"
            r"|intern\w*|freelanc\w*|colleagues?|meeting)\b",
            re.I,
        ),
    ),
    (
        Category.PREFERENCE,
        re.compile(
            r"\b(love|loves|(?<!runs )(?<!looks )(?<!feels )(?<!seems )(?<!sounds )like(?! new\b)|likes"
            r"|enjoy\w*|prefer\w*|favou?rite|hate|hates|dislike\w*|can['’]?t stand|cannot stand"
            r"|can['’]?t bear"
            r"|unbearable|detest\w*|loathe\w*"
            r"|fan of|into|adore|rather|fond of|crave|obsessed)\b",
            re.I,
        ),
    ),
    (
        Category.SKILL,
        re.compile(
            r"\b(learn\w*|teach(?:ing)? (?:myself|herself|himself|themselves)|"
            r"speak\w*|fluent|know how|can (code|cook|play|speak|drive|swim)|skill\w*"
            r"|certified|degree|studying|practic\w*|course|lessons?)\b",
            re.I,
        ),
    ),
    (
        Category.EVENT,
        re.compile(
            r"\b(yesterday|last (week|month|year|night|weekend)|ago|went to|visited|attended|ran|won"
            r"|finished|graduated|celebrated|moved|bought|got (married|engaged|promoted)|in (19|20)\d\d)\b",
            re.I,
        ),
    ),
    (
        Category.BIOGRAPHY,
        re.compile(
            r"\b(i am|i'm|born|years old|grew up|live[sd]? in|from|my name|nationality|citizen"
            r"|hometown|native|lives?|age)\b",
            re.I,
        ),
    ),
]


def guess_category(text: str) -> Category:
    """The first category whose keyword rule matches; ``other`` when none does."""
    for cat, pattern in _CATEGORY_RULES:
        if pattern.search(text):
            return cat
    return Category.OTHER


def category_of(text: str, speaker: str = "the user", model: CategoryModel | None = None) -> Category:
    """The category of a fact, by what it is about first (:func:`slot_category`: where one
    lives -> biography, one's job -> work, a diet -> preference, or health when it is medical;
    a condition of one's own -> health), then by ``model`` when given, else by the keyword rules
    (:func:`guess_category`).
    ``speaker``: whom the first person is."""
    return categories_of([text], speaker, model)[0]


# a condition of one's own, said with "I'm" or bare: "I'm red-green colour-blind", "short-sighted
# btw", "I've had asthma since I was a kid" (a relation's is about the relation)
_CONDITIONS = (
    r"asthma\w*|diabet\w*|epilep\w*|coeliac|celiac|dyslexi\w*|autis\w*|adhd|colou?r[- ]?blind|"
    r"(?:short|near|long|far)[- ]?sighted|deaf|hard of hearing|lactose[- ]intolerant|"
    r"(?:allergic|intolerant) to|migraines?|arthritis|insomnia|anxiety|depression|ibs|crohn\w*"
)
_OWN_CONDITION = re.compile(
    rf"^\s*(?:{_CONDITIONS})\b"
    rf"|\b(?:i['’]?m|i am)\s+(?:[\w-]+\s+){{0,2}}?(?:{_CONDITIONS})\b"
    rf"|\b(?:i['’]ve (?:got|had)|i have|i get)\s+(?:(?:bad|chronic|severe|mild)\s+)?(?:{_CONDITIONS})\b",
    re.IGNORECASE,
)


# what one can do or is learning, said of oneself: an instrument one plays, a language one
# speaks or learns ("I play the cavaquinho in a samba group", "I started learning Mi'kmaq")
_INSTRUMENTS = (
    r"guitar|piano|violin|viola|cello|drums|bass|ukulele|flute|clarinet|saxophone|sax|trumpet|harp|"
    r"accordion|banjo|mandolin|charango|cavaquinho|sitar|oboe|trombone|keyboard|organ|bagpipes|fiddle"
)
_OWN_SKILL = re.compile(
    r"\b(?i:i|we)\s+(?i:(?:also|still|now|just|recently)\s+)?"
    rf"(?:(?i:play|played)\s+(?i:the\s+)?(?:[\w'’-]+\s+){{0,2}}?(?i:{_INSTRUMENTS})\b"
    r"|(?i:am learning|['’]m learning|started learning|began learning|(?:have )?been learning|"
    r"am teaching myself|['’]m teaching myself|teach myself|speak|am fluent in|['’]m fluent in)\s+"
    r"(?i:the\s+)?(?:[\w'’-]+\s+){0,2}?"
    rf"(?:[A-Z][\w'’-]+|(?i:{_INSTRUMENTS}))\b)"
    rf"|\b(?i:teaching (?:myself|herself|himself) (?:the\s+)?(?:[\w'’-]+\s+){{0,2}}?\w+)"
)


def categories_of(
    texts: Sequence[str], speaker: str = "the user", model: CategoryModel | None = None
) -> list[Category]:
    """:func:`category_of` for several facts, the model asked once for all that no slot or
    condition of one's own tells."""
    out: list[Category | None] = [
        slot_category(t, speaker)
        or (Category.HEALTH if _OWN_CONDITION.search(t) else None)
        or (Category.SKILL if _OWN_SKILL.search(t) else None)
        for t in texts
    ]
    free = [i for i, c in enumerate(out) if c is None]
    labels = model.predict([texts[i] for i in free]) if model else [guess_category(texts[i]) for i in free]
    for i, c in zip(free, labels):
        out[i] = c
    return [c or Category.OTHER for c in out]


CATEGORY_WEIGHTS = DATA / "categories.json"


class CategoryModel:
    """A learned category for a sentence: multinomial logistic regression on its embedding,
    trained on hand-labelled sentences (``eval/data/categories/``, ``python -m
    eval.train_categories``), weights shipped in ``_data/categories.json`` for the default local
    embedder. ``embed``: anything with ``embed(texts) -> (n, d) array`` (the store's embedding
    cache: a fact it labels is embedded once)."""

    def __init__(self, embed: Embeds, weights: dict[str, Any]) -> None:
        self._embed = embed
        self.labels = [Category(v) for v in weights["labels"]]
        self._w = np.asarray(weights["w"], dtype=np.float32)
        self._b = np.asarray(weights["b"], dtype=np.float32)

    @classmethod
    def shipped(cls, embed: Embeds, model_id: str, path: Path = CATEGORY_WEIGHTS) -> CategoryModel | None:
        """The shipped model for the embedder ``model_id``, or None (no weights, or weights of
        another embedder)."""
        weights = shipped(path, model_id)
        return cls(embed, weights) if weights is not None else None

    def predict(self, texts: Sequence[str]) -> list[Category]:
        if not texts:
            return []
        scores = self._embed.embed(list(texts)) @ self._w + self._b
        return [self.labels[int(i)] for i in np.argmax(scores, axis=1)]


#: A time ahead: a future form, a day or week to come, something booked or due.
_AHEAD = re.compile(
    r"\b(?:will|won['’]t|going to|gonna|tomorrow|tonight|upcoming|next (?:week|weekend|month|year|time|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|this (?:coming )?(?:week|weekend|month|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|booked (?:for|in)|scheduled for|is due|due (?:on|in)|"
    # "on Saturday", but not a day written with its date ("on Saturday 14 March 2026", as a
    # relative day said is rewritten): whether that is ahead is the date's to say
    r"on (?:mon|tues|wednes|thurs|fri|satur|sun)day)\b(?! \d{1,2} [A-Za-z]+ (?:19|20)\d\d)|\w['’]ll\b|"
    r"\b(?:am|is|are|['’]m|['’]re|['’]s)\s+(?:\w+ing)\s+(?:in|from|to|on|for|over|out|up|down|back)\b",
    re.IGNORECASE,
)
#: A past form of a verb (not "booked", "scheduled", "planned": what they name is ahead).
_PAST = re.compile(
    r"\b(?:was|were|did|had|went|took|ran|got|made|won|lost|met|saw|came|bought|sold|left|broke|fell|"
    r"began|became|gave|wrote|flew|drove|(?!booked\b|scheduled\b|planned\b|excited\b|tired\b)\w{3,}ed)\b",
    re.IGNORECASE,
)
#: A date written with its year (relative dates are written so: "yesterday" -> "on 14 July 2025").
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def timed(category: Category, text: str, now: datetime) -> Category:
    """A plan or an event by when it is (pure): a fact labelled a plan that names a date, with
    its year, no later than the day it was said, and nothing ahead, happened (an event:
    "Passed my driving test on 14 July 2025!!"); one labelled an event that says something is
    ahead and nothing of the past is a plan ("Taking my gran to the Ritz on Sunday", "My mum is
    flying in on the 3rd"). Other categories, and what says neither, are left as they are."""
    if category is Category.PLAN and _YEAR.search(text) and not _AHEAD.search(text):
        dates = date_ranges(text, now)
        if dates and all(start <= now + timedelta(hours=12) for start, _ in dates):
            return Category.EVENT
    if category is Category.EVENT and _AHEAD.search(text) and not _PAST.search(text):
        return Category.PLAN
    return category
