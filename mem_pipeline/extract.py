"""Extractors turn conversation turns into candidate facts; grounding rejects invented ones.

Two extractors share one shape, ``extract(messages, now) -> Extraction``:

- :class:`OfflineExtractor` (no LLM): rules, described honestly in its docstring;
- :class:`LLMExtractor` (see ``llm``): one structured LLM call per ``add``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ._text import STOPWORDS, candidate_phrases, content_words, split_sentences, stem, tokens
from .llm import LLMClient, render_prompt
from .models import Category, ExtractedFact, ExtractionOutput, Message

__all__ = [
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "OfflineExtractor",
    "ground",
    "grounding_sources",
    "guess_category",
]


@dataclass
class Extraction:
    facts: list[ExtractedFact]
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)


class Extractor(Protocol):
    name: str

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction: ...


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
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|we|our|us)\b", re.IGNORECASE)

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


def ground(fact_text: str, source_texts: Sequence[str], *, min_support: float = 0.6) -> str | None:
    """Reject a fact whose content words are not supported by the source turns.

    Returns ``None`` when the fact is grounded, else the reason. A word is supported when its
    stem occurs in the sources; the user's pronouns, "the user", month and weekday names (from
    resolved dates) and digits are free. At least ``min_support`` of the remaining content
    words, and at least one, must be supported.
    """
    src = set()
    for t in source_texts:
        src.update(content_words(t))
    words = [w for w in content_words(fact_text) if w not in _FREE_WORDS and not w.isdigit()]
    words = [w for w in words if w not in STOPWORDS]
    if not words:
        return "the fact has no content words"
    supported = [w for w in words if w in src]
    share = len(supported) / len(words)
    if not supported or share < min_support:
        missing = sorted(set(words) - set(supported))
        return (
            f"only {len(supported)}/{len(words)} content words occur in the user's turns "
            f"(unsupported: {', '.join(missing[:8])})"
        )
    # reject a first-person paraphrase of someone else's words? No: only user turns are passed
    _ = _FIRST_PERSON
    return None


_CONFIRM = re.compile(
    r"^\s*(yes|yeah|yep|sure|ok|okay|please do|do it|go ahead|sounds good|perfect|great|"
    r"book (it|that)|that works|let'?s do (it|that))\b",
    re.IGNORECASE,
)


def grounding_sources(messages: Sequence[Message]) -> list[str]:
    """The texts a fact may rest on: the user's turns, and an assistant turn the user
    explicitly confirmed in the next turn ("Yes, book that")."""
    out = []
    for i, m in enumerate(messages):
        if m.role == "user":
            out.append(m.content)
        elif m.role == "assistant" and i + 1 < len(messages):
            nxt = messages[i + 1]
            if nxt.role == "user" and _CONFIRM.match(nxt.content):
                out.append(m.content)
    return out


class LLMExtractor:
    """One LLM call per ``add``: ``prompts/extract_facts.md`` -> :class:`ExtractionOutput`."""

    name = "llm"

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        import json

        turns = [
            {"n": i, "role": m.role, **({"name": m.name} if m.name else {}), "content": m.content}
            for i, m in enumerate(messages)
        ]
        prompt = render_prompt(
            "extract_facts",
            today=now.date().isoformat(),
            turn_time=now.strftime("%A %Y-%m-%d %H:%M %Z").strip(),
            turns=json.dumps(turns, ensure_ascii=False, indent=1),
        )
        out = self.llm.complete(ExtractionOutput, prompt)
        user_turns = {i for i, m in enumerate(messages) if m.role == "user"}
        facts = []
        for f in out.value.facts:
            src = [t for t in f.source_turns if 0 <= t < len(messages)]
            facts.append(
                ExtractedFact(
                    text=f.text.strip(),
                    category=f.category,
                    concepts=f.concepts,
                    source_turns=src or sorted(user_turns)[:1],
                )
            )
        return Extraction(
            facts=facts,
            llm_calls=out.calls,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
        )
