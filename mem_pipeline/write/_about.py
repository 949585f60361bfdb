"""What a statement is about, roughly: the names it gives and its topic words, and whose it is
(pure). Shared by the reconciler's rules (``write.reconcile``), the rules that change one detail
of a fact (``write._details``) and the learned "does this replace that" (``write.replaces``)."""

from __future__ import annotations

import re

from ..text.lexical import STOPWORDS, content_words

__all__ = ["CALENDAR", "SELF", "names", "person", "topic"]

#: Words of change and time that say nothing of what a fact is about.
_NOT_TOPIC = frozenset(
    content_words(
        "now days these nowadays again anymore longer changed change mind switched started stopped quit "
        "left gone done moved new old always never really honestly just still everything thing things "
        "like love prefer want feel feels time times day week month year today lot"
    )
)


#: Months and weekdays: capitalised, and no names.
CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
#: The person speaks of themself ("I", "I'm", "we've").
SELF = re.compile(r"(?:i|we)(?:['’]\w+)?\b", re.I)


def person(name: object) -> str:
    """A speaker's or subject's name as the change rule compares it ("Caroline" -> "caroline",
    its stem too); "" for none, "the user" or a relation ("sister Ana")."""
    if not isinstance(name, str) or not name or " " in name.strip():
        return ""
    return name.strip().lower()


def topic(text: str) -> set[str]:
    """What a statement is about, roughly: its content words (stems) but words of change, time
    and liking."""
    return {w for w in content_words(text) if w not in _NOT_TOPIC and not w.isdigit()}


def names(text: str) -> set[str]:
    """Capitalised words after the first (names of people, places, companies), lowercased."""
    words = [re.sub(r"['’]s$", "", w) for w in re.findall(r"[A-Za-z][\w'’-]*", text)]
    return {
        w.lower()
        for w in words[1:]
        if w[0].isupper() and len(w) > 1 and w.lower() not in STOPWORDS and w.lower() not in CALENDAR
    }
