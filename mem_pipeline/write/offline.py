"""The offline extractor: facts from user messages by rules, with no LLM; honest about what
it cannot do (its docstring)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from ..models import Category, ExtractedFact, Message
from ..text.dates import resolve_relative
from ..text.lexical import split_sentences, tokens
from ..text.phrases import candidate_phrases
from ..text.slots import PROFESSIONS
from ..text.smalltalk import is_statement
from ..text.voice import in_person, strip_filler
from .categories import slot_category
from .extract import Extraction

__all__ = ["OfflineExtractor", "category_of", "guess_category"]

# where a compound statement splits into facts of their own: "I live in Lisbon and I work as a
# nurse", "I'm based in Leeds, working for an insurer", "...; my sister lives in Porto"
_COMPOUND = re.compile(
    r"\s*(?:,\s*(?:and|but|so|while)\s+|\s+(?:and|but|while)\s+|;\s*|,\s+)"
    r"(?=(?:i|i['’]m|i['’]ve|i['’]d|my|we|we['’]re|our)\b|(?:working|living|studying|training|teaching)\b)",
    re.IGNORECASE,
)
_CONFIRM = re.compile(
    r"^\s*(?:(?:oh+|ooh+|ok(?:ay)?|great|perfect|sure|yes|yeah|yep|yup|please|definitely|absolutely)[\s,!.]*)+"
    r"(?:do it|go ahead|book it|book that|sounds good|let['’]?s do (?:it|that)|that works|please)?[\s!.]*$"
    r"|^\s*(?:yes|yeah|yep|sure|ok|okay)\b.*\b(?:book|signed up|sign me up|do it|go ahead|please)\b",
    re.IGNORECASE,
)
_YES = re.compile(
    r"^\s*(?:(?:oh+|ooh+|ah+)[\s,!]*)?(?:yes|yeah|yep|yup|sure|ok(?:ay)?|absolutely|definitely)\b", re.I
)
_OFFER_LEAD = re.compile(
    r"^\s*(?:maybe|perhaps|how about|what about|why not|shall i|should i|would you like (?:me )?to|"
    r"do you want (?:me )?to|want me to|you could|you might|have you considered)\s+",
    re.IGNORECASE,
)


# a word that makes a clause of the words before an "and": a first person, a verb form
_CLAUSE_VERB = re.compile(
    r"\b(?:i|we|i['’]m|we['’]re|i['’]ve|i['’]d|am|is|are|was|were|be|been|has|have|had|do|does|did|"
    r"can|will|would|could|should|may|might|must|\w+ed|\w+ing|lives|works|loves|likes|hates|"
    r"owns|runs|goes|plays|teaches|studies|says|gets|makes|wants|needs|keeps|got|went|met)\b",
    re.IGNORECASE,
)

# what the assistant assumes before it proposes ("Since you're vegetarian, how about ..."): its
# words, not the user's, so a "yes" takes the proposal only
_PREMISE = re.compile(
    r"^\s*(?:since|as|because|given (?:that )?|now that|if)\s+you\b[^,]*,\s*", re.IGNORECASE
)


def split_compound(sentence: str) -> list[str]:
    """A statement of several facts, split where a new clause about the speaker starts ("I live
    in Lisbon and I work as a nurse" -> two); parts too short to stand alone stay joined, and so
    does a subject of two ("My boyfriend Marco and I have been together": no verb before the
    "and", so it names the first of two people, not a fact)."""
    parts = [p.strip(" ,;") for p in _COMPOUND.split(sentence) if p and p.strip(" ,;")]
    if len(parts) < 2 or any(len(tokens(p)) < 2 for p in parts):
        return [sentence]
    first = _COMPOUND.search(sentence)
    if first is not None and first.group().strip().lower() == "and" and not _CLAUSE_VERB.search(parts[0]):
        return [sentence]
    out = []
    for p in parts:
        if re.match(r"(?:working|living|studying|training|teaching)\b", p, re.IGNORECASE):
            p = "I'm " + p[0].lower() + p[1:]  # "..., working from home" -> "I'm working from home"
        out.append(p if p.endswith((".", "!")) else p + ".")
    return out


_WORKS_AS = re.compile(
    rf"\b(?:i['’]?m|i am|works? as|worked as|working as|job as|became|is) an? (?:[\w-]+ ){{0,2}}"
    rf"(?:{PROFESSIONS})s?\b",
    re.IGNORECASE,
)

_KIN = (
    r"wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|father|parent|mom|mum|dad|sister|"
    r"brother|twin|cousin|aunt|uncle|niece|nephew|in-law|colleague|neighbou?r|roommate|flatmate|"
    r"stepson|stepdaughter"
)

# Category rules: the first rule whose pattern matches wins. Transparent on purpose.
_CATEGORY_RULES: list[tuple[Category, re.Pattern[str]]] = [
    (Category.WORK, _WORKS_AS),
    (
        Category.HEALTH,
        re.compile(
            r"\b(allerg\w*|asthma|diabet\w*|doctor|medication|medicine|pills?|injur\w*|sick|ill"
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
            r"\b(plan(ning)? to|going to|gonna|will|want to|wants to|hope to|intend\w*|next "
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
            rf"|project|client|team|{PROFESSIONS}|salary|promot\w*|hired|retired|retirement"
            r"|intern\w*|freelanc\w*|colleagues?|meeting)\b",
            re.I,
        ),
    ),
    (
        Category.PREFERENCE,
        re.compile(
            r"\b(love|loves|(?<!runs )(?<!looks )(?<!feels )(?<!seems )(?<!sounds )like(?! new\b)|likes"
            r"|enjoy\w*|prefer\w*|favou?rite|hate|hates|dislike\w*|can't stand"
            r"|fan of|into|adore|rather|fond of|crave|obsessed)\b",
            re.I,
        ),
    ),
    (
        Category.SKILL,
        re.compile(
            r"\b(learn\w*|speak\w*|fluent|know how|can (code|cook|play|speak|drive|swim)|skill\w*"
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


def category_of(text: str) -> Category:
    """The category of a fact, by what it is about first (``write.categories``: where one lives
    -> biography, one's job -> work, a diet -> preference, or health when it is medical), then
    by the keyword rules (:func:`guess_category`)."""
    return slot_category(text) or guess_category(text)


class OfflineExtractor:
    """Facts from user messages by rules, with no LLM.

    What it does: splits each *user* message into sentences; drops greetings, thanks and
    acknowledgements, questions, requests to the assistant and passing moods ("I slept badly");
    strips opening filler ("Actually,", "Just so you know,"); splits a compound statement into
    its facts ("I live in Lisbon and I work as a nurse" -> two); writes relative dates as the
    dates they mean ("yesterday" -> "on 7 May 2023", from the time of the turn); in a
    conversation between named people, tells each fact about its speaker ("I went" ->
    "Caroline went"); categorises by what the fact is about (``category_of``) and takes up to
    ``max_concepts`` keyword phrases as concepts. A short "yes, book it" to the assistant's
    proposal ("Maybe book a flight to Rome?") becomes the fact that the user agreed to it.

    What it cannot do: it does not resolve "it", "she" or "there", does not merge facts spread
    over several sentences, does not understand hypotheticals or sarcasm, and its categories
    and moods are word lists. Assistant messages never become facts on their own. Configure an
    LLM (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``) for real extraction.
    """

    name = "offline"

    def __init__(self, *, max_concepts: int = 5) -> None:
        self.max_concepts = max_concepts

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        facts: list[ExtractedFact] = []
        seen: set[str] = set()
        for turn_id, msg in enumerate(messages):
            if msg.role != "user":
                continue
            texts = [
                part
                for sentence in split_sentences(msg.content)
                if is_statement(clean := strip_filler(sentence))
                for part in split_compound(clean)
            ]
            if turn_id > 0 and (_CONFIRM.match(msg.content) or (texts and _YES.match(msg.content))):
                texts = _agreed(messages[turn_id - 1]) + texts
            for text in texts:
                text = resolve_relative(text, now)
                if msg.name:
                    text = in_person(text, msg.name)
                key = " ".join(text.lower().split())
                if key in seen:
                    continue
                seen.add(key)
                facts.append(
                    ExtractedFact(
                        text=text,
                        category=category_of(text),
                        concepts=candidate_phrases(text)[: self.max_concepts],
                        source_turns=[turn_id],
                        subject=msg.name or "the user",
                    )
                )
        return Extraction(facts=facts)


_YOURS = [
    (re.compile(r"\byou(?:['’]re| are)\b", re.IGNORECASE), "I am"),
    (re.compile(r"\byou(?:['’]ve| have)\b", re.IGNORECASE), "I have"),
    (re.compile(r"\byou(?:['’]ll| will)\b", re.IGNORECASE), "I will"),
    (re.compile(r"\byou(?:['’]d| would)\b", re.IGNORECASE), "I would"),
    (re.compile(r"\byourself\b", re.IGNORECASE), "myself"),
    (re.compile(r"\byours\b", re.IGNORECASE), "mine"),
    (re.compile(r"\byour\b", re.IGNORECASE), "my"),
    (re.compile(r"\byou\b", re.IGNORECASE), "I"),
]


def _agreed(prev: Message) -> list[str]:
    """What the user agreed to by a bare "yes" to the assistant's proposal just before: the
    proposal (its last question), as a statement ("Maybe book a flight to Rome?" -> "I agreed
    to book a flight to Rome.")."""
    if prev.role != "assistant":
        return []
    asked = [s for s in split_sentences(prev.content) if s.strip().endswith("?")]
    if not asked:
        return []
    offer = _OFFER_LEAD.sub("", _PREMISE.sub("", asked[-1])).strip().rstrip("?").strip()
    offer = re.sub(r"^(?:i |we )?remember that ", "", offer, flags=re.IGNORECASE)
    if not tokens(offer):
        return []
    for pattern, mine in _YOURS:
        offer = pattern.sub(mine, offer)
    first = offer.split(" ", 1)[0]
    return [f"I agreed: {offer if first == 'I' else offer[0].lower() + offer[1:]}."]
