"""Replies and slips in a chat: what a user turn carries on or corrects of the user's statement
just before it, which reconciliation by similarity and slot cannot see.

::

    a short answer   to the assistant's question means what the question asks: it is embedded
                     with it ("When is the baby due?" / "Due in October."; :func:`with_question`)
    a reply          that takes up the assistant's suggestion or goes another way ("I agreed:
                     bouldering.", "Nah, we're driving up to the Lake District instead.")
                     carries on the user's statement before the suggestion: merged into it
                     (UPDATE; :func:`continues`, :func:`continuation`), so that the need and
                     what became of it are one memory
    a slip corrected ("Small correction to what I said, he's at Oakfield Primary", "I meant
                     Nantes") puts its name in place of the one it replaces in the user's fact
                     of the turn before, the rest of that fact kept (UPDATE; :func:`substituted`)
    an answer        to the assistant's question about that statement, in a few words and
                     nothing of the user's own ("Any particular brand?" / "walkers or nothing",
                     "Which studio?" / "the Bikram place in Surry Hills") means something only
                     with it: it is stored with ``about`` naming the statement's fact
                     (:func:`answers_about`), and goes when it goes (``write.apply.supersede``,
                     ``read.newer.set_aside``). "Gave up spin" leaves no "7am one at Ride
                     Republic" standing.

Both UPDATEs apply (:func:`follow_up`, after the rules) only to what the rules would ADD, and
only to the facts of the user's latest turn before this ``add`` said within
:data:`CONTINUES_WITHIN`; a fact the LLM reconciler would be asked about is left to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .._parts import Parts
from ..models import ExtractedFact, Message, Scope, StoredFact, session_key
from ..text.lexical import content_words, split_sentences
from .reconcile import Decision

__all__ = [
    "ANSWER_WORDS",
    "CONTINUES_WITHIN",
    "SHORT_ANSWER",
    "answers_about",
    "answers_question",
    "continuation",
    "continues",
    "corrects_slip",
    "follow_up",
    "said_before",
    "substituted",
    "with_question",
]

#: How long after the user's statement a reply or a correction still carries it on.
CONTINUES_WITHIN = timedelta(hours=1)

#: At most this many content words make a reply short enough to mean what it answers.
SHORT_ANSWER = 4
# a question that asks for something (not a proposal: "What about bouldering?", "How about
# Rome?"), which a short reply answers ("When is the baby due?" / "Due in October.")
_ASKS_WH = re.compile(r"^\W*(?!(?:what|how) about\b)(?:what|when|where|which|who|whose|how|why)\b", re.I)


def with_question(msgs: Sequence[Message], i: int, text: str) -> str:
    """What ``text`` (said in the user turn ``msgs[i]``, or a fact of it) is embedded as: with
    the question of the assistant's message just before it when the turn answers it in a few
    words ("When is the baby due?" / "Due in October.", "Yes, book it."), else as it is."""
    if not 0 < i < len(msgs) or msgs[i].role != "user" or msgs[i - 1].role != "assistant":
        return text
    if len(content_words(msgs[i].content)) > SHORT_ANSWER or len(content_words(text)) > SHORT_ANSWER:
        return text
    asked = [q for q in split_sentences(msgs[i - 1].content) if q.rstrip().endswith("?")]
    if not asked or not _ASKS_WH.match(asked[-1]):  # a yes/no offer: "Maybe later, thanks."
        return text
    return f"{asked[-1].strip()} {text}"


#: At most this many content words make a reply an answer about the statement before it.
ANSWER_WORDS = 6
#: A word of the speaker's own: a reply with one states something itself ("I'm vegan").
_OWN = re.compile(
    r"\b(?:i|i['’](?:m|ve|d|ll)|im|ive|me|my|mine|myself|we|we['’](?:re|ve|d)|us|our|ours)\b", re.IGNORECASE
)


def answers_about(msgs: Sequence[Message], i: int, text: str, before: Sequence[StoredFact]) -> str | None:
    """The id of the fact among ``before`` (the user's statement just before this ``add``)
    that ``text``, a fact of the user turn ``msgs[i]`` or the turn itself, only answers a
    question about, or None: the turn is a reply of at most :data:`ANSWER_WORDS` content words
    to the assistant's question (:func:`answers_question`), and ``text`` says nothing in the
    first person. When the statement made several facts, the answer is about the first."""
    if not before or not answers_question(msgs, i) or _OWN.search(text):
        return None
    if len(content_words(msgs[i].content)) > ANSWER_WORDS:
        return None
    return min(before, key=lambda f: (f.created_at, f.id)).id


_INSTEAD = re.compile(r"\binstead\b", re.IGNORECASE)
_DECLINE = re.compile(r"^\s*(?:nah|no|nope|not really|hmm+|ooh+|oh|well|ok(?:ay)?)\b[,.!]*\s*", re.IGNORECASE)


def continues(text: str) -> bool:
    """Whether a fact said in reply to the assistant's suggestion carries on the statement that
    prompted it: it takes the proposal up ("I agreed: book a flight to Rome") or goes another way
    ("... instead"). What the user confirmed of themselves ("I agreed: I prefer vegetarian
    recipes") stands alone."""
    if text.startswith("I agreed: I "):  # a statement of the user's own they confirmed stands alone
        return False
    return text.startswith("I agreed:") or bool(_INSTEAD.search(text))


def continuation(previous: str, text: str) -> str:
    """The statement ``previous`` carried on by ``text`` (pure): "We've got a long weekend at
    Easter; we're driving up to the Lake District instead." (a leading "Nah," is dropped)."""
    rest = _DECLINE.sub("", text).strip() or text.strip()
    if not rest.startswith(("I ", "I'", "I’")):
        rest = rest[:1].lower() + rest[1:]
    return f"{previous.rstrip().rstrip('.!')}; {rest}"


#: Words saying a statement corrects what the speaker just said.
_SLIP = re.compile(
    r"\b(?:correction|i meant|i mean|i misspoke|scratch that|my mistake|my bad|let me correct|"
    r"sorry,? (?:i meant|it['’]s)|what i (?:said|meant))\b",
    re.IGNORECASE,
)
_NAME = r"(?:the\s+)?[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|la)\s+)?[A-Z][\w'’.-]*)*"
_PREP = r"at|in|to|from|with|for"
_PLACED = re.compile(rf"\b({_PREP})\s+({_NAME})(?=[\s,.;!?]|$)")
_MEANT = re.compile(rf"\b(?i:i meant|i mean|it['’]s|correction:?)\s+({_NAME})\s*[.!]?\s*$")
_DATE_NAME = re.compile(
    r"^(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|christmas|easter)\b",
    re.IGNORECASE,
)


def corrects_slip(text: str) -> bool:
    """Whether a statement says it corrects what the speaker just said ("I meant Nantes",
    "Small correction to what I said, ...")."""
    return bool(_SLIP.search(text))


def _placed(text: str) -> list[tuple[str, str]]:
    """(preposition, name) of each name a text places after a preposition, dates left out."""
    found = [(m.group(1).lower(), m.group(2).rstrip(".")) for m in _PLACED.finditer(text)]
    return [(p, n) for p, n in found if not _DATE_NAME.match(n)]


def substituted(old: str, correction: str) -> str | None:
    """``old`` with the name ``correction`` puts in place of one of its own (pure): a name after
    the same preposition ("he's at Oakfield Primary" into "Kwame is in Year 3 at St Mary's"), or
    the bare name of "I meant Nantes" into a fact with a single placed name ("lives in Rennes").
    None when no single name of ``old`` is replaced, or the correction names what ``old``
    already says."""
    mine = _placed(old)
    new = [(p, n) for p, n in _placed(correction) if n.lower() not in old.lower()]
    meant = _MEANT.search(correction)
    if not new and meant is not None and len(mine) == 1 and meant.group(1).lower() not in old.lower():
        new = [(mine[0][0], meant.group(1).rstrip("."))]
    for prep, name in new:
        same = [n for p, n in mine if p == prep]
        if len(same) == 1:
            return re.sub(rf"\b{re.escape(prep)}\s+{re.escape(same[0])}", f"{prep} {name}", old, count=1)
    return None


def answers_question(msgs: Sequence[Message], i: int) -> bool:
    """Whether the user turn ``msgs[i]`` answers the assistant's question of this ``add``,
    with no user turn before it in the ``add`` (the statement it carries on is stored)."""
    if not 0 < i < len(msgs) or msgs[i].role != "user":
        return False
    if msgs[i - 1].role != "assistant" or "?" not in msgs[i - 1].content:
        return False
    return not any(m.role == "user" for m in msgs[:i])


def _answers_suggestion(msgs: Sequence[Message], fact: ExtractedFact) -> bool:
    """Whether ``fact`` comes from one user turn that answers the assistant's question of this
    ``add`` (:func:`answers_question`)."""
    return len(fact.source_turns) == 1 and answers_question(msgs, fact.source_turns[0])


def said_before(
    parts: Parts, scope: Scope, meta: dict[str, Any], mine: set[str], when: datetime
) -> list[StoredFact]:
    """The current facts of the user's latest turn before this ``add`` (of its session; ``mine``:
    the ids of this ``add``'s turns), when it was said within :data:`CONTINUES_WITHIN`."""
    recent = parts.store.recent_raw(scope, session_key(meta.get("session")), 3)
    before = [t for t in recent if t["id"] not in mine]
    if not before:
        return []
    turn = parts.store.get_facts(scope, [before[0]["id"]])  # the view may lack its time
    if not turn or when - turn[0].created_at > CONTINUES_WITHIN:
        return []
    return [f for f in parts.store.citing(scope, [turn[0].id]) if f.is_valid and f.kind == "fact"]


def _slip(fact: ExtractedFact, before: Sequence[StoredFact]) -> Decision | None:
    """The UPDATE that puts the name a slip's correction gives in place of the one it replaces,
    in the first of the facts ``before`` it fits (:func:`substituted`), or None."""
    for old in before:
        text = substituted(old.text, fact.text)
        if text is not None:
            return Decision("UPDATE", target=old, text=text, reason="a slip corrected: the rest of it kept")
    return None


def follow_up(
    parts: Parts,
    scope: Scope,
    msgs: Sequence[Message],
    meta: dict[str, Any],
    facts: Sequence[ExtractedFact],
    decisions: list[Decision | None],
    mine: set[str],
    when: datetime,
) -> list[str | None]:
    """Turn the rules' ADDs of replies and slips into UPDATEs of the fact they carry on or
    correct (in place); a later fact of the same ``add`` that targets a fact a slip corrected is
    a NOOP ("She's in Nantes, not Rennes." after "I meant Nantes."). The caller holds the lock.
    The user's facts of the turn before are read once, and only when a fact asks for them.
    Returns, for each fact, the fact it only answers a question about (:func:`answers_about`)."""
    before: list[StoredFact] | None = None

    def previous() -> list[StoredFact]:
        nonlocal before
        if before is None:
            before = said_before(parts, scope, meta, mine, when)
        return before

    corrected: set[str] = set()  # facts a slip correction of this add rewrote
    about: list[str | None] = [None] * len(facts)
    for k, f in enumerate(facts):
        d = decisions[k]
        if d is None:
            continue
        if d.target is not None and d.target.id in corrected:
            decisions[k] = Decision("NOOP", target=d.target, reason="this add already corrected it")
            continue
        if d.action != "ADD":
            continue
        slip = _slip(f, previous()) if corrects_slip(f.text) else None
        if slip is not None and slip.target is not None:
            decisions[k] = slip
            corrected.add(slip.target.id)
            continue
        if continues(f.text) and _answers_suggestion(msgs, f) and len(previous()) == 1:
            prev = previous()[0]
            decisions[k] = Decision(
                "UPDATE",
                target=prev,
                text=continuation(prev.text, f.text),
                reason="carries on the statement before the assistant's suggestion",
            )
            continue
        if _answers_suggestion(msgs, f):
            about[k] = answers_about(msgs, f.source_turns[0], f.text, previous())
    return about
