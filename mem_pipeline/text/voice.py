"""Voice and specifics: the speaker's first person rewritten as "the user", and the
specifics (numbers, negations, dates, names) that make two similar sentences different facts."""

from __future__ import annotations

import re
import unicodedata

from .lexical import _TOKEN_RE, STOPWORDS, content_words, stem, tokens

__all__ = [
    "as_user",
    "conflicting_specifics",
    "first_person",
    "in_person",
    "missing_specifics",
    "strip_filler",
    "third_person",
]

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


def _specifics(text: str) -> set[str]:
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


def missing_specifics(a: str, b: str) -> set[str]:
    """The specifics of ``a`` (as :func:`conflicting_specifics` counts them) that ``b`` lacks:
    what a merged sentence ``b`` dropped of the fact ``a`` ("on Thursday at 4pm")."""
    lb = set(content_words(b)) | {stem(t) for t in tokens(b)}
    return {t for t in _specifics(a) - _specifics(b) if t not in lb}


def conflicting_specifics(a: str, b: str) -> set[str]:
    """Tokens that one text has and the other lacks, and that change what a fact says.

    Numbers (any token with a digit), negation/tense markers, quantities, calendar and clock
    words, and capitalised words after the first (names, places). Used by the near-duplicate
    check: two sentences that differ in one of these are not the same fact, however close
    their embeddings ("rent is 1,200" / "rent is 1,500" have cosine 0.985).
    """
    # a capitalised word is only "specific" when the other side lacks it in any case
    return missing_specifics(a, b) | missing_specifics(b, a)


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


# The words after "I" that keep their form in the third person: modals, and past forms.
_KEEPS_FORM = frozenset("can could will would shall should may might must was had did got went".split())
# Irregular past forms, which keep theirs too ("I lost my job" -> "Jon lost Jon's job").
_IRREGULAR_PAST = frozenset(
    """ate became began bent bit bled blew broke brought built burnt bought caught chose clung
    came crept dealt dug dove drew dreamt drank drove dwelt fed felt fought found fled flew
    forbade forgot forgave froze gave grew hung heard hid held kept knelt knew laid led leapt
    learnt left lent lit lost made meant met paid rode rang rose ran said saw sought sold sent
    shook shone shot showed shrank sang sank sat slept slid spoke sped spent spilt spun sprang
    stood stole stuck stung stank struck strove swore swept swam swung took taught tore told
    thought threw understood woke wore wove wept won wrote""".split()
)  # not those whose present is the same ("read", "put", "set"): "I read" may be a habit
# A statement that starts with a past verb and its object has lost its subject, the speaker:
# "Lost my job as a banker yesterday" -> "Jon lost Jon's job as a banker yesterday".
_NO_SUBJECT = re.compile(
    r"^(\w+) (?=(?:a|an|the|my|our|some|this|that|his|her|their|your)\b)|"
    r"^(went|got|came|moved) (?=(?:to|into|back|home)\b)",
    re.IGNORECASE,
)
# Adverbs that come between "I" and its verb: the verb after them agrees ("I even found",
# "I really love it" -> "Jon really loves it").
_ADVERBS = frozenset(
    """absolutely actually almost already also always barely certainly constantly definitely
    especially even eventually ever finally first frequently generally genuinely hardly
    honestly just kinda literally mainly mostly never normally now occasionally often once
    only personally probably rarely really recently regularly seldom seriously simply slowly
    sometimes soon sorta still suddenly then totally truly typically usually""".split()
) | {"kind of", "sort of"}
# Spoken contractions of a verb and "to": "I wanna go" -> "Jon wants to go".
_SPOKEN = {"wanna": "wants to", "gotta": "has to", "hafta": "has to", "needa": "needs to"}
_FIRST_PERSON = [
    (re.compile(r"\bI\s*['’]\s*m\b|\bI am\b"), "{s} is"),
    (re.compile(r"\bI\s*['’]\s*ve\b|\bI have\b"), "{s} has"),
    (re.compile(r"\bI\s*['’]\s*d\b"), "{s} would"),
    (re.compile(r"\bI\s*['’]\s*ll\b"), "{s} will"),
    (re.compile(r"\bI don['’]t\b|\bI do not\b"), "{s} does not"),
    (re.compile(r"\bI haven['’]t\b"), "{s} has not"),
    (re.compile(r"\bI do\b"), "{s} does"),
    (re.compile(r"\b[Mm]y\b"), "{s}'s"),
    (re.compile(r"\b[Mm]ine\b"), "{s}'s"),
    (re.compile(r"\b[Mm]yself\b"), "{s}"),
    (re.compile(r"(?<![\w-])[Mm]e\b(?!-)"), "{s}"),  # not "me-time"
]
_I_VERB = re.compile(r"\bI (\w+)")
_I_ADVERB_VERB = re.compile(r"\bI ((?i:" + "|".join(sorted(_ADVERBS, key=len, reverse=True)) + r") )(\w+)")


def _third_singular(verb: str) -> str:
    """``verb`` as after "she": "love" -> "loves", "go" -> "goes", "study" -> "studies"; past
    forms and modals as they are."""
    low = verb.lower()
    if low in _SPOKEN:
        return _SPOKEN[low]
    if low in _KEEPS_FORM or low in _IRREGULAR_PAST or low in _ADVERBS or low.endswith("ed"):
        return verb
    if not low.isalpha() or len(low) < 2:
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _is_past(word: str) -> bool:
    low = word.lower()
    return (
        low in _IRREGULAR_PAST
        or low in ("went", "got", "had", "did")
        or (low.endswith("ed") and len(low) > 4 and low != "speed")
    )


def in_person(text: str, subject: str) -> str:
    """The speaker's first person in ``text`` told about ``subject`` ("Caroline", "the user"):
    "I went to a support group" -> "Caroline went to a support group", "I love my dog" ->
    "Caroline loves Caroline's dog". What the offline extractor stores, so that a fact names
    whom it is about; the verb after "I" agrees (simple rules, no tagger)."""
    start = _NO_SUBJECT.match(text)
    if start and (start.group(2) or _is_past(start.group(1))):
        text = f"{subject} {text[:1].lower()}{text[1:]}"
    for pattern, repl in _FIRST_PERSON:
        text = pattern.sub(repl.format(s=subject), text)
    text = _I_ADVERB_VERB.sub(lambda m: f"{subject} {m.group(1)}{_third_singular(m.group(2))}", text)
    text = _I_VERB.sub(lambda m: f"{subject} {_third_singular(m.group(1))}", text)
    text = re.sub(r"\bI\b", subject, text)
    return text[:1].upper() + text[1:] if text else text


_FILLER = re.compile(
    r"^(?:(?:oh|ok(?:ay)?|well|so|also|and|but|anyway|btw|by the way|fyi|actually|just so you know|"
    r"for the record|just fyi|as i said|i told you|remember|you know what|guess what|fun fact|"
    r"to be honest|honestly|tbh|hey|hi|hello|yeah|yes|no need|no thanks|no thank you|"
    # a "no" that answers, not one that says what one has none of ("No kids.")
    r"(?:nah|no|nope)(?=\s*[,;:!.-]|\s*$|\s+(?:i|i['’]m|i['’]ve|we|we['’]re|it['’]s|that['’]s|not|just)\b)|"
    r"unrelated|on (?:a|an)other note|different topic|side note|changing the subject|heads up)\b"
    r"[\s,;:!.-]*)+",
    re.IGNORECASE,
)


# a lead-in that announces what follows, up to its colon ("For context: ", "A bit about me since
# you asked: ", "Update nobody asked for: "): it says how the message is meant, not a fact
_LEAD_IN = re.compile(
    r"^[^:]{0,40}?\b(?:background|context|about me|info(?:rmation)?s?|update|news|heads[- ]up|"
    r"for (?:your|the) records?|quick note|a few things|some things)\b[^:]{0,40}:\s+",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,;:-]+(?:btw|by the way|fyi|lol|haha+|tbh|just so you know|jsyk))+[\s!.]*$", re.IGNORECASE
)


# a lead-in that names what the news is about ("Update on Yasmin's wedding: it's now on the 5th
# of September"): the topic stays, as what the rest is about
_TOPIC_LEAD = re.compile(
    r"^\s*(?:(?:a |an |quick |small |big )*)(?:update|news)\s+(?:on|about|re)\s+"
    r"(?!(?:me|my end|things|that|this|everything|stuff)\b)(?P<topic>[^:]{2,40}):\s+",
    re.IGNORECASE,
)


def strip_filler(text: str) -> str:
    """``text`` without the discourse words it opens or ends with ("Actually, ", "Just so you
    know, ", "Oh and by the way ", "... btw", "For context: ", "Unrelated, but "), which say how
    something is said, not what; the first letter is capitalised again. A lead-in that names
    its topic keeps it ("Update on Yasmin's wedding: ..." -> "Yasmin's wedding: ...")."""
    topic = _TOPIC_LEAD.match(text)
    if topic is not None:
        text = topic.group("topic").strip() + ": " + text[topic.end() :]
    else:
        text = _LEAD_IN.sub("", text)
    out = _TRAILING_FILLER.sub("", _FILLER.sub("", text)).strip()
    return (out[:1].upper() + out[1:]) if out else text


_AS_I = {
    "is": "am",
    "has": "have",
    "does": "do",
    "was": "was",
    "doesn't": "don't",
    "hasn't": "haven't",
    "isn't": "am not",
}
_USER_SUBJECT = re.compile(r"\b[Tt]he user(?:['’]s)?\b(?:\s+(\w+(?:['’]t)?))?")


def _first_singular(verb: str) -> str:
    """``verb`` as after "I": "lives" -> "live", "goes" -> "go", "studies" -> "study"."""
    low = verb.lower()
    if low in _AS_I:
        return _AS_I[low]
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return verb[:-2]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return verb[:-1]
    return verb


def first_person(text: str) -> str:
    """A fact about "the user" told in the user's own voice ("The user lives in Cork" -> "I live
    in Cork", "the user's sister" -> "my sister"): how a fact is embedded, so that it compares
    with the user's questions ("Where do I live?") and turns in one voice (cosine 0.41 against
    0.23 in the third person for that pair, with the local model)."""

    def repl(m: re.Match[str]) -> str:
        whole = m.group(0)
        if re.match(r"[Tt]he user['’]s", whole):
            return "my" + whole[len("the user's") :]
        verb = m.group(1)
        return "I" if verb is None else f"I {_first_singular(verb)}"

    return _USER_SUBJECT.sub(repl, text)


#: The assistant's second person as the user's first ("you" as an object is "me": "book you a
#: place", "a slot for you").
_AS_USER = [
    (
        re.compile(
            r"\b(for|to|with|book|get|send|remind|help|sign|put|give|show|tell|call|text|find|order|"
            r"reserve|add|let|join|pencil|squeeze) you\b",
            re.IGNORECASE,
        ),
        r"\1 me",
    ),
    (re.compile(r"\byou(?:['’]re| are)\b", re.IGNORECASE), "I am"),
    (re.compile(r"\byou(?:['’]ve| have)\b", re.IGNORECASE), "I have"),
    (re.compile(r"\byou(?:['’]ll| will)\b", re.IGNORECASE), "I will"),
    (re.compile(r"\byou(?:['’]d| would)\b", re.IGNORECASE), "I would"),
    (re.compile(r"\byourself\b", re.IGNORECASE), "myself"),
    (re.compile(r"\byours\b", re.IGNORECASE), "mine"),
    (re.compile(r"\byour\b", re.IGNORECASE), "my"),
    (re.compile(r"\byou\b", re.IGNORECASE), "I"),
]


def as_user(text: str) -> str:
    """What the assistant said to the user, in the user's own first person ("Want me to book you
    a table?" -> "... book me a table", "your sister" -> "my sister", "you" -> "I")."""
    for pattern, mine in _AS_USER:
        text = pattern.sub(mine, text)
    return text
