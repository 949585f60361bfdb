"""Grounding: a fact its turns do not support is rejected. The user's turns (and an
assistant turn the user confirmed) are what a fact may rest on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..models import Message
from ..text.lexical import STOPWORDS, content_words, stem

__all__ = ["ground", "grounding_sources"]

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
