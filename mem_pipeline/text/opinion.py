"""Opinions: whether a statement likes or dislikes what it names, and whether it turns away
from a taste ("superhero fatigue is real", "pineapple on pizza is gross", "I'm converted").

Pure word lists, no model. What they serve: telling a reversed opinion of the same thing
(``write.reconcile``), and keeping a change of taste in one fact when a message says both what
it turned from and what holds now (``write.offline.split_compound``).
"""

from __future__ import annotations

import re

from .slots import OVER

__all__ = ["dislikes", "polarity", "turns_away"]

_LIKES = re.compile(
    r"\b(?:love[sd]?|adore[sd]?|(?:is|are|was) (?:the best|amazing|great|awesome|delicious)|favou?rite|"
    r"obsessed with|big fan of|(?:really |totally )?into|enjoy(?:s|ed)?)\b",
    re.IGNORECASE,
)
_DISLIKES = re.compile(
    r"\b(?:hate[sd]?|can['’]?t stand|(?:is|are|was) (?:gross|awful|disgusting|terrible|the worst|overrated)|"
    r"not a fan|dislike[sd]?|(?:sick|tired|bored) of|not into|gone off|went off|fatigue)\b",
    re.IGNORECASE,
)
#: Words that say a taste was left behind, beyond a dislike: "I'm converted", "done with
#: beach holidays", "changed my mind".
_LEFT = re.compile(rf"\b(?:{OVER}|converted|changed my mind|not anymore|no longer)\b", re.IGNORECASE)


def polarity(text: str) -> int:
    """Whether a statement likes (1) or dislikes (-1) what it names, or neither or both (0)."""
    likes, dislikes = bool(_LIKES.search(text)), bool(_DISLIKES.search(text))
    return int(likes) - int(dislikes)


def dislikes(text: str) -> bool:
    """Whether a statement says it dislikes or is tired of something ("pineapple on pizza is
    gross", "superhero fatigue is real"), whatever else it says."""
    return bool(_DISLIKES.search(text))


def turns_away(text: str) -> bool:
    """Whether a statement turns away from something it liked or did ("pineapple on pizza is
    gross", "superhero fatigue is real", "honestly I'm converted", "done with running")."""
    return bool(_DISLIKES.search(text) or _LEFT.search(text))
