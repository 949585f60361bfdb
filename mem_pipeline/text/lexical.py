"""Lexical analysis: tokens, stems and stopwords, and the sparse (BM25-style) vectors of the
lexical index. Pure functions over constant tables."""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from functools import lru_cache
from typing import Any

import snowballstemmer

__all__ = [
    "CONTEXT_MARK",
    "CONTEXT_WEIGHT",
    "LEXICAL_VERSION",
    "STOPWORDS",
    "as_context",
    "content_words",
    "has_clause_verb",
    "normalize_text",
    "sparse_doc",
    "sparse_query",
    "split_sentences",
    "stem",
    "tokens",
]

# English function words, plus the words questions are made of ("when", "did", "likely"):
# they carry no topic and only add noise to the lexical signal.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves also just
    really very much many lot lots get got getting go going gone went will shall may might
    must would like likely kind sort thing things stuff yeah yes yep ok okay oh um uh well
    sure quite pretty way ever even still already now then today yesterday tomorrow something
    anything everything nothing someone anyone everyone one ones
    recent recently lately happen happened happens describe described consider considered
    mention mentioned type types say says said tell told talk talked
    """.split()
)

_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# a sentence ends at . ! ? or …, but not after an initial or a title ("Ursula K. Le Guin",
# "Dr. Okafor", "St. Mary's")
# and, in texting, at an emoji before what opens a new sentence: a question or a request ("a
# patio for our dog pepa 🐶 can you help me write ..."), not before more of the same one ("I
# love 🍕 and pasta")
_SENT_RE = re.compile(
    r"(?<=[.!?…])(?<! [A-Z]\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)[\"')\]]*\s+|\n+"
    r"|(?<=[\U0001F300-\U0001FAFF\u2600-\u27BF])\s+(?=(?i:can|could|would|will|do|does|did|what|how|where|"
    r"when|why|who|which|any|pls|please|btw|also|anyway)\b)"
)
# a snowball stemmer keeps the word it works on in the object: one per thread (the concept
# layer's write-behind thread stems while a caller's thread does; a shared one raised
# IndexError from inside the stemmer once, on a whole LoCoMo run). ``snowballstemmer.stemmer``
# gives PyStemmer's compiled Snowball (a dependency) when it is installed: the same English
# algorithm, 1.4 us a word against the pure-Python one's 27 us here, which made stemming the
# new words of an added turn the dearest step of its lexical entry
_STEMMERS = threading.local()


def _stemmer() -> Any:
    s = getattr(_STEMMERS, "stemmer", None)
    if s is None:
        s = _STEMMERS.stemmer = snowballstemmer.stemmer("english")
    return s


def normalize_text(text: str) -> str:
    """Unicode NFKC, collapsed whitespace, lowercased: the key for deterministic ids."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def tokens(text: str) -> list[str]:
    """Lowercased word tokens (letters and digits), apostrophes kept inside words."""
    return [t.replace("’", "'") for t in _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    result: str = _stemmer().stemWord(word)
    return result


# The past forms of common irregular verbs, read as the verb itself: the stemmer maps
# "adopted" to "adopt" but leaves "met", "won", "bought", so "When did Sam meet Ana?" shared
# no word with "I met Ana at the gym". Forms that are as often another word ("bit", "rose",
# "lay", "shot", "stuck", "ground", "wound") are left alone; forms of verbs that are stopwords
# ("went", "got", "said") stay stopwords.
_PAST_FORMS = {
    form: verb
    for verb, forms in (
        ("arise", "arose arisen"),
        ("bear", "bore borne"),
        ("become", "became"),
        ("begin", "began begun"),
        ("bite", "bitten"),
        ("bleed", "bled"),
        ("blow", "blew blown"),
        ("break", "broke broken"),
        ("breed", "bred"),
        ("bring", "brought"),
        ("build", "built"),
        ("burn", "burnt"),
        ("buy", "bought"),
        ("catch", "caught"),
        ("choose", "chose chosen"),
        ("come", "came"),
        ("deal", "dealt"),
        ("dig", "dug"),
        ("draw", "drew drawn"),
        ("dream", "dreamt"),
        ("drink", "drank drunk"),
        ("drive", "drove driven"),
        ("eat", "ate eaten"),
        ("fall", "fell fallen"),
        ("feed", "fed"),
        ("feel", "felt"),
        ("fight", "fought"),
        ("find", "found"),
        ("fly", "flew flown"),
        ("forget", "forgot forgotten"),
        ("forgive", "forgave forgiven"),
        ("freeze", "froze frozen"),
        ("get", "gotten"),
        ("give", "gave given"),
        ("grow", "grew grown"),
        ("hang", "hung"),
        ("hear", "heard"),
        ("hide", "hid hidden"),
        ("hold", "held"),
        ("keep", "kept"),
        ("know", "knew known"),
        ("lead", "led"),
        ("learn", "learnt"),
        ("leave", "left"),
        ("lend", "lent"),
        ("lose", "lost"),
        ("make", "made"),
        ("mean", "meant"),
        ("meet", "met"),
        ("overcome", "overcame"),
        ("pay", "paid"),
        ("ride", "rode ridden"),
        ("ring", "rang rung"),
        ("run", "ran"),
        ("see", "saw seen"),
        ("seek", "sought"),
        ("sell", "sold"),
        ("send", "sent"),
        ("shake", "shook shaken"),
        ("shine", "shone"),
        ("sing", "sang sung"),
        ("sink", "sank sunk"),
        ("sit", "sat"),
        ("sleep", "slept"),
        ("slide", "slid"),
        ("speak", "spoke spoken"),
        ("spend", "spent"),
        ("spin", "spun"),
        ("stand", "stood"),
        ("steal", "stole stolen"),
        ("strike", "struck"),
        ("swim", "swam swum"),
        ("swing", "swung"),
        ("take", "took taken"),
        ("teach", "taught"),
        ("tear", "tore torn"),
        ("think", "thought"),
        ("throw", "threw thrown"),
        ("undergo", "underwent undergone"),
        ("understand", "understood"),
        ("wake", "woke woken"),
        ("wear", "wore worn"),
        ("weep", "wept"),
        ("win", "won"),
        ("withdraw", "withdrew withdrawn"),
        ("write", "wrote written"),
    )
    for form in forms.split()
}


def content_words(text: str) -> list[str]:
    """Stemmed tokens without stopwords; possessive 's dropped; the past forms of irregular
    verbs read as the verb ("met" -> "meet")."""
    return list(_content_words(text))


@lru_cache(maxsize=16384)
def _content_words(text: str) -> tuple[str, ...]:
    # a raw turn's lexical entry is rebuilt as its neighbours arrive (``sparse_doc`` of its
    # lines, most of them analysed before): the lines' analysis is remembered
    out = []
    for t in tokens(text):
        if t.endswith("'s"):
            t = t[:-2]
        t = _PAST_FORMS.get(t, t)
        if t and t not in STOPWORDS:
            out.append(stem(t))
    return tuple(out)


def _term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


# BM25's term-frequency saturation, computed client side; Qdrant applies the IDF (Modifier.IDF)
# at query time from its own collection statistics. k1 and b are the usual BM25 constants. The
# average length (weighted content words) is what a raw turn's entry measures with its lent
# context: on LoCoMo a turn has a median of 9 content words of its own and its entry 28 (mean
# 29) with two neighbours each side at half weight. An average set too short (it was 16)
# penalises every entry with context as "long" and lets the few short turns that happen to
# repeat a query word win (see README "Recall quality" for what the fix measured).
_K1 = 1.2
_B = 0.75
_AVG_LEN = 28.0

#: The version of the lexical analysis (tokens, stopwords, stemming, term ids, the constants
#: above): every fact records the version its lexical vector was built with, and
#: ``Memory.reindex`` (``mem-pipeline reindex``) rebuilds those of an older one. Bump it with
#: any change that alters what :func:`sparse_doc` returns for a stored text. Version 1 (no
#: field on the fact) used an average length of 16; version 2 read irregular past forms
#: ("met", "bought") as words of their own.
LEXICAL_VERSION = 3


#: A line of a lexical entry that starts with this mark is context lent by a neighbouring
#: turn (see ``Memory._lend_context``), not the entry's own text: its words count
#: ``CONTEXT_WEIGHT`` times as much, so a turn's own words outrank what it only sits next to.
CONTEXT_MARK = "\u2063"  # INVISIBLE SEPARATOR: never a word character, so never a token
CONTEXT_WEIGHT = 0.5


def as_context(text: str) -> str:
    """``text`` with every line marked as lent context (:data:`CONTEXT_MARK`)."""
    return "\n".join(CONTEXT_MARK + line for line in text.split("\n"))


def sparse_doc(text: str, *, context_weight: float | None = None) -> tuple[list[int], list[float]]:
    """Sparse vector of a stored text: term -> BM25 tf component (IDF is left to Qdrant).

    Lines starting with :data:`CONTEXT_MARK` are neighbours' context: their terms' frequency
    (and their share of the length) is scaled by ``context_weight`` (default
    :data:`CONTEXT_WEIGHT`).
    """
    cw = CONTEXT_WEIGHT if context_weight is None else context_weight
    weighted: dict[str, float] = {}
    length = 0.0
    for line in text.split("\n"):
        weight = cw if line.startswith(CONTEXT_MARK) else 1.0
        for w in content_words(line):
            weighted[w] = weighted.get(w, 0.0) + weight
            length += weight
    if not weighted:
        return [], []
    norm = _K1 * (1 - _B + _B * length / _AVG_LEN)
    merged: dict[int, float] = {}
    for term, tf in weighted.items():
        if tf <= 0:
            continue
        idx = _term_index(term)
        merged[idx] = merged.get(idx, 0.0) + tf * (_K1 + 1) / (tf + norm)
    items = sorted(merged.items())
    return [i for i, _ in items], [v for _, v in items]


def sparse_query(text: str) -> tuple[list[int], list[float]]:
    """Sparse vector of a query: each distinct content term once, weight 1."""
    idx = sorted({_term_index(t) for t in content_words(text)})
    return idx, [1.0] * len(idx)


# a word that makes a clause of the words around it: a first person, a verb form (not a noun in
# -ing: "every morning", "the wedding", "something")
_CLAUSE_VERB = re.compile(
    r"\b(?:i|we|i['’]m|we['’]re|i['’]ve|i['’]d|am|is|are|was|were|be|been|has|have|had|do|does|did|"
    # "may" is no verb as a month: "in May", "this May", "May 2026"
    r"can|will|would|could|should|(?<!\bin )(?<!\bof )(?<!\bthis )(?<!\bnext )(?<!\blast )(?<!\bearly )"
    r"(?<!\blate )(?<!\d )may(?! \d)|might|must|"
    # an "-ed" or "-ing" word after an article names a kind ("a branding agency", "a retired
    # greyhound"), no verb
    r"(?<!\ba )(?<!\ban )(?<!\bthe )\w+ed|"
    r"(?<!\ba )(?<!\ban )(?<!\bthe )(?!(?:\w+th|morn|even|spr|str|k|r|w|wedd|ceil|"
    r"cloth|pudd|sibl|din)ing\b)\w+ing|lives|works|loves|likes|hates|"
    r"owns|runs|goes|plays|teaches|studies|says|gets|makes|wants|needs|keeps|got|went|met)\b",
    re.IGNORECASE,
)


def has_clause_verb(text: str) -> bool:
    """Whether ``text`` has a first person or a verb form, which makes it a clause rather than a
    noun phrase ("with my partner and our two cats", "50mg every morning" have none)."""
    return bool(_CLAUSE_VERB.search(text))


def split_sentences(text: str) -> list[str]:
    """Split on sentence-final punctuation and newlines; empty pieces dropped."""
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]
