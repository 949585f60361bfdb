"""Reconciliation: what to do with a new fact given the stored facts it may repeat or correct.

The rules, in order (:func:`decide`; each decision says which rule made it):

1. **Near-duplicate**: cosine >= ``dedupe_threshold`` with the nearest stored fact and no
   conflicting specifics (numbers, negations, dates, names:
   :func:`~mem_pipeline.text.voice.conflicting_specifics`) -> REINFORCE it.
2. **Same slot** (``text.slots``: the same attribute of the same person, found by what the
   facts are about, not how they sound): a statement that something stopped ("I no longer eat
   meat", "I quit smoking") SUPERSEDEs the facts of the slot it names; the same value ->
   REINFORCE (a confirmation; a value the slot held before and lost is a *reversal*, said in
   the reason); another value SUPERSEDEs the slot's facts when the slot holds one value at a
   time (where one lives, one's diet) or the statement says it changed ("now", "switched").
3. **A negated specific**: "She's in Nantes, not Rennes", "I'm 34 not 43" SUPERSEDE the stored
   fact that says the negated name or number; where the stored fact can say what holds instead
   ("Dev's at Channel 4, not the BBC" after "... works as a sound engineer at the BBC"), it is
   UPDATEd to say it (``write.clauses``).
4. **Related** (cosine >= ``related_threshold``) with a correction cue ("actually", "moved",
   "no longer"...): SUPERSEDE the nearest related fact.
5. **A change of the same thing**: a statement that says something changed or ended ("these
   days", "now", "gone off", "changed my mind", "left", "sold", "cancelled") and shares a
   topic word with a stored fact of cosine >= 0.4 ("cold brew ... flat whites feel too milky
   now" after "my go-to coffee is a flat white"), or a name with one of cosine >= 0.3 ("Left Google in
   September" after "I work at Google"), SUPERSEDEs the nearest such fact of the same person
   (their names are neither topic nor shared names). "New", "started" and "again" are not
   cues here: "Jon started learning marketing tools" does not end "Jon got mentored". A change
   of taste, a statement that turns away from something and says what holds now ("superhero
   fatigue is real, i'm into korean dramas now": ``text.opinion``), SUPERSEDEs the nearest
   stored liking of the same person of cosine >= 0.4, shared words or not. Without a cue the
   offline rules stop here and ADD a related fact, and an LLM reconciler
   (``prompts/reconcile.md``) may decide instead: ADD, UPDATE (a merged sentence), SUPERSEDE
   or NOOP, for all such facts of an ``add`` in one call.
6. Otherwise ADD.

After the rules, a reply or a slip corrected in a chat may carry on or correct the user's
statement of the turn before (``write.followups``).

A decision is a plain value; ``write.apply`` carries it out and writes the history.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from ..llm import LLMClient, render_prompt
from ..models import ExtractedFact, ReconcileBatch, StoredFact
from ..text.lexical import content_words, stem
from ..text.opinion import polarity, turns_away
from ..text.slots import (
    BECAME,
    OVER,
    PROFESSION,
    PROFESSIONS,
    Slot,
    changes,
    says_current,
    slot_of,
    tells_history,
)
from ..text.smalltalk import FIRST_PERSON
from ..text.voice import conflicting_specifics, missing_specifics, third_person
from ._about import CALENDAR
from ._about import names as _names
from ._about import person as _person
from ._about import topic as _topic
from ._details import changed_detail
from .clauses import (
    BESIDE,
    DAY_WORD,
    DAY_WORDS,
    ORDINAL,
    WORKPLACE,
    day_number,
    day_word,
    instead,
    left_place,
    remainder,
    sets,
    substituted,
)

__all__ = [
    "Decision",
    "LLMReconciler",
    "Reconciler",
    "contrasts",
    "decide",
    "has_correction_cue",
    "slot_keeping",
    "unplaced",
]

Action = Literal["ADD", "REINFORCE", "UPDATE", "SUPERSEDE", "NOOP"]


@dataclass(frozen=True)
class Decision:
    """What to do with a new fact: ``target`` is the stored fact acted on; a SUPERSEDE may also
    replace ``also`` (the other facts of a single-valued slot)."""

    action: Action
    target: StoredFact | None = None
    text: str | None = None  # new text for UPDATE (merged), else the fact's own text
    reason: str = ""
    also: tuple[StoredFact, ...] = field(default_factory=tuple)
    #: replaced facts of several clauses that keep the clauses the new fact does not touch:
    #: (id, their text, the text they keep) (:func:`remainder`)
    keep: tuple[tuple[str, str, str], ...] = field(default_factory=tuple)


#: Foods a change of diet may rule out: a clause naming one goes with the diet it was part of
#: ("I eat meat every day, big fan of steak" -> vegetarian keeps nothing of it).
_ANIMAL_FOOD = re.compile(
    r"\b(?:meat|steaks?|beef|pork|bacon|ham|lamb|chicken|turkey|duck|sausages?|salami|burgers?|"
    r"ribs|brisket|mince|veal|venison|fish|salmon|tuna|cod|prawns?|shrimps?|seafood|sushi|"
    r"dairy|cheese|milk|butter|eggs?)\b(?![- ]free)",
    re.IGNORECASE,
)
#: ... a diet that rules them out ("dairy-free recipe" is a dish, not a diet that ends steak)
_NO_ANIMAL = re.compile(
    r"\b(?:vegetarian|vegan|pescatarian|pescetarian|plant[- ]based|no longer eats?|"
    r"(?:don['’]t|doesn['’]t) eat|stopped eating|gave up (?:meat|dairy|fish))\b",
    re.IGNORECASE,
)


class Reconciler(Protocol):
    """Decides, in one call, for the facts of an ``add`` the rules left undecided (each with its
    related stored facts). ``calls`` and the token counts say what it cost."""

    calls: int
    prompt_tokens: int
    completion_tokens: int

    def decide_many(self, items: Sequence[tuple[ExtractedFact, Sequence[StoredFact]]]) -> list[Decision]: ...


_CORRECTION = re.compile(
    r"\b(actually|correction|i meant|no longer|not any ?more|anymore|instead|changed|switched|swapped"
    r"|moved to|now (live|work|go|use)|not .{1,30} but|rather than|used to|sorry,? typo|typo)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:not|no longer|instead of|rather than)\s+(?:in |at |on |a |an |the )?[$£€]?"
    rf"([A-Z][\w-]+|\d(?:[\w:-]|[.,](?=\w))*|(?i:{DAY_WORD})\b)"
)


# "so not in pune anymore": a place left, however it is written
_NOT_ANYMORE = re.compile(
    r"\bnot (?:in|at|living in|based in) (?:the )?([\w-]+) any ?(?:more|longer)\b", re.I
)


def has_correction_cue(text: str) -> bool:
    """Whether ``text`` says it corrects something; a statement that tells history ("used to ...
    when she was a kid": ``text.slots.tells_history``) corrects nothing."""
    return bool(_CORRECTION.search(text)) and not tells_history(text)


def decide(
    fact: ExtractedFact,
    slot: Slot | None,
    neighbours: Sequence[tuple[StoredFact, float]],
    in_slot: Sequence[tuple[StoredFact, Slot]],
    *,
    dedupe_threshold: float,
    related_threshold: float,
) -> Decision | None:
    """The decision for one fact by the rules of the module docstring, or None for a related
    fact the rules cannot decide (an LLM reconciler may; offline it is an ADD).

    ``neighbours``: stored facts as (fact, cosine), best first; ``in_slot``: the stored facts
    of ``slot`` (current ones first; superseded ones tell a reversal), each with its slot."""
    text = fact.text
    if neighbours:
        best, sim = neighbours[0]
        if sim >= dedupe_threshold and not conflicting_specifics(third_person(text), third_person(best.text)):
            return Decision("REINFORCE", target=best, reason=f"near-duplicate (cosine {sim:.3f})")
    if slot is not None and in_slot:
        d = _by_slot(fact, slot, in_slot)
        if d is not None:
            return slot_keeping(d, text, slot)
    detail = changed_detail(text, neighbours)
    if detail is not None:
        return Decision("UPDATE", target=detail.target, text=detail.text, reason=detail.reason)
    for name in [*_NEGATED.findall(text), *_NOT_ANYMORE.findall(text)]:
        word = re.compile(rf"\b{_said(name)}\b", re.IGNORECASE)
        for f, sim in neighbours:
            if sim >= 0.3 and word.search(f.text) and not word.search(_after_negation(text, name)):
                said = instead(text, name)
                fixed = substituted(f.text, name, said) if said else None
                if said and fixed:
                    # "Dev's at Channel 4, not the BBC": the stored fact, with what holds
                    # instead, is all the correction says (its old text stays in history)
                    return Decision(
                        "UPDATE", target=f, text=fixed, reason=f"says {said}, not {name} (cosine {sim:.3f})"
                    )
                d = Decision("SUPERSEDE", target=f, reason=f"says not {name} (cosine {sim:.3f})")
                return _keeping(d, functools.partial(_mentions, word), name)
    related = [(f, s) for f, s in neighbours if s >= related_threshold]
    if related and has_correction_cue(text):
        f, s = related[0]
        return _whole(
            Decision("SUPERSEDE", target=f, reason=f"correction cue, related (cosine {s:.3f})"), text
        )
    mine = polarity(text)
    flipped = [
        (f, s) for f, s in related if mine and polarity(f.text) == -mine and _topic(text) & _topic(f.text)
    ]
    if flipped:  # "pineapple on pizza is the best" -> "... pineapple on pizza is gross"
        f, s = flipped[0]
        return Decision(
            "SUPERSEDE", target=f, reason=f"the opposite opinion of the same thing (cosine {s:.3f})"
        )
    if turns_away(text) and says_current(text):
        # "superhero fatigue is real, i'm into korean dramas now" after "big fan of marvel
        # films": a change of taste names what it left in other words than the liking did
        me = _person(fact.subject)
        for f, s in neighbours:
            if s < 0.4:
                break
            other = _person(f.metadata.get("speaker"))
            if polarity(f.text) == 1 and not (me and other and me != other):
                return Decision("SUPERSEDE", target=f, reason=f"a change of taste (cosine {s:.3f})")
    cued = [
        (f, s)
        for f, s in neighbours
        if s >= 0.5 and conflicting_specifics(third_person(text), third_person(f.text))
    ]
    if cued and has_correction_cue(text):
        f, s = cued[0]
        d = Decision("SUPERSEDE", target=f, reason=f"correction cue, other specifics (cosine {s:.3f})")
        # "I don't live in Leeds anymore" after "I'm a midwife in Leeds": the place alone
        names = _names(text) & _names(f.text)
        left = len(names) == 1 and left_place(text, next(iter(names)), f.text)
        return _keeping_rest(d, text, names) if left else _whole(d, text)
    said = _NEVER_CHANGED.sub(" ", text)  # "miso showed up one day and never left"
    if (_CHANGED.search(said) or _ENDED.search(said)) and not tells_history(text):
        me = _person(fact.subject)
        for f, s in neighbours:
            other = _person(f.metadata.get("speaker"))
            if me and other and me != other:
                continue  # one person's change never ends another's fact
            people = {me, other} - {""}
            shared = (_topic(text) & _topic(f.text)) - people - {stem(p) for p in people}
            names = (_names(text) & _names(f.text)) - people
            if (s >= 0.4 and shared) or (s >= 0.3 and names):
                said = ", ".join(sorted(names or shared)[:3])
                d = Decision("SUPERSEDE", target=f, reason=f"a change of {said} (cosine {s:.3f})")
                if polarity(f.text) or polarity(text) or turns_away(text):
                    return d  # a taste is one thing: every clause of it goes with the change
                # "night shifts" changed; "I drive forklifts at the Daventry depot" still holds
                return _keeping_rest(d, text, names or shared)
    if related:
        return None
    nearest = f"nearest cosine {neighbours[0][1]:.3f}" if neighbours else "no stored fact is similar"
    return Decision("ADD", reason=nearest)


_NEGATION = re.compile(r"\b(?:not|no|never|n['’]t|didn['’]t|don['’]t|doesn['’]t|isn['’]t|wasn['’]t)\b", re.I)
#: Words saying that something ended or changed, beyond the slot cues (``text.slots``).
_ENDED = re.compile(
    rf"\b(?:{OVER}|changed my mind|from now on|converted|sold|replaced|moved (?:on|out)|ex|"
    r"cancell?(?:ed|ing)|terminated|ended)\b",
    re.IGNORECASE,
)
#: The change cues of the change-of-the-same-thing rule: those of ``text.slots`` but "new",
#: "started", "again" and "back", which a statement about something else says as often.
_CHANGED = re.compile(
    r"\b(?:actually|correction|i meant|no longer|not \w+(?: \w+)? any ?more|anymore|any more|instead|"
    r"now|these days|nowadays|switched|swapped|changed|moved|quit|stopped|gave up|left|used to|"
    rf"{BECAME}|"  # what is one's own now: "rajma chawal has become my go-to comfort meal"
    # a slip of the speaker's own: "I misread the e-ticket: she lands on 11 January"
    r"misread|misremembered|mixed up|got (?:it|that|the \w+) wrong|i was wrong|"
    r"wrong (?:date|day|time|name))\b",
    re.IGNORECASE,
)
#: A change said not to have happened ("never left", "haven't changed").
_NEVER_CHANGED = re.compile(
    r"\b(?:never|not|didn['’]t|did not|haven['’]t|hasn['’]t|won['’]t|wouldn['’]t) (?:really |ever |yet )?"
    r"(?:left|quit|stopped|changed|moved|gave up|switched|sold|replaced|ended)\b",
    re.IGNORECASE,
)


def _said(name: str) -> str:
    """A pattern for ``name`` as a stored fact may write it: a day of the month with or
    without its ordinal ("not the 12th" names "12 September")."""
    n = day_number(name) if name.lower() in DAY_WORDS else None
    if n is not None:  # "not the ninth" names "the 9th" too
        return rf"(?:{re.escape(day_word(n))}|{n}(?:st|nd|rd|th)?)"
    day = ORDINAL.fullmatch(name)
    return rf"{day.group(1)}(?:st|nd|rd|th)?" if day else re.escape(name)


def contrasts(text: str) -> bool:
    """Whether ``text`` corrects by contrast, saying what holds instead of a name ("Ines is at
    St Thomas', not Guy's")."""
    return any(instead(text, name) for name in _NEGATED.findall(text))


def _after_negation(text: str, name: str) -> str:
    """``text`` without the negated mention of ``name`` (does it also say ``name`` plainly?)."""
    return re.sub(
        rf"\b(?:not|no longer|instead of|rather than)\s+(?:in |at |on |a |an |the )?[$£€]?{re.escape(name)}",
        "",
        text,
    )


#: A job title said of oneself ("I'm a senior developer", "I am the lead nurse").
_TITLE = re.compile(
    rf"\b(?:i['’]?m|i am|the user is) (?:an?|the) (?:[\w-]+ ){{0,2}}(?:{PROFESSIONS})\b", re.I
)


def _mentions(word: re.Pattern[str], clause: str) -> bool:
    return bool(word.search(clause))


def _says_any(words: set[str], clause: str) -> bool:
    """Whether ``clause`` names one of ``words`` (topic stems or names)."""
    return bool((_topic(clause) | _names(clause)) & words)


def slot_keeping(d: Decision, text: str, slot: Slot) -> Decision:
    """``d``, a decision of ``text`` by its ``slot`` (rule 2), with what a fact it supersedes
    keeps of its other clauses (:func:`remainder`)."""
    if d.action != "SUPERSEDE" or slot.stopped or slot.family == "reply_style":
        # "I no longer eat meat" ends "big fan of steak" too, which no rule can tell; and
        # every clause of how one wants answers ("short, bullet points") is about them
        return d
    if slot.family == "work" and _TITLE.search(text) and not WORKPLACE.search(text) and _same_trade(d, text):
        # "I'm a senior developer now" after "I'm a junior developer at Spotify": a new
        # title, the same employer ("Got promoted"); not "New job! I'm a dental nurse now"
        # after "I'm a barista at Fernhill Coffee"
        return _keeping(d, lambda clause: sets(clause, slot.family), workplace=True)
    if slot.family == "diet" and _NO_ANIMAL.search(text):
        # "went vegetarian" ends "big fan of steak" too
        return _keeping(d, lambda clause: sets(clause, "diet") or bool(_ANIMAL_FOOD.search(clause)))
    said = _specifics(text)
    return _keeping(
        d,
        # a clause naming what the correction speaks of again ("the wedding's booked for
        # October 2027" after "we ditched the big October wedding ... got married") is the
        # correction's to say: it says it, as it now holds
        lambda clause: sets(clause, slot.family) or bool(_specifics(clause) & said),
        place=slot.family == "work" and _says_no_place(text),
        beside=BESIDE.get(slot.family),
    )


def _specifics(text: str) -> set[str]:
    """The names ``text`` says (``_about.names``) and its days and months ("may" capitalised)."""
    days = {w.lower() for w in re.findall(r"[A-Za-z]+", text) if w.lower() in CALENDAR and w != "may"}
    return _names(text) | days


#: A correction that says where one is or goes ("in Porto", "moved", "relocating").
_PLACE_SAID = re.compile(r"\b(?:in|to|from|near|out of)\s+(?:the\s+)?[A-Z]|\b(?:moved|moving|relocat\w*)\b")


def _says_no_place(text: str) -> bool:
    """Whether a correction says nothing of where one is, so that a place the replaced fact
    said with the old job still holds ("I'm at Schaeffler now" after "I'm a test engineer at
    Siemens in Erlangen")."""
    return not sets(text, "residence") and not _PLACE_SAID.search(text)


def _whole(d: Decision, text: str) -> Decision:
    """``d``, a SUPERSEDE that replaces its fact whole, keeping the place a clause of work in it
    named when ``text`` says nothing of where one is (:func:`remainder` with ``place``)."""
    return _keeping(d, lambda clause: True, place=True) if _says_no_place(text) else d


def unplaced(d: Decision, moved: AbstractSet[str]) -> Decision:
    """``d`` without what it keeps of a replaced fact that says where one of ``moved`` (the
    subjects a fact of the same add places) lives: "Moved back home to Manchester in June. I'm
    a freelance translator now." replaces "I teach English at a hagwon in Seoul" whole, and
    leaves no "I'm based in Seoul" beside Manchester."""
    keep = tuple(
        k for k in d.keep if not ((s := slot_of(k[2])) and s.family == "residence" and s.subject in moved)
    )
    return d if keep == d.keep else replace(d, keep=keep)


def _same_trade(d: Decision, text: str) -> bool:
    """Whether a new title in ``text`` is one at the same employer as ``d``'s target said: a
    promotion, or the same trade named again, not a new job."""
    if re.search(r"\bpromot(?:ed|ion)\b", text, re.I):
        return True
    if d.target is None or re.search(r"\bnew (?:job|employer|company)\b", text, re.I):
        return False
    mine = {m.lower() for m in PROFESSION.findall(text)}
    return not mine or bool(mine & {m.lower() for m in PROFESSION.findall(d.target.text)})


def _keeping(
    d: Decision,
    touched: Callable[[str], bool],
    value: str | None = None,
    *,
    workplace: bool = False,
    place: bool = False,
    beside: re.Pattern[str] | None = None,
) -> Decision:
    """``d`` (a SUPERSEDE), with what each fact it replaces keeps (:func:`remainder`)."""
    keep = []
    for f in (d.target, *d.also):
        if f is None or ((s := slot_of(f.text)) is not None and s.stopped):
            continue  # "Quit keto, eating carbs again": a statement of change is all about its slot
        rest = remainder(f.text, touched, value, workplace=workplace, place=place, beside=beside)
        if rest is not None:
            keep.append((f.id, f.text, rest))
    return replace(d, keep=tuple(keep)) if keep else d


def _keeping_rest(d: Decision, text: str, changed: set[str]) -> Decision:
    """``d`` (a SUPERSEDE by ``text``, which changes what the words ``changed`` name), keeping
    the clauses of the replaced fact that name none of them, each of three content words or
    more ("stress at work" was only the why). "I don't live in Cardiff anymore" after "I'm a
    physiotherapist in Cardiff": one place changed, and the clause that named it keeps the rest
    (a place the change itself says one is no longer in; "left Google" takes the job at Google
    whole, and "the heat in Greece got too much" names Greece without leaving it)."""
    place = next(iter(changed)) if len(changed) == 1 else None
    fact = d.target.text if d.target is not None else ""
    if place is not None:  # a stem of both texts ("leicest") as the fact says it ("leicester")
        said = re.search(rf"\b{re.escape(place[:-1] if len(place) > 4 else place)}[\w'’-]*", fact, re.I)
        place = said.group() if said else place
    if place is not None and not left_place(text, place, fact):
        place = None
    kept = _keeping(d, functools.partial(_says_any, changed), place, place=_says_no_place(text))
    return replace(kept, keep=tuple(k for k in kept.keep if _stands_alone(k[2])))


def _stands_alone(rest: str) -> bool:
    """Whether what a correction left of a fact is worth keeping: three content words or more,
    or fewer that say what the person is in the first person ("I'm a dental hygienist", left
    when the rowing club the same fact named was given up); not a reason left behind ("stress
    at work"), and what says where one lives ("Based in Copenhagen", left when the employer
    the same fact named changed)."""
    if len(content_words(rest)) >= 3:
        return True
    found = slot_of(rest)
    return found is not None and (bool(FIRST_PERSON.match(rest)) or found.family == "residence")


#: A diet one follows, which holds one at a time.
_DIET = re.compile(
    r"\b(?:vegetarian|veggie|vegan|pescatarian|pescetarian|flexitarian|keto|paleo|carnivore|omnivore|"
    r"plant[- ]based|eat (?:meat|everything|anything) (?:again|now)|"
    r"(?:don['’]t|do not|no longer) eat meat)\b",
    re.I,
)


def _by_slot(fact: ExtractedFact, slot: Slot, in_slot: Sequence[tuple[StoredFact, Slot]]) -> Decision | None:
    """Rule 2 (same slot), or None when the slot decides nothing."""
    current = [(f, s) for f, s in in_slot if f.is_valid]
    past = [(f, s) for f, s in in_slot if not f.is_valid]
    value = set(slot.value)
    where = f"{slot.subject}/{slot.family}"
    # "I'm vegetarian again, the fish thing didn't last" mentions fish without confirming it
    negated = bool(_NEGATION.search(fact.text))
    if slot.stopped:
        hit = [f for f, s in current if not value or value & set(s.value) or not s.value]
        if hit:
            return Decision("SUPERSEDE", target=hit[0], also=tuple(hit[1:]), reason=f"{where}: stopped")
        return None
    same = [
        f
        for f, s in current
        if value and (value <= set(s.value) or (set(s.value) <= value and not negated)) and not s.stopped
    ]
    if same:
        return Decision("REINFORCE", target=same[0], reason=f"{where}: the same value, a confirmation")
    other = [
        f
        for f, s in current
        if not (value and (value <= set(s.value) or (set(s.value) <= value and not negated)))
    ]
    # one diet at a time ("vegan" after "vegetarian"), but a restriction adds to it ("a
    # low-sodium diet for my kidneys" after "I don't eat pork")
    single = slot.single and not (slot.family == "diet" and not _DIET.search(fact.text))
    if other and (single or changes(fact.text)):
        reversal = any(value and value & set(s.value) for _, s in past)
        why = "a reversal to an earlier value" if reversal else "a new value"
        return Decision("SUPERSEDE", target=other[0], also=tuple(other[1:]), reason=f"{where}: {why}")
    return None


class LLMReconciler:
    """One LLM call for the facts of an ``add`` the rules left undecided: ``prompts/reconcile.md``.

    Stored ids never reach the model: facts are listed with small integers and each answer's
    ``target`` is mapped back, so the model cannot invent or mistype an id. A target outside
    the list is treated as ADD: nothing is overwritten on a guess.
    """

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def decide_many(self, items: Sequence[tuple[ExtractedFact, Sequence[StoredFact]]]) -> list[Decision]:
        listed: list[StoredFact] = []
        blocks = []
        for i, (fact, stored) in enumerate(items):
            rows = []
            for f in stored[:4]:
                rows.append({"n": len(listed), "text": f.text, "since": f.valid_from.date().isoformat()})
                listed.append(f)
            blocks.append({"new": i, "text": fact.text, "stored": rows})
        prompt = render_prompt("reconcile", items=json.dumps(blocks, ensure_ascii=False, indent=1))
        out = self.llm.complete(ReconcileBatch, prompt)
        self.calls += out.calls
        self.prompt_tokens += out.prompt_tokens
        self.completion_tokens += out.completion_tokens
        decisions = [Decision("ADD", reason="LLM: no answer for this fact") for _ in items]
        for d in out.value.decisions:
            if not 0 <= d.fact < len(items):
                continue
            if d.action == "ADD":
                decisions[d.fact] = Decision("ADD", reason=f"LLM: {d.reason}".strip())
            elif d.target is None or not 0 <= d.target < len(listed):
                decisions[d.fact] = Decision("ADD", reason=f"LLM answered {d.action} for no listed fact")
            else:
                text = d.text if d.action == "UPDATE" and d.text else None
                lost = (
                    missing_specifics(third_person(items[d.fact][0].text), third_person(text))
                    if text
                    else set()
                )
                if lost:  # a merge must keep what the new fact says: "on Thursday at 4pm"
                    why = f"LLM's UPDATE left out {', '.join(sorted(lost))} of the new fact"
                    decisions[d.fact] = Decision("ADD", reason=why)
                    continue
                decisions[d.fact] = Decision(
                    d.action, target=listed[d.target], text=text, reason=f"LLM: {d.reason}".strip()
                )
        return decisions
