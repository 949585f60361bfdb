"""Subject and slot: which attribute of whom a statement sets ("where the user lives", "what
Ana's sister does for work", "the user's diet"), so that a correction can find the facts it
replaces by what they are about, not only by how similar they sound.

Transparent rules, no model: a slot family is recognised by its words (live / moved / based in
-> residence; vegetarian / vegan / eat meat -> diet), the subject is the speaker unless the
statement opens on a relation of theirs ("My sister Ana lives in..."), and a few words say that
something stopped ("no longer", "not ... anymore", "quit", "left", "used to"). The value is
what is left of the statement's content words once the slot's own words are taken out.

Some families hold one value at a time (a person lives in one city, eats one diet, drives one
car): a new value there replaces the old. Others hold several (jobs, pets, likes) and change
only when the statement says so ("now", "switched", "no longer").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexical import content_words

__all__ = ["CHANGE_CUE", "SINGLE_VALUED", "Slot", "changes", "slot_of"]

# family -> the words that name it (matched on the lowercased text)
_FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    (
        "residence",
        re.compile(
            r"\b(?:live|lives|living|reside|resides|based in|moved (?:to|back to|into|in)|move to|"
            r"moving to|relocat\w* to|home(?:town| town)? is|back in|settled in|"
            r"new (?:flat|apartment|house) in)\b"
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:vegetarian|vegan|pescatarian|pescetarian|keto|paleo|gluten[- ]free|dairy[- ]free|"
            r"(?:eat|eating|eats|ate) (?:meat|fish|dairy|pork|beef|chicken|seafood)|diet)\b"
        ),
    ),
    ("smoking", re.compile(r"\b(?:smok\w*|cigarettes?|vap(?:e|ing)|nicotine)\b")),
    (
        "drinking",
        re.compile(r"\b(?:sober|teetotal\w*|(?:drink|drinking) (?:alcohol|beer|wine)|alcohol)\b"),
    ),
    (
        "relationship",
        re.compile(
            r"\b(?:girlfriend|boyfriend|partner|fianc[ée]e?|married|divorced|single|engaged|"
            r"split up|broke up|breaking up|separated|back together|dating)\b"
        ),
    ),
    ("phone", re.compile(r"\b(?:phone|iphone|pixel|android|galaxy|smartphone)\b")),
    ("car", re.compile(r"\b(?:car|drive an?|driving an?|motorbike)\b")),
    ("age", re.compile(r"\b(?:\d{1,3} years? old|turned \d{1,3}|i['’]?m \d{1,3}\b|aged? \d{1,3})")),
    (
        "work",
        re.compile(
            r"\b(?:work|works|working|job|employer|employed|hired|intern\w*|career|"
            r"quit (?:my|the) job|left (?:my|the) job|company|office|promoted)\b"
        ),
    ),
]
#: Families where a new value replaces the old without being told so.
SINGLE_VALUED = frozenset({"residence", "diet", "smoking", "drinking", "relationship", "phone", "car", "age"})

#: Words saying a statement corrects or updates an earlier one.
CHANGE_CUE = re.compile(
    r"\b(?:actually|correction|i meant|no longer|not \w+(?: \w+)? any ?more|anymore|any more|instead|"
    r"now|these days|nowadays|switched|changed|moved|new|again|back (?:to|in|together)|"
    r"started|quit|stopped|gave up|left|used to|not any longer)\b",
    re.IGNORECASE,
)
_STOPPED = re.compile(
    r"\b(?:no longer|not \w+(?: \w+)? any ?more|anymore|any more|quit|stopped|gave up|left|used to|"
    r"don['’]t \w+ any|split up|broke up)\b",
    re.IGNORECASE,
)
# a past-tense mention that tells history, not the current state ("When I lived in Lisbon")
_HISTORY = re.compile(
    r"\b(?:when|while|back when|before) (?:i|we|he|she|they) (?:lived|worked|was|were)\b", re.I
)
_RELATION = re.compile(
    r"^\s*(?:(?i:actually|so|also|and|oh)[\s,]+)*(?:(?i:my|the user['’]s)|[A-Z][a-z]+['’]s) "
    r"(sister|brother|mother|mom|mum|father|dad|son|daughter|wife|husband|partner|girlfriend|boyfriend|"
    r"friend|best friend|cousin|aunt|uncle|grandmother|grandfather|grandma|grandpa|niece|nephew|"
    r"boss|roommate|flatmate|neighbou?r|colleague)(?: ([A-Z][a-z]+))?",
)
_SLOT_WORDS = frozenset(
    content_words(
        "live lives living reside based moved move moving relocate relocated home hometown settled back new "
        "work works working job employer employed hired company office career promoted intern "
        "eat eats eating ate diet smoke smoking smoked cigarettes drink drinking alcohol "
        "phone car drive driving years old turned aged actually now again anymore longer quit stopped "
        "started switched changed left used instead these days nowadays"
    )
)


@dataclass(frozen=True)
class Slot:
    """What a statement sets: ``family`` of ``subject`` (lowercased), to ``value`` (its content
    words, sorted), or says that it ``stopped``."""

    family: str
    subject: str
    value: tuple[str, ...]
    stopped: bool = False

    @property
    def single(self) -> bool:
        return self.family in SINGLE_VALUED


def slot_of(text: str, speaker: str = "the user") -> Slot | None:
    """The slot ``text`` sets, or None when it names none (or only tells history: "When I lived
    in Lisbon I cycled", or is a proposal the user agreed to: "I agreed: ..."). ``speaker``:
    whom the first person is."""
    low = text.lower()
    if _HISTORY.search(text) or low.startswith("i agreed:"):
        return None  # history, or an assistant's proposal the user took up: sets no attribute
    family = next((name for name, pattern in _FAMILIES if pattern.search(low)), None)
    if family is None:
        return None
    subject = speaker.lower()
    rel = _RELATION.match(text) if family != "relationship" else None  # one's own status
    if rel:
        subject = " ".join(w.lower() for w in rel.groups() if w)
    taken = set(content_words(subject))
    value = tuple(sorted({w for w in content_words(text) if w not in _SLOT_WORDS and w not in taken}))
    return Slot(family, subject, value, stopped=bool(_STOPPED.search(text)))


def changes(text: str) -> bool:
    """Whether ``text`` says that something changed or was corrected."""
    return bool(CHANGE_CUE.search(text))
