"""Voice and specifics: the speaker's first person rewritten as "the user", and the
specifics (numbers, negations, dates, names) that make two similar sentences different facts."""

from __future__ import annotations

import re
import unicodedata

from .lexical import _TOKEN_RE, STOPWORDS, content_words, stem, tokens

__all__ = ["conflicting_specifics", "third_person"]

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
