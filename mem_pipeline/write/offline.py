"""The offline extractor: facts from user messages by rules, with no LLM; honest about what
it cannot do (its docstring)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from ..models import Category, ExtractedFact, Message
from ..text.lexical import content_words, split_sentences, tokens
from ..text.phrases import candidate_phrases
from .extract import Extraction

__all__ = ["OfflineExtractor", "guess_category"]

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|yo|thanks|thank you|thx|cheers|good (morning|afternoon|evening|night)"
    r"|bye|goodbye|see you|ok|okay|sure|cool|great|nice|lol|haha|yes|no|yep|nope|alright"
    r"|sounds good|got it|no worries|you too)\b[\s!.,:)(-]*"
    r"(there|again|so much|a lot|everyone|all|buddy|mate)?[\s!.,:)(-]*$",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\s*(who|what|when|where|why|how|which|whose|do|does|did|can|could|would|will|should|is|"
    r"are|am|was|were|have|has|shall|may|might)\b",
    re.IGNORECASE,
)


# Category rules: the first rule whose pattern matches wins. Transparent on purpose.
_CATEGORY_RULES: list[tuple[Category, re.Pattern[str]]] = [
    (
        Category.HEALTH,
        re.compile(
            r"\b(allerg\w*|asthma|diabet\w*|doctor|medication|medicine|pills?|injur\w*|sick|ill"
            r"|illness|therapy|therapist|surgery|pain|migraine\w*|vegan|vegetarian|gluten|lactose"
            r"|diet|blood|pregnan\w*|hospital|symptom\w*|sleep|insomnia|anxiety|depress\w*)\b",
            re.I,
        ),
    ),
    (
        Category.PLAN,
        re.compile(
            r"\b(plan(ning)? to|going to|gonna|will|want to|wants to|hope to|intend\w*|next "
            r"(week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow"
            r"|goal|aim to|schedul\w*|appointment|deadline|someday|soon)\b",
            re.I,
        ),
    ),
    (
        Category.RELATIONSHIP,
        re.compile(
            r"\b(wife|husband|partner|girlfriend|boyfriend|son|daughter|kids?|children|mother|father"
            r"|mom|mum|dad|sister|brother|sibling\w*|friend\w*|cousin|aunt|uncle|grandm\w*|grandp\w*"
            r"|married|divorc\w*|dating|fianc\w*|colleague|neighbou?r|roommate|family)\b",
            re.I,
        ),
    ),
    (
        Category.WORK,
        re.compile(
            r"\b(work(ing)? (at|for|as|on)|job|employer|boss|manager|company|startup|office|career"
            r"|project|client|team|engineer|developer|designer|teacher|nurse|salary|promot\w*|hired"
            r"|intern\w*|freelanc\w*|colleagues?|meeting)\b",
            re.I,
        ),
    ),
    (
        Category.PREFERENCE,
        re.compile(
            r"\b(love|loves|like|likes|enjoy\w*|prefer\w*|favou?rite|hate|hates|dislike\w*|can't stand"
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


class OfflineExtractor:
    """Facts from user messages by simple rules, with no LLM.

    What it does: splits each *user* message into sentences, keeps statements (drops
    greetings, questions, fragments under three words or without a content word), keeps each kept
    sentence verbatim as one fact, assigns a category by the keyword rules in
    :func:`guess_category` (first match wins), and takes up to ``max_concepts`` keyword phrases
    (stopword-delimited runs, singular-normalised) as concepts.

    What it cannot do: it does not rewrite "I" into a self-contained third-person sentence, does
    not resolve "it", "she" or relative dates ("next Friday" stays as written), does not merge
    facts spread over several sentences, does not tell a durable fact from chit-chat beyond the
    rules above (an opinion about the weather is kept), does not understand negation or
    hypotheticals, and its categories are keyword guesses. Assistant messages never become facts.
    Configure an LLM (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``) for real extraction.
    """

    name = "offline"

    def __init__(self, *, max_concepts: int = 5, min_content_words: int = 1) -> None:
        self.max_concepts = max_concepts
        self.min_content_words = min_content_words

    def is_statement(self, sentence: str) -> bool:
        s = sentence.strip()
        if not s or _GREETING.match(s):
            return False
        if s.endswith("?"):
            return False
        if _QUESTION_START.match(s) and not s.endswith((".", "!")):
            return False
        return len(tokens(s)) >= 3 and len(content_words(s)) >= self.min_content_words

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        facts: list[ExtractedFact] = []
        seen: set[str] = set()
        for turn_id, msg in enumerate(messages):
            if msg.role != "user":
                continue
            for sentence in split_sentences(msg.content):
                if not self.is_statement(sentence):
                    continue
                key = " ".join(sentence.lower().split())
                if key in seen:
                    continue
                seen.add(key)
                facts.append(
                    ExtractedFact(
                        text=sentence,
                        category=guess_category(sentence),
                        concepts=candidate_phrases(sentence)[: self.max_concepts],
                        source_turns=[turn_id],
                    )
                )
        return Extraction(facts=facts)


# Words an extractor may add when it rewrites "I like tea" as "The user likes tea": they need
# no support in the turn.
