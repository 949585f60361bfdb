"""Text analysis shared by the lexical index, the offline extractor and concept matching.

Pure functions, no state beyond constant tables.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import lru_cache

import snowballstemmer

__all__ = [
    "CONTEXT_MARK",
    "CONTEXT_WEIGHT",
    "LEXICAL_VERSION",
    "STOPWORDS",
    "as_context",
    "asks_name",
    "asks_when",
    "candidate_phrases",
    "content_words",
    "date_ranges",
    "name_tokens",
    "names_something",
    "normalize_concept",
    "normalize_text",
    "says_when",
    "sparse_doc",
    "sparse_query",
    "split_sentences",
    "stem",
    "tokens",
    "without_names",
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
_SENT_RE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_STEMMER = snowballstemmer.stemmer("english")


def normalize_text(text: str) -> str:
    """Unicode NFKC, collapsed whitespace, lowercased: the key for deterministic ids."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def tokens(text: str) -> list[str]:
    """Lowercased word tokens (letters and digits), apostrophes kept inside words."""
    return [t.replace("’", "'") for t in _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())]


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


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    result: str = _STEMMER.stemWord(word)
    return result


# The past forms of common irregular verbs, read as the verb itself: the stemmer maps
# "adopted" to "adopt" but leaves "met", "won", "bought", so "When did Sam meet Ana?" shared
# no word with "I met Ana at the gym". Forms that are as often another word ("bit", "rose",
# "lay", "shot", "stuck", "ground", "wound") are left alone; forms of verbs that are stopwords
# ("went", "got", "said") stay stopwords.
_PAST_FORMS = {
    form: verb
    for verb, forms in (
        ("arise", "arose arisen"), ("bear", "bore borne"), ("become", "became"),
        ("begin", "began begun"), ("bite", "bitten"), ("bleed", "bled"), ("blow", "blew blown"),
        ("break", "broke broken"), ("breed", "bred"), ("bring", "brought"), ("build", "built"),
        ("burn", "burnt"), ("buy", "bought"), ("catch", "caught"), ("choose", "chose chosen"),
        ("come", "came"), ("deal", "dealt"), ("dig", "dug"), ("draw", "drew drawn"),
        ("dream", "dreamt"), ("drink", "drank drunk"), ("drive", "drove driven"),
        ("eat", "ate eaten"), ("fall", "fell fallen"), ("feed", "fed"), ("feel", "felt"),
        ("fight", "fought"), ("find", "found"), ("fly", "flew flown"),
        ("forget", "forgot forgotten"), ("forgive", "forgave forgiven"),
        ("freeze", "froze frozen"), ("get", "gotten"), ("give", "gave given"), ("grow", "grew grown"),
        ("hang", "hung"), ("hear", "heard"), ("hide", "hid hidden"), ("hold", "held"),
        ("keep", "kept"), ("know", "knew known"), ("lead", "led"), ("learn", "learnt"),
        ("leave", "left"), ("lend", "lent"), ("lose", "lost"), ("make", "made"), ("mean", "meant"),
        ("meet", "met"), ("overcome", "overcame"), ("pay", "paid"), ("ride", "rode ridden"),
        ("ring", "rang rung"), ("run", "ran"), ("see", "saw seen"), ("seek", "sought"),
        ("sell", "sold"), ("send", "sent"), ("shake", "shook shaken"), ("shine", "shone"),
        ("sing", "sang sung"), ("sink", "sank sunk"), ("sit", "sat"), ("sleep", "slept"),
        ("slide", "slid"), ("speak", "spoke spoken"), ("spend", "spent"), ("spin", "spun"),
        ("stand", "stood"), ("steal", "stole stolen"), ("strike", "struck"), ("swim", "swam swum"),
        ("swing", "swung"), ("take", "took taken"), ("teach", "taught"), ("tear", "tore torn"),
        ("think", "thought"), ("throw", "threw thrown"), ("undergo", "underwent undergone"),
        ("understand", "understood"), ("wake", "woke woken"), ("wear", "wore worn"),
        ("weep", "wept"), ("win", "won"), ("withdraw", "withdrew withdrawn"),
        ("write", "wrote written"),
    )
    for form in forms.split()
}


def content_words(text: str) -> list[str]:
    """Stemmed tokens without stopwords; possessive 's dropped; the past forms of irregular
    verbs read as the verb ("met" -> "meet")."""
    out = []
    for t in tokens(text):
        if t.endswith("'s"):
            t = t[:-2]
        t = _PAST_FORMS.get(t, t)
        if t and t not in STOPWORDS:
            out.append(stem(t))
    return out


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


def split_sentences(text: str) -> list[str]:
    """Split on sentence-final punctuation and newlines; empty pieces dropped."""
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


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
_SPECIFIC = frozenset(
    """
    not no never n't nor none without ex former formerly used least less more cancel cancelled
    canceled quit stopped stop anymore longer instead before after until zero one two three
    four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty hundred
    thousand million once twice thrice half double first second third fourth fifth last next
    previous january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday weekend weekday weekdays
    weekends morning afternoon evening night noon midnight am pm daily weekly monthly yearly
    annually day week month year hour minute spring summer autumn fall winter
    """.split()
)
_THOUSANDS = re.compile(r"(\d),(\d{3})\b")
_UNIT = re.compile(r"(\d)(st|nd|rd|th|x|am|pm|mg|kg|km|k|h|min|s)\b", re.IGNORECASE)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
_NUMBER_WORDS.update({"once": "1", "twice": "2", "thrice": "3"})
_VOICE = frozenset(
    """
    i me my mine myself i'm i've i'd i'll user user's the their they them
    """.split()
)


def conflicting_specifics(a: str, b: str) -> set[str]:
    """Tokens that one text has and the other lacks, and that change what a fact says.

    Numbers (any token with a digit), negation/tense markers, quantities, calendar and clock
    words, and capitalised words after the first (names, places). Used by the near-duplicate
    check: two sentences that differ in one of these are not the same fact, however close
    their embeddings ("rent is 1,200" / "rent is 1,500" have cosine 0.985).
    """

    def specifics(text: str) -> set[str]:
        out = set()
        text = _THOUSANDS.sub(r"\1\2", unicodedata.normalize("NFKC", text))
        text = _UNIT.sub(r"\1 \2", text)
        raw = [_NUMBER_WORDS.get(t.lower(), t) for t in _TOKEN_RE.findall(text)]
        for i, tok in enumerate(raw):
            low = tok.lower().replace("’", "'")
            if low in _VOICE or (low in ("am", "pm") and not (i and raw[i - 1].isdigit())):
                continue
            if low.endswith("n't"):
                out.add("n't")
                continue
            if (
                any(ch.isdigit() for ch in low)
                or low in _SPECIFIC
                or (i > 0 and tok[:1].isupper() and low not in STOPWORDS)
            ):
                out.add(stem(low.removesuffix("'s")))
        return out

    sa, sb = specifics(a), specifics(b)
    # a capitalised word is only "specific" when the other side lacks it in any case
    la = set(content_words(a)) | {stem(t) for t in tokens(a)}
    lb = set(content_words(b)) | {stem(t) for t in tokens(b)}
    return {t for t in sa - sb if t not in lb} | {t for t in sb - sa if t not in la}


_VOICE_MAP = [
    (re.compile(r"\bI\s*'?\s*m\b|\bI am\b", re.I), "the user is"),
    (re.compile(r"\bI\s*'?\s*ve\b", re.I), "the user has"),
    (re.compile(r"\bI\s*'?\s*d\b", re.I), "the user would"),
    (re.compile(r"\bI\s*'?\s*ll\b", re.I), "the user will"),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bmyself\b", re.I), "the user"),
    (re.compile(r"\bme\b", re.I), "the user"),
    (re.compile(r"\bI\b"), "the user"),
]


def third_person(text: str) -> str:
    """Rewrite the speaker's first person as "the user" ("I'm vegan" -> "the user is vegan").

    Used for comparing facts (dedupe), so that "I have a peanut allergy" and "The user has a
    peanut allergy" are compared as the same voice. Verb agreement is left as it is.
    """
    for pattern, repl in _VOICE_MAP:
        text = pattern.sub(repl, text)
    return text


_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON}(?:,?\s*{_YEAR})?\b", re.I),  # 1 May, 2022
    re.compile(rf"\b{_MON}\s+{_DAY}\b(?:,?\s*{_YEAR})?\b", re.I),  # May 1, 2022
    re.compile(rf"\b{_MON},?\s+{_YEAR}\b", re.I),  # May 2022
    # a month alone only after a preposition ("in May"; not "may" the verb)
    re.compile(rf"\b(?:in|during|since|until|by|of|early|late|mid)[\s-]+{_MON}\b(?!\s+\d)", re.I),
]


def date_ranges(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    """Calendar dates a text names, as ``[start, end)`` ranges in ``now``'s time zone.

    "on 1 May, 2022" / "May 1, 2022" -> that day; "in May 2022" -> that month; without a year
    ("in May", "on October 24") the latest such date not after ``now``. Relative dates
    ("last week") are not resolved. Used to rank higher what was said on the named dates.
    """
    out: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            groups = m.groupdict()
            mon_word = groups["mon"].lower()
            month = _MONTHS[mon_word]
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            if day is not None and not 1 <= day <= 31:
                continue
            if year is None:
                year = now.year
                if (month, day or 1) > (now.month, now.day):
                    year -= 1
            try:
                if day is not None:
                    start = datetime(year, month, day, tzinfo=now.tzinfo)
                    end = start + timedelta(days=1)
                else:
                    start = datetime(year, month, 1, tzinfo=now.tzinfo)
                    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=now.tzinfo)
            except ValueError:
                continue
            taken.append((m.start(), m.end()))
            out.append((start, end))
    return out


_AUX = r"(?:did|do|does|is|was|were|will|are|has|have|had|can|could|should|would)"
_WHEN_QUESTION = re.compile(
    rf"^\W*when\b|\bwhen\s+{_AUX}\b|\bsince when\b|\bhow long ago\b"
    r"|\b(?:what|which)\s+(?:date|day|week|weekend|month|year|time)\b",
    re.IGNORECASE,
)
_TIME_UNIT = r"(?:days?|weeks?|weekends?|months?|years?|nights?|mornings?|evenings?)"
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_SEASON = r"(?:summer|winter|spring|autumn|fall)"
_TIME_EXPRESSION = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|{_WEEKDAY}s?"
    rf"|(?:last|this|next|past)\s+(?:{_TIME_UNIT}|{_WEEKDAY}|{_SEASON})"
    rf"|(?:\w+|\d+)\s+{_TIME_UNIT}\s+ago"
    r"|january|february|april|june|july|august|september|october|november|december"
    r"|(?:in|since|until|till|by|from|during|around|of)\s+(?:19|20)\d\d)\b"
    r"|\b(?-i:May|March)\b",  # the months that are also words count capitalised only
    re.IGNORECASE,
)


def asks_when(text: str) -> bool:
    """Whether a question asks when something happened ("When did...", "What year...",
    "how long ago"); "when" as a conjunction ("what did she do when she was...") does not."""
    return bool(_WHEN_QUESTION.search(text))


def says_when(text: str) -> bool:
    """Whether a text places something in time: a relative day ("yesterday", "last week",
    "two months ago"), a weekday, a month or a year ("in 2019"; a bare number is not). The
    turn that answers "when?" usually says one of these; the session date then resolves it."""
    return bool(_TIME_EXPRESSION.search(text))


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
_NAME_QUESTION = re.compile(
    rf"^\W*where\b|\b(?:what|which)\s+(?:[\w'-]+\s+)?{_NAMED_KINDS}\b", re.IGNORECASE
)
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
