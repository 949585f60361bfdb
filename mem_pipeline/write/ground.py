"""Grounding: a fact its turns do not support is rejected. The user turns it cites (and an
assistant message the user confirmed or answered) are what a fact may rest on; when they fall
short, the same person's turns just before and after them may complete it (``widen``): what
someone says often runs over two of their turns, with the other's reply between."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..models import Message
from ..text.lexical import STOPWORDS, content_words, split_sentences, stem, tokens
from ..text.phrases import AGREED_FRAME
from ..text.smalltalk import is_reaction
from .answers import question_about_user

__all__ = [
    "ACCEPTANCE",
    "GROUNDED",
    "TOOK_UP",
    "accepts",
    "fact_sources",
    "ground",
    "grounded_turns",
    "support",
    "widen",
    "without_symbols",
]

_FREE_WORDS = frozenset(
    stem(w)
    for w in [
        "user",
        "users",
        "person",
        "people",
        "someone",
        "they",
        "their",
        "them",
        "he",
        "she",
        "his",
        "her",
        "named",
        "name",
        "called",
        "said",
        "says",
        "mentioned",
        "stated",
        "states",
        "currently",
        "now",
        "also",
        "has",
        "have",
        "having",
        "is",
        "was",
        "were",
        "being",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
)


#: the share of a fact's content words its sources must say (``ground``'s ``min_support``)
GROUNDED = 0.6


def _words(fact_text: str, speakers: Sequence[str]) -> list[str]:
    free = _FREE_WORDS | {w for name in speakers for w in content_words(name)}
    # the frame round a proposal the user took up is the pipeline's words, no claim to support
    said = AGREED_FRAME.sub("", fact_text)
    words = [w for w in content_words(said) if w not in free and not w.isdigit()]
    return [w for w in words if w not in STOPWORDS]


#: an age written out: "29 years old", "a 7-year-old"
_AGE = re.compile(r"\b(\d{1,3})[\s-]+years?[\s-]+old\b", re.IGNORECASE)
_AGE_WORDS = frozenset(stem(w) for w in ("year", "years", "old"))


def _source_words(fact_text: str, source_texts: Sequence[str]) -> set[str]:
    """The content words of the sources; with "year" and "old" when the fact writes out as an
    age ("29 years old") a number the sources say ("I'm 29"): the words a fact adds to state
    a bare number as an age are not an invention."""
    src = {w for t in source_texts for w in content_words(t)}
    ages = {m.group(1) for m in _AGE.finditer(fact_text)}
    if ages and ages & {w for t in source_texts for w in tokens(t)}:
        src |= _AGE_WORDS
    return src


def support(fact_text: str, source_texts: Sequence[str], *, speakers: Sequence[str] = ()) -> float:
    """The share of the fact's content words (as :func:`ground` counts them) that occur in the
    source texts; 0 for a fact with none."""
    words = _words(fact_text, speakers)
    if not words:
        return 0.0
    src = _source_words(fact_text, source_texts)
    return sum(1 for w in words if w in src) / len(words)


def ground(
    fact_text: str,
    source_texts: Sequence[str],
    *,
    min_support: float = GROUNDED,
    speakers: Sequence[str] = (),
) -> str | None:
    """Reject a fact whose content words are not supported by the source turns.

    Returns ``None`` when the fact is grounded, else the reason. A word is supported when its
    stem occurs in the sources; the user's pronouns, "the user", the ``speakers``' names (a fact
    names the person it is about), month and weekday names (from resolved dates) and digits
    are free; "years old" after a number the sources say is supported (``_source_words``). At
    least ``min_support`` of the remaining content words, and at least one, must be supported.
    """
    words = _words(fact_text, speakers)
    if not words:
        # a bare number said of oneself ("I'm 61"): supported when the sources say that number
        numbers = {t for t in tokens(fact_text) if t.isdigit()}
        if numbers and numbers <= {t for src in source_texts for t in tokens(src)}:
            return None
        return "the fact has no content words"
    src = _source_words(fact_text, source_texts)
    supported = [w for w in words if w in src]
    share = len(supported) / len(words)
    if not supported or share < min_support:
        missing = sorted(set(words) - set(supported))
        return (
            f"only {len(supported)}/{len(words)} content words occur in its turns "
            f"(unsupported: {', '.join(missing[:8])})"
        )
    return None


#: A reply that is an acceptance and nothing more ("Go on then, book me in!", "omg yes pls",
#: "we'll go with that one"): the offline extractor takes the offer before it as agreed.
ACCEPTANCE = re.compile(
    r"^\s*(?:(?:oh+|ooh+|omg|ok(?:ay)?|great|perfect|sure|yes|yeah|yep|yup|please|pls|plz|definitely|"
    r"absolutely|go on(?: then)?|love (?:that|it|this)|(?:that )?sounds (?:good|great|perfect|lovely|ideal)|"
    r"nice|brilliant|amazing|ideal|lovely)[\s,!.]*)+"
    r"(?:do it|do that|go ahead|go for it|book it|book that|book me in|order it|lock it in|"
    r"sounds (?:good|great)|"
    # "we'll go with it", "let's go with that one": the pick taken
    r"(?:we|i)['’]?ll (?:go with|take|have) (?:it|that|this|that one|this one)|"
    r"let['’]?s go with (?:it|that|this|that one|this one)|"
    r"let['’]?s do (?:it|that)|that works|please(?: do)?)?(?:[\s,!.]+(?:please|pls|plz|thanks))?[\s!.]*$"
    r"|^\s*(?:yes|yeah|yep|sure|ok|okay|go on)\b.*\b(?:book|order|signed up|sign me up|do it|go ahead|"
    r"go for it|lock it in|please)\b"
    # "go for it", "book it, that's perfect timing": the go-ahead alone, with a word of thanks
    r"|^\s*(?:do it|do that|go ahead|go for it|book it|book that|book me in|order it|lock it in|"
    r"(?:we|i)['’]?ll (?:go with|take|have) (?:it|that|this|that one|this one)|"
    r"let['’]?s go with (?:it|that|this|that one|this one)|"
    r"let['’]?s do (?:it|that))\b[\s,!.]*(?:(?:please|pls|thanks|thank you|that['’]?s (?:perfect|great|ideal|"
    r"fine)(?: timing)?)[\s,!.]*)*$",
    re.IGNORECASE,
)

#: A reply that opens on a yes ("Yeah, and I've got a car too."), an acceptance when it says
#: more than the yes.
_OPENS_ON_YES = re.compile(
    r"^\s*(?:(?:oh+|ooh+|ah+|omg)[\s,!]*)?(?:yes|yeah|yep|yup|sure|ok(?:ay)?|absolutely|definitely|perfect|"
    r"go for it|go ahead)\b(?![\s,]*not\b)",  # not "absolutely not"
    re.I,
)

#: What the rules strip from a reply before reading it for an acceptance ("go for it 👍")
_SYMBOLS = re.compile(r"[^\w\s'’,.!?&-]+")


def without_symbols(text: str) -> str:
    """``text`` without emoji and other symbols ("go for it 👍" -> "go for it ")."""
    return _SYMBOLS.sub("", text)


def accepts(reply: str, *, says_more: bool) -> bool:
    """Whether a ``reply`` (without symbols) accepts what the assistant offered before it: it
    is an acceptance and nothing more, or it opens on a yes and ``says_more`` (it holds a
    statement of its own besides). The offline extractor agrees to the offer by this rule, and
    grounding lets the offer support a fact by it (:func:`_takes_up`), so the two never
    disagree on the same reply."""
    return bool(ACCEPTANCE.match(reply) or (says_more and _OPENS_ON_YES.match(reply)))


#: A reply that opens on a go-ahead, whatever follows ("sounds good, see you there")
_GO_AHEAD = re.compile(
    r"^\s*(?:(?:oh+|ooh+|ah+|wow)[\s,!.]*)?"
    r"(yes|yeah|yep|sure|ok|okay|please do|do it|go ahead|sounds good|perfect|great|"
    r"book (it|that)|that works|let'?s do (it|that))\b",
    re.IGNORECASE,
)


#: What the user says they did of the assistant's suggestion: "Done, just enrolled online!",
#: "signed up!", "booked it"
TOOK_UP = re.compile(
    r"^\s*(?:(?:done|ok(?:ay)?|right|great|yes|yep|yeah|perfect|why not|cool|nice|brilliant|sure)[\s,!.]+)*"
    r"(?:i(?:['’]ve| have)? )?(?:just |already )?"
    r"(?P<verb>enrolled|signed up|registered|booked (?:it|us|me|one|a \w+)|joined|ordered (?:it|one)|"
    # "Perfect, just switched to it", "why not! just paid for the 8-week block"
    r"bought (?:it|one)|switched (?:over )?to (?:it|that|them|that one)|paid (?:for|up)|subscribed)\b",
    re.IGNORECASE,
)


def _takes_up(reply: str) -> bool:
    """Whether the user's ``reply`` takes up what the assistant said before it ("yes", "book
    it", "Done, just enrolled"); every reply the offline extractor reads as an acceptance
    (:func:`accepts`) is one."""
    plain = without_symbols(reply)
    return bool(_GO_AHEAD.match(reply) or TOOK_UP.match(reply) or accepts(plain, says_more=True))


#: A short reply that takes nothing up: it puts the question off or turns it down ("Hmm, let
#: me think about it.", "Maybe later, thanks.", "Not sure yet").
_PUTS_OFF = re.compile(
    r"\b(?:let me think|i['’]?ll think|think about it|maybe later|not (?:sure|yet|now|really)|"
    r"no thanks|no thank you|nah|dunno|i don['’]?t know|we['’]?ll see|not today)\b",
    re.IGNORECASE,
)


def puts_off(text: str) -> bool:
    """Whether a reply puts a question off or turns it down ("hmm dunno, let me check first")."""
    return bool(_PUTS_OFF.search(text))


def fact_sources(messages: Sequence[Message], cited: Sequence[int]) -> list[str]:
    """The texts a fact citing messages ``cited`` may rest on: each cited user turn; with it
    the assistant's message just before when the turn confirms it ("Yes, book that") or is a
    short answer to it ("Pepper." to "What is your dog called?"), unless it puts the question
    off ("Hmm, let me think about it."); and a cited assistant
    message only when the user's next turn confirms it. An assistant's suggestion the user did
    not take up supports nothing."""
    out = []
    for i in dict.fromkeys(cited):
        if not 0 <= i < len(messages):
            continue
        m = messages[i]
        prev = messages[i - 1] if i > 0 else None
        if m.role == "user":
            out.append(m.content)
            if (
                prev is not None
                and prev.role == "assistant"
                and (_takes_up(m.content) or ("?" in prev.content and len(tokens(m.content)) <= 6))
                and not _PUTS_OFF.search(m.content)
            ):
                out.append(prev.content)
            elif prev is not None and prev.role == "assistant" and not _PUTS_OFF.search(m.content):
                # "Piranesi. Oh and we switched...": a short first sentence answers the
                # wh-question about the user that the assistant ended on, and that question
                # (only) supports the answer
                first = next((s for s in split_sentences(m.content) if s.strip()), "")
                asked = question_about_user(prev.content)
                if asked is not None and 0 < len(tokens(first)) <= 6 and not is_reaction(first):
                    out.append(asked)
        else:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if nxt is not None and nxt.role == "user" and _takes_up(nxt.content):
                out.append(m.content)
    return out


def _own_neighbours(messages: Sequence[Message], cited: Sequence[int]) -> list[int]:
    """For each cited user turn, the nearest user turn before it and after it (in the same
    add) by the same speaker; the assistant's messages are never among them."""
    out: list[int] = []
    for i in dict.fromkeys(cited):
        if not 0 <= i < len(messages) or messages[i].role != "user":
            continue
        name = messages[i].name
        for step in (-1, 1):
            j = i + step
            while 0 <= j < len(messages) and not (messages[j].role == "user" and messages[j].name == name):
                j += step
            if 0 <= j < len(messages) and j not in cited and j not in out:
                out.append(j)
    return sorted(out)


def widen(
    fact_text: str,
    messages: Sequence[Message],
    cited: Sequence[int],
    *,
    min_support: float = GROUNDED,
    speakers: Sequence[str] = (),
) -> list[int] | None:
    """The turns a fact its cited turns do not support rests on once the same speaker's turns
    next to them are read too: the cited turns and those neighbours that supply a word of the
    fact the cited ones lack. None when even they do not support it (``ground``'s rule), or
    the cited turns include no user turn."""
    sources = fact_sources(messages, cited)
    if not sources:
        return None
    have = _source_words(fact_text, sources)
    words = set(_words(fact_text, speakers))
    extra = []
    for j in _own_neighbours(messages, cited):
        adds = (words & _source_words(fact_text, [messages[j].content])) - have
        if adds:
            extra.append(j)
            have |= adds
    if not extra:
        return None
    texts = [*sources, *(messages[j].content for j in extra)]
    if ground(fact_text, texts, min_support=min_support, speakers=speakers) is not None:
        return None
    return sorted({*cited, *extra})


def grounded_turns(
    fact_text: str, messages: Sequence[Message], cited: Sequence[int], *, speakers: Sequence[str] = ()
) -> tuple[list[int] | None, str | None]:
    """The turns a fact rests on and, when it rests on none, why: its cited turns when they
    support it (``ground``), else those with the speaker's neighbouring turns (``widen``)."""
    sources = fact_sources(messages, cited)
    if not sources:
        return None, "it cites no turn it could rest on"
    if AGREED_FRAME.match(fact_text):
        # what the user took up ("I agreed: ...", framed so by the extractor, which read the
        # reply as a yes: "omg yes pls, put me down for this wednesday") rests on the
        # assistant's message it took up too
        took = [
            messages[i - 1].content
            for i in cited
            if 0 < i < len(messages) and messages[i].role == "user" and messages[i - 1].role == "assistant"
        ]
        sources = [*sources, *(t for t in took if t not in sources)]
    reason = ground(fact_text, sources, speakers=speakers)
    if reason is None:
        return list(cited), None
    wider = widen(fact_text, messages, cited, speakers=speakers)
    return (wider, None) if wider is not None else (None, reason)
