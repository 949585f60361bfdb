"""Phrases and names: concept phrases of a text, concept normalisation, and how a question
names people or asks for a name. Pure functions over constant tables."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .lexical import STOPWORDS, content_words, split_sentences, tokens
from .slots import KIN

__all__ = [
    "AGREED_FRAME",
    "about_person",
    "asks_called",
    "asks_name",
    "asks_where",
    "asks_who",
    "candidate_phrases",
    "gives_name",
    "gives_person",
    "gives_place",
    "name_tokens",
    "names_something",
    "normalize_concept",
    "without_names",
]


#: The frame the offline extractor puts round a proposal of the assistant's that the user took
#: up ("I agreed: book a table at Dishoom for Saturday.", "I enrolled: ..."): what was settled.
AGREED_FRAME = re.compile(r"^\s*I (?:agreed|enrolled|signed up|registered|booked|joined|ordered|bought):\s*")


def name_tokens(text: str) -> set[str]:
    """The lowercased tokens of ``text`` with a possessive "'s" dropped ("Maya's" -> "maya"):
    what a question can name a person by."""
    return {t[:-2] if t.endswith("'s") and len(t) > 2 else t for t in tokens(text)}


def without_names(text: str, names: Iterable[str]) -> str:
    """``text`` with each of ``names`` (whole words, any case, a possessive "'s" with them)
    left out: what a question asks once the person it names is set aside ("What is Mel's
    job?" -> "What is job?"). Unchanged when no name occurs or no content word would be left."""
    alts = sorted({n for n in names if n and n.strip()}, key=len, reverse=True)
    if not alts:
        return text
    pattern = r"(?<![\w'’])(?:" + "|".join(map(re.escape, alts)) + r")(?:['’]s)?(?![\w'’])"
    out, n = re.subn(pattern, "", text, flags=re.IGNORECASE)
    if not n:
        return text
    out = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip()
    return out if content_words(out) else text


_IRREGULAR = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "feet": "foot",
    "teeth": "tooth",
    "geese": "goose",
}
_KEEP_S = (
    "ss",
    "us",
    "is",
    "news",
    "series",
    "species",
    "physics",
    "maths",
    "tennis",
    "chess",
    "glasses",
    "jeans",
    "pants",
    "scissors",
)


def _singular(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word.endswith(_KEEP_S):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def normalize_concept(concept: str) -> str:
    """Lowercase, single spaces, punctuation trimmed, last word singular: "Timeouts " -> "timeout"."""
    words = [w.strip("'") for w in tokens(concept)]
    words = [w for w in words if w]
    if not words:
        return ""
    words[-1] = _singular(words[-1])
    return " ".join(words)[:80]


# Common verbs, adverbs and number words: they end a keyword phrase (a cheap stand-in for a
# part-of-speech tagger) so "I love hiking" gives "hiking", not "love hiking".
_BREAKERS = frozenset(
    """
    love loves loved like likes liked hate hates hated enjoy enjoys enjoyed prefer prefers
    preferred want wants wanted need needs needed think thinks thought feel feels felt know
    knows knew live lives lived living work works worked move moves moved moving start started
    starting stop stopped try tried trying use used using make made making take took taken
    taking give gave given see saw seen say said tell told ask asked called find found keep
    kept let put run ran come came become became begin began plan plans planned planning hope
    hoped visit visited visiting buy bought sell sold pay paid play played playing watch
    watched read write wrote written learn learned learning teach taught help helped meet met
    bring brought finish finished fix fixed timed retried went going gone been being doing
    done always never often usually sometimes recently soon later lately finally actually
    probably maybe definitely especially totally currently anymore ago new old good great bad
    best better big small little nice favorite favourite two three four five six seven eight
    nine ten twenty hundred thousand first second third
    """.split()
)

_GENERIC = frozenset(
    """
    time times day days week weeks month months year years people person guy guys bit way lot
    thanks thank hi hello hey
    """.split()
)


def candidate_phrases(text: str, *, max_words: int = 3) -> list[str]:
    """Keyword phrases: maximal runs of non-stopword tokens (RAKE-style), normalised.

    Runs longer than ``max_words`` are split into their words; single generic words ("time",
    "day") and pure numbers are dropped. Order of first appearance, no duplicates.
    """
    runs: list[list[str]] = []
    current: list[str] = []
    for piece in re.split(r"([,;:()\"!?.\n—–-]+)", text):
        if re.fullmatch(r"[,;:()\"!?.\n—–-]+", piece or ""):
            if current:
                runs.append(current)
                current = []
            continue
        for t in tokens(piece):
            if t.endswith("'s"):
                t = t[:-2]
            if t in STOPWORDS or t in _BREAKERS or "'" in t or t.isdigit() or len(t) < 2:
                if current:
                    runs.append(current)
                    current = []
            else:
                current.append(t)
    if current:
        runs.append(current)
    out: list[str] = []
    for run in runs:
        parts = [run] if len(run) <= max_words else [[w] for w in run]
        for p in parts:
            if len(p) == 1 and p[0] in _GENERIC:
                continue
            c = normalize_concept(" ".join(p))
            if c and c not in out:
                out.append(c)
    return out


# Words whose presence on one side only means two similar sentences state different facts:
# negation and tense markers, quantities, ordinals, calendar and clock words.


# A question that asks for something known by its name: where, or "what/which" with a noun
# whose answer is a name ("Which city...", "What book...", "What console..."). Not "who": its
# answer is as often a relation ("my neighbour") as a name; not "what is the name of": a pet's
# or a person's name tends to open a sentence ("Tofu is eleven"), where a capitalised word
# cannot be told from any other first word.
_NAMED_KINDS = (
    r"(?:cit(?:y|ies)|countr(?:y|ies)|states?|towns?|places?|parks?|restaurants?|islands?"
    r"|beach(?:es)?|books?|novels?|movies?|films?|songs?|albums?|games?|shows?|series|bands?"
    r"|artists?|authors?|teams?|brands?|consoles?|compan(?:y|ies)|stores?|shops?"
    r"|schools?|universit(?:y|ies)|languages?|apps?)"
)
_NAME_QUESTION = re.compile(rf"^\W*where\b|\b(?:what|which)\s+(?:[\w'-]+\s+)?{_NAMED_KINDS}\b", re.IGNORECASE)
_CAPITALISED = re.compile(r"[A-Z][a-z]{2,}")
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december".split()
)
_QUOTED = re.compile(r"[\"“][^\"“”]{2,}[\"”]")


def asks_name(text: str) -> bool:
    """Whether a question asks for something known by its name: where, or "what" / "which"
    with a noun whose answer is a name ("Which city...", "What book did...")."""
    return bool(_NAME_QUESTION.search(text))


_CALLED_QUESTION = re.compile(
    r"^\W*what(?:['’]s|\s+is|\s+was|\s+are|\s+were)?\b.*\b(?:called|named)\b|\bname of\b|['’]s names?\b"
    r"|\b(?:his|her|its|their|my|our) names?\b",
    re.IGNORECASE,
)


def asks_called(text: str) -> bool:
    """Whether a question asks what something or someone is called ("what's my dog called?",
    "what's the name of the dog we're fostering?", "What's my partner's name?"): a text that
    gives a name (:func:`gives_name`) answers it."""
    return bool(_CALLED_QUESTION.search(text))


def names_something(text: str, people: Iterable[str] = ()) -> bool:
    """Whether a text names something: a quoted title, or a capitalised word inside a
    sentence ("we flew to Lisbon", "a book by Patrick Rothfuss") that is not one of
    ``people`` (the conversation's own speakers, any case), a weekday or a month. The
    turn that answers "where?" or "which book?" usually says the name."""
    if _QUOTED.search(text):
        return True
    skip = {p.lower() for p in people} | _CALENDAR
    for sentence in split_sentences(text):
        for m in _CAPITALISED.finditer(sentence):
            start = m.start()
            if not sentence[:start].strip(" \"'“‘([-–—*"):  # the sentence's first word
                continue
            if sentence[start - 1 : start] in ("'", "’") or m.group(0).lower() in skip:
                continue
            return True
    return False


_WHERE = re.compile(r"^\W*where\b", re.IGNORECASE)
#: A preposition of place and the word after it (an article aside): "from Manila", "at
#: Didsbury library", "in the Scottish Highlands", "back at fairview".
_PLACE = re.compile(r"\b(?:in|at|from|near|outside|around)\s+(?=(?:the\s+)?([\w'’-]+))", re.IGNORECASE)


def asks_where(text: str) -> bool:
    """Whether a question asks where ("Where are my parents flying in from?")."""
    return bool(_WHERE.search(text))


def gives_place(text: str) -> int:
    """How surely ``text`` can answer "where?": 2 when it names a place after a preposition
    of place ("flying in from Manila", "a group at Didsbury library"), 1 when a preposition of
    place is followed by a word that may be one ("back at fairview"), 0 when nothing is (a
    weekday, a month or a word like "all" is no place: "Spanish is on Wednesday afternoons
    from February", "had to change their flights")."""
    best = 0
    for m in _PLACE.finditer(text):
        word = m.group(1)
        low = word.lower()
        if low in _CALENDAR or low in STOPWORDS or word.isdigit():
            continue
        if word[0].isupper():
            return 2
        best = 1
    return best


_CALENDAR_NAMES = "|".join(w.capitalize() for w in sorted(_CALENDAR))
#: A question after who: "Who am I travelling with in July?", "with whom ...".
_WHO = re.compile(r"^\W*who(?:m|se)?\b|\bwith whom\b", re.IGNORECASE)
#: Someone named: "my husband Callum", "Mrs Lindqvist", "with Priya".
_NAMED_PERSON = re.compile(
    rf"\b(?i:{KIN}|teacher|coach|tutor|mentor|manager|fianc[ée]e?)\s+[A-Z][a-z]+"
    r"|\b(?i:mrs?|ms|miss|dr)\.?\s+[A-Za-z][a-z]+"
    rf"|\b(?i:with)\s+(?!(?:{_CALENDAR_NAMES})\b)[A-Z][a-z]+\b(?!\s+[A-Z])"
    # "Theo and I", "me and Ana", "his name's Theo", "met someone new, Delphine"
    r"|\b[A-Z][a-z]+ (?i:and) (?i:i|me)\b|\b(?i:i|me) (?i:and) [A-Z][a-z]+"
    r"|\b(?i:name['’]?s|name is|named|called|someone(?: new)?,?)\s+[A-Z][a-z]+"
)
_PERSON_WORD = re.compile(rf"\b(?:{KIN}|teacher|coach|tutor)s?\b", re.IGNORECASE)


def asks_who(question: str) -> bool:
    """Whether a question asks who ("Who am I travelling with in July?")."""
    return bool(_WHO.search(question))


def gives_person(text: str) -> int:
    """How surely ``text`` can answer "who?": 2 when it names someone ("me and my husband
    Callum", "Mrs Lindqvist"), 1 when it speaks of someone unnamed ("my sister"), 0 when it
    speaks of no one ("We've booked the Faroe Islands instead": a change of where, not of
    who)."""
    if _NAMED_PERSON.search(text):
        return 2
    return 1 if _PERSON_WORD.search(text) else 0


#: A name given, not only said: "Named him Bún", "she's called Mochi", "his name is Otis".
_GIVES_NAME = re.compile(
    r"\b(?:named|called|calling|christened|goes by|(?:his|her|its|their|the) name(?:['’]s| is| was))\s+"
    r"(?:(?:him|her|it|them|us|me)\s+)?[\"“']?[A-ZÀ-Þ]",
    re.IGNORECASE,
)


def gives_name(text: str) -> bool:
    """Whether ``text`` gives something its name ("Named him Bún after my favourite noodle
    dish", "a big grey boy called Pistachio"): it answers "what's my dog called?" more surely
    than a text that only names something ("Just adopted a Shiba Inu puppy!")."""
    return any(m.group(0)[-1].isupper() for m in _GIVES_NAME.finditer(text))


_PERSONAL = re.compile(
    r"\b(?:i|i['’]m|i['’]ve|i['’]d|i['’]ll|me|my|mine|myself|we|we['’]re|our|ours|us)\b", re.IGNORECASE
)


# "tell me a riddle", "give us a word for happy": the person only as who a request is for
_ASKED_FOR = re.compile(
    r"\b(?:tell|give|show|teach|explain to|write|translate|spell|lend|send)\s+(?:me|us)\b", re.IGNORECASE
)


def about_person(text: str, named: bool = False) -> bool:
    """Whether a question is about the person a memory keeps: it speaks in the first person
    ("What do I do for work?", "my sister"), or (``named``) names one of the scope's speakers.
    A general question ("What's the capital of Peru?", "convert 5 miles to km") is not, and
    needs a closer match before memory answers it; nor is a request that names the person only
    as who it is for ("tell me a riddle"; "tell me about my sister" is about them)."""
    return named or bool(_PERSONAL.search(_ASKED_FOR.sub(" ", text)))
