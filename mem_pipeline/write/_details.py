"""Corrections that change one detail of a stored fact and leave the rest standing (pure):
what someone is, by contrast ("She's a doula, not a midwife"), one thing switched for another
("switched from violin to cello"), a new count ("so 3 cats now"), a date that moved ("pushed to
20 September", "they put me on 16 march"), was said wrong ("I misread the e-ticket: she lands on
11 January") or is denied by contrast ("It's Friday the 13th, not Thursday"), one day of a
habit for another ("my Tuesday swim is on Wednesday now"), a place
taken instead ("We'll spend the anniversary weekend in Salzburg instead"). Each gives the
related stored fact's text with the new detail in place of the old; the reconciler makes it an
UPDATE (``write.reconcile.decide``), the old text kept in history."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ..models import StoredFact
from ..text.dates import DAY_OF_MONTH, WEEKDAY
from ..text.lexical import STOPWORDS
from ._about import CALENDAR, SELF, names, topic

__all__ = ["Rewrite", "changed_detail"]


class Rewrite(NamedTuple):
    """A stored fact (``target``) with one detail changed: its new ``text``, and why."""

    target: StoredFact
    text: str
    reason: str


def changed_detail(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """The rewrite of one of ``neighbours`` (stored facts as (fact, cosine), best first) that
    ``text`` changes one detail of, by the first rule of the module docstring that applies."""
    return (
        _by_role(text, neighbours)
        or _by_switch(text, neighbours)
        or _by_count(text, neighbours)
        or _by_date(text, neighbours)
        or _by_day_contrast(text, neighbours)
        or _by_weekday(text, neighbours)
        or _by_place(text, neighbours)
    )


# "She's a doula, not a midwife", "I'm a sous-chef, not a line cook": what one is, by contrast
_NOT_ROLE = re.compile(
    r"(?:^|(?<=[,.;:!?] ))(?P<who>[\w'’-]+(?: [\w'’-]+)?)(?:['’]s| is| was|['’]m| am|['’]re| are) "
    r"(?P<new>an? [a-z][\w-]*(?: [a-z][\w-]*)?),? not an? (?P<old>[a-z][\w-]*(?: [a-z][\w-]*)?)\b"
)


def _by_role(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A correction by contrast of what someone is ("She's a doula, not a midwife"): a rewrite
    of the related stored fact that says the old role, with the new one in its place, when both
    are about the same side (the person, or someone else)."""
    m = _NOT_ROLE.search(text)
    if m is None:
        return None
    old, new = m.group("old"), m.group("new")
    said = re.compile(rf"\ban? {re.escape(old)}\b", re.I)
    mine = bool(SELF.match(m.group("who")))
    for f, sim in neighbours:
        if sim < 0.3 or not said.search(f.text) or bool(SELF.match(f.text)) != mine:
            continue
        fixed = said.sub(lambda _: new, f.text, count=1)
        return Rewrite(f, fixed, f"says {new}, not {old} (cosine {sim:.3f})")
    return None


# "she switched from violin to cello", "we've gone from two cars to one": the one thing that
# changed, said with what it was
_FROM_TO = re.compile(
    r"\b(?:switched|swapped|changed|moved|gone|went|upgraded|downgraded|converted)(?: \w+)? (?:over )?"
    r"from (?:the |a |an |my |her |his |their )?(?P<old>[\w-]+(?: [\w-]+)?) "
    r"(?:to|for) (?:the |a |an |my |her |his |their )?(?P<new>[\w-]+(?: [\w-]+)?)\b",
    re.I,
)


_NUMBER = r"\d+|one|two|three|four|five|six|seven|eight|nine|ten"
# "so 3 cats now", "we're down to two cars": how many, said as what holds now
_COUNT_NOW = re.compile(
    rf"\b(?P<n>{_NUMBER}) (?P<what>[a-z]{{3,}}s)\b(?=.*\b(?:now|these days|nowadays|anymore|any more)\b)"
    rf"|\b(?:now|down to|up to) (?:have |got )?(?P<n2>{_NUMBER}) (?P<what2>[a-z]{{3,}}s)\b",
    re.I,
)


def _by_count(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A count that changed ("guess who adopted a third, so 3 cats now" after "we have 2 cats,
    tofu and miso"): a rewrite of the related stored fact that gives another count of the same
    things, with the new number in its place; what else it says (their names) still holds."""
    m = _COUNT_NOW.search(text)
    if m is None:
        return None
    n, what = (m.group("n"), m.group("what")) if m.group("n") else (m.group("n2"), m.group("what2"))
    count = re.compile(rf"\b(?:{_NUMBER}) {re.escape(what)}\b", re.I)
    for f, sim in neighbours:
        found = count.search(f.text) if sim >= 0.3 else None
        if found is None or found.group().split()[0].lower() == n.lower():
            continue
        fixed = f"{f.text[: found.start()]}{n} {what}{f.text[found.end() :]}"
        return Rewrite(f, fixed, f"now {n} {what} (cosine {sim:.3f})")
    return None


# "the wedding is pushed to 20 September", "my appointment got moved to March 3rd"
_DATE_MOVED = re.compile(
    # (what moved may sit between: "they've pushed my knee op back to 27 April")
    rf"\b(?:pushed|moved|postponed|rescheduled|changed|brought forward|put back|delayed)"
    rf"(?: (?:my|our|the|his|her|their|it|this|that)(?: [\w'’-]+){{0,3}})?(?: back| forward)? "
    rf"(?:to|till|until|for) (?:the )?(?P<day>{DAY_OF_MONTH})",
    re.I,
)


# "the airline cancelled it and they put me on 16 march": rebooked to another day
_REBOOKED = re.compile(
    rf"\b(?:put|rebooked|booked|moved|switched) (?:me|us) (?:on|onto|for) (?:the )?(?P<day>{DAY_OF_MONTH})",
    re.I,
)
#: what a rebooking is of: a journey (its words tie "they put me on 16 march" to the flight)
_JOURNEY = re.compile(
    r"\b(?:fl(?:y|ying|ies|ew|ight|ights)|airline|plane|train|bus|coach|ferry|ticket)\b", re.I
)
_DAY = re.compile(DAY_OF_MONTH, re.I)
# a day said by its weekday, with its date or not: "Friday the 13th", "Thursday", "the 13th"
_A_DAY = rf"(?:{WEEKDAY}(?:,? the [0-3]?\d(?:st|nd|rd|th))?|the [0-3]?\d(?:st|nd|rd|th)|{DAY_OF_MONTH})"
# "It's Friday the 13th, not Thursday.": the day put right by contrast
_NOT_DAY = re.compile(
    rf"\b(?:it['’]s|it is|is|on) (?:on )?(?P<new>{_A_DAY}),? not (?:on )?(?P<old>{_A_DAY})\b", re.I
)
_DAY_SAID = re.compile(rf"(?<![\w-]){_A_DAY}", re.I)
#: A slip of the speaker's own, put right: "I misread the e-ticket", "I got the date wrong".
_SLIP = re.compile(
    r"\b(?:misread|misremembered|mixed up|got (?:it|that|the \w+) wrong|i was wrong|"
    r"wrong (?:date|day)|i meant|correction)\b",
    re.I,
)


def _by_date(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A date that moved ("Valeria's wedding is pushed to 20 September" after "My sister
    Valeria is marrying on 14 of June in Oaxaca") or a journey rebooked ("they put me on 16
    march" after "I fly to Montreal on 14 march"): a rewrite of the related stored fact that
    gives one date, of the same people or things (or, rebooked, a journey too), with the new
    date in its place; where, who and the rest still hold."""
    m = _DATE_MOVED.search(text)
    rebooked = _REBOOKED.search(text) if m is None else None
    m = m or rebooked
    day, why = (m["day"], "moved to") if m else (None, "")
    if day is None and _SLIP.search(text):  # "I misread the e-ticket: she lands on 11 January."
        said = list(_DAY.finditer(text))
        day, why = (said[0].group(), "said wrong: it is") if len(said) == 1 else (None, "")
    if day is None:
        return None
    words = set(re.findall(r"\w+", text.lower()))
    for f, sim in neighbours:
        dates = list(_DAY.finditer(f.text)) if sim >= 0.3 else []
        journey = bool(rebooked) and bool(_JOURNEY.search(f.text)) and bool(_JOURNEY.search(text))
        if len(dates) != 1 or not (names(f.text) & words or topic(f.text) & topic(text) or journey):
            continue
        old = dates[0]
        if old.group().lower() == day.lower():
            continue
        fixed = f"{f.text[: old.start()]}{day}{f.text[old.end() :]}"
        return Rewrite(f, fixed, f"{why} {day} (cosine {sim:.3f})")
    return None


# "my Tuesday swim is on Wednesday now", "our Monday class moved to Thursday": one day of a
# habit for another
_DAY_SWITCHED = re.compile(
    rf"\b(?:my|our|the|his|her|their) (?P<old>{WEEKDAY})s? (?P<what>[a-z][\w-]*(?: [a-z][\w-]*)?) "
    rf"(?:is|are|has moved|have moved|moved|got moved|changed|switched)(?: now)? (?:on |to |onto )?"
    rf"(?:a |the )?(?P<new>{WEEKDAY})s?\b",
    re.I,
)


def _by_weekday(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """One day of a habit moved to another ("my Tuesday swim is on Wednesday now" after "I swim
    at the pool on Tuesdays and Thursdays"): a rewrite of the related stored fact that gives
    the old day once, with the new day in its place; the other days and the rest still hold."""
    m = _DAY_SWITCHED.search(text)
    if m is None:
        return None
    old, new = m["old"].lower(), m["new"].lower()
    if old == new:
        return None
    said = re.compile(rf"\b{old}(s?)\b", re.I)
    for f, sim in neighbours:
        found = list(said.finditer(f.text))
        if sim < 0.3 or len(found) != 1 or re.search(rf"\b{new}s?\b", f.text, re.I):
            continue
        d = found[0]
        day = new.capitalize() if d.group()[0].isupper() else new
        fixed = f"{f.text[: d.start()]}{day}{d.group(1)}{f.text[d.end() :]}"
        return Rewrite(f, fixed, f"{m['what']} from {old} to {new} (cosine {sim:.3f})")
    return None


def _by_day_contrast(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A day put right by contrast ("It's Friday the 13th, not Thursday." after "Booked my
    flight to Kisumu for my grandmother's 90th, Thursday the 12th"): a rewrite of the related
    stored fact that gives the day the correction denies, with the day it gives in its place.
    The denied day, said in both, ties them even when their words are far apart (cosine .27)."""
    m = _NOT_DAY.search(text)
    if m is None:
        return None
    new, old = m["new"], m["old"]
    first = re.match(r"\w+", old)
    if first is None:
        return None
    word = re.compile(rf"\b{re.escape(first.group())}\b", re.I)
    for f, sim in neighbours:
        if sim < 0.2:
            continue
        spans = [d for d in _DAY_SAID.finditer(f.text) if word.search(d.group())]
        if len(spans) != 1 or re.search(rf"\b{re.escape(new)}\b", f.text, re.I):
            continue
        d = spans[0]
        fixed = f"{f.text[: d.start()]}{new}{f.text[d.end() :]}"
        return Rewrite(f, fixed, f"says {new}, not {old} (cosine {sim:.3f})")
    return None


def _head(phrase: str) -> str:
    """``phrase`` without a trailing word that starts what follows it ("cello in", "tea this")."""
    words = phrase.split()
    return words[0] if len(words) > 1 and words[1].lower() in STOPWORDS | CALENDAR else phrase


def _by_switch(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A change of one detail said as "from A to B" ("Ines switched from violin to cello"): an
    UPDATE of the related stored fact that says A, about the same person (a name both give, or
    both the speaker's own), with B in its place. The rest of that fact still holds ("My
    daughter Ines is 11 and plays violin" keeps her age)."""
    m = _FROM_TO.search(text)
    if m is None:
        return None
    old, new = (_head(m.group(g)) for g in ("old", "new"))
    said = re.compile(rf"\b{re.escape(old)}\b", re.I)
    words = set(re.findall(r"\w+", text.lower()))
    for f, sim in neighbours:
        if sim < 0.3 or not said.search(f.text) or re.search(rf"\b{re.escape(new)}\b", f.text, re.I):
            continue
        if not (names(f.text) & words or (SELF.match(text) and SELF.match(f.text))):
            continue
        fixed = said.sub(lambda _: new, f.text, count=1)
        return Rewrite(f, fixed, f"from {old} to {new} (cosine {sim:.3f})")
    return None


# "We'll spend the anniversary weekend in Salzburg instead": a place said as taken instead of
# one the speaker does not name ("instead of Lisbon" is a contrast, decided by name)
_INSTEAD = re.compile(r"\binstead\b(?!\s+of\b)", re.I)
_AT_PLACE = re.compile(r"\b(?:in|to|at)\s+(?:the\s+)?(?P<place>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)")


def _places(text: str) -> list[str]:
    """The capitalised names ``text`` gives after "in", "to" or "at", a month or day aside."""
    return [
        m.group("place")
        for m in _AT_PLACE.finditer(text)
        if m.group("place").split()[0].lower() not in CALENDAR and m.group("place") != "I"
    ]


def _by_place(text: str, neighbours: Sequence[tuple[StoredFact, float]]) -> Rewrite | None:
    """A place taken instead ("We'll spend the anniversary weekend in Salzburg instead" after
    "For our tenth anniversary in May, Lukas and I are going to Hallstatt for a long weekend"):
    a rewrite of the related stored fact that names one place, of the same things, with the new
    place in its stead; who goes, when and why still hold."""
    if not _INSTEAD.search(text):
        return None
    new = _places(text)
    if len(new) != 1:
        return None
    words = set(re.findall(r"\w+", text.lower()))
    for f, sim in neighbours:
        old = _places(f.text) if sim >= 0.4 else []
        if len(old) != 1 or new[0].lower() in f.text.lower():
            continue
        if not (names(f.text) & words or topic(f.text) & topic(text)):
            continue
        fixed = re.sub(rf"\b{re.escape(old[0])}\b", lambda _: new[0], f.text, count=1)
        return Rewrite(f, fixed, f"{new[0]} instead of {old[0]} (cosine {sim:.3f})")
    return None
