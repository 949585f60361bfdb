"""Opinions: whether a statement likes or dislikes what it names, and whether it turns away
from a taste ("superhero fatigue is real", "pineapple on pizza is gross", "I'm converted").

Pure word lists, no model. What they serve: telling a reversed opinion of the same thing
(``write.reconcile``), and keeping a change of taste in one fact when a message says both what
it turned from and what holds now (``write.offline.split_compound``).
"""

from __future__ import annotations

import re

from .slots import OVER, PROFESSION, tells_end

__all__ = ["dislikes", "polarity", "turns_away", "turns_from"]

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
#: ... and words that say what no longer suits the speaker ("any music distracts me now", "the
#: gym bores me to tears", "warehouse work wasn't for me", "not feeling jazz these days").
_NOT_FOR_ME = re.compile(
    r"\b(?:distracts? me|bores? me|(?:was|is|were|are)n['’]?t for me|not for me|not feeling|put me off|"
    r"(?:i['’]?m|i am) (?:so |totally |completely )?over(?! the moon)|"
    r"can['’]?t (?:take|handle|stand|do) (?:it|that|them|the \w+)(?: any ?more)?)\b",
    re.IGNORECASE,
)


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


#: What gives the value that holds instead, next to what a statement turned from.
_INSTEAD = re.compile(
    r"\b(?:prefer\w*|my (?:thing|go-to|jam)|all the way|from now on|instead|new|switched to|"
    r"(?:moved|moving|transferred|relocated|relocating) (?:(?:up|down|over|across|back) )?(?:to|in)|"
    r"started)\b",
    re.IGNORECASE,
)


def turns_from(text: str) -> bool:
    """Whether a statement only turns from something (pure): it says that something ended
    (``text.slots.tells_end``) or no longer suits the speaker ("any music at all distracts me
    now", "the gym bores me to tears now", "turns out warehouse work wasn't for me"), even said
    with "now", and gives nothing that holds instead: no liking or preference ("roasted
    chickpeas are my thing now", "I much prefer trail running"), no new place, role or value
    ("Left teaching, I'm a data analyst now": a profession; "the new place is rented through
    Habito")."""
    if not (tells_end(text) or _NOT_FOR_ME.search(text)):
        return False
    return not (_LIKES.search(text) or _INSTEAD.search(text) or PROFESSION.search(text))
