"""Extraction: what turns an ``add``'s turns into candidate facts. Two extractors share one
shape, ``extract(messages, now) -> Extraction``: the offline rules (``write.offline``) and the
LLM (:class:`LLMExtractor`, ``prompts/extract_facts.md``).

The LLM reads the conversation as numbered lines ("[3] Caroline: ...") in windows that fit its
context (:func:`windows`): a whole session is a few calls, not one per turn, and a turn longer
than a window is split across windows, never cut. Each window repeats the last few lines of
the one before it for context; a fact taken only from those lines was the earlier window's to
take and is dropped. What the model returns is then made to hold: a fact cites lines of its
window (else it is grounded to the window's line that best supports it, or left with none and
rejected), names the person it is about, and has absolute dates (``text.dates``).

A small model passes over some statements ("pescatarian btw"): with a ``backfill`` extractor
(the offline rules, by default), its facts that no grounded fact of the model says are kept
too (:meth:`LLMExtractor._backfill`); and where the model said a statement without the change
it tells ("now", "no longer", "correction": "These days I'm all about cold brew" -> "The user
likes cold brew"), the statement in the user's words replaces the model's, since reconciliation
needs the cue. A fact that cites only small talk ("all good, just procrastinating lol") is
dropped.

An answer cut off by the output limit keeps the facts it finished (``Completion.truncated``),
and the window's lines after the last one those facts cite are read again in a window of their
own (:func:`rest_of`); a cut answer that finished none has its window split in two. Nothing
the model did not get to is skipped silently.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..errors import LLMError
from ..llm import LLMClient, render_prompt
from ..models import Category, ExtractedFact, ExtractionOutput, LLMFact, Message
from ..text.dates import resolve_relative
from ..text.lexical import content_words
from ..text.opinion import dislikes
from ..text.phrases import candidate_phrases
from ..text.slots import changes, is_attribute, says_current, says_ended
from ..text.smalltalk import is_small_talk
from ..text.voice import in_person
from .categories import CategoryModel, category_of, slot_category
from .ground import ground, grounded_turns, support
from .reconcile import has_correction_cue

__all__ = [
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "Line",
    "Window",
    "estimate_tokens",
    "lines_of",
    "rest_of",
    "windows",
]

log = logging.getLogger(__name__)


@dataclass
class Extraction:
    """An extractor's facts and what they cost. ``failed``: for each window the LLM could not
    answer, the indexes of its messages and the error (the facts of the other windows stand);
    ``regrounded``: facts whose cited lines did not support them (or lay outside their window)
    and were given the line that does."""

    facts: list[ExtractedFact]
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    windows: int = 0
    regrounded: int = 0
    #: facts the fallback extractor took from user turns the LLM took none from
    backfilled: int = 0
    #: model facts replaced by the rules' statement of the same turn, which tells a change the
    #: model's wording left out
    replaced: int = 0
    #: model facts that told a move of the conversation, not something about a person ("Gina
    #: asked Jon about the flooring", "Caroline agreed with Melanie's plans"): not kept
    acts: int = 0
    failed: list[tuple[list[int], LLMError]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: statements the rules keep and the memorable filter doubts: stored only when they replace
    #: a stored fact (a change is worth remembering: ``write.replaces``)
    doubtful: list[ExtractedFact] = field(default_factory=list)


class Extractor(Protocol):
    name: str

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction: ...


def estimate_tokens(text: str) -> int:
    """A safe upper estimate of ``text``'s tokens for the models we meet (English averages
    about 4 characters a token; 3 leaves room for names, numbers and other scripts)."""
    return len(text) // 3 + 1


@dataclass(frozen=True)
class Line:
    """One numbered line of the prompt: (part of) message ``index``, shown as ``[number]``."""

    index: int
    speaker: str
    text: str

    @property
    def number(self) -> int:
        return self.index + 1

    def render(self) -> str:
        return f"[{self.number}] {self.speaker}: {self.text}"


@dataclass(frozen=True)
class Window:
    """The lines of one extraction call; the first ``context`` repeat the window before."""

    lines: tuple[Line, ...]
    context: int = 0

    @property
    def new(self) -> tuple[Line, ...]:
        return self.lines[self.context :]

    @property
    def indexes(self) -> list[int]:
        return sorted({ln.index for ln in self.new})


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _pieces(text: str, budget: int) -> list[str]:
    """``text`` in pieces of at most ``budget`` estimated tokens: at sentence ends where it can,
    at word ends where a sentence is longer, at characters where a word is (nothing is cut)."""
    if estimate_tokens(text) <= budget:
        return [text]
    units: list[str] = []
    for sentence in _SENTENCE.split(text):
        if estimate_tokens(sentence) <= budget:
            units.append(sentence)
            continue
        step = max(1, budget * 3 - 3)
        for word in sentence.split(" "):
            units.extend(word[i : i + step] for i in range(0, len(word), step))
    out: list[str] = []
    for unit in units:
        if out and estimate_tokens(out[-1] + " " + unit) <= budget:
            out[-1] += " " + unit
        else:
            out.append(unit)
    return out


def lines_of(messages: Sequence[Message], budget: int) -> list[Line]:
    """The messages as prompt lines: speaker by name (else "User" / "Assistant"), whitespace
    folded so one message is one line, a message longer than ``budget`` tokens in pieces."""
    out = []
    for i, m in enumerate(messages):
        speaker = m.name or ("User" if m.role == "user" else "Assistant")
        text = " ".join(m.content.split())
        for piece in _pieces(text, max(16, budget - estimate_tokens(speaker) - 4)):
            out.append(Line(i, speaker, piece))
    return out


def windows(lines: Sequence[Line], budget: int, overlap: int) -> list[Window]:
    """Consecutive windows of ``lines`` whose rendered lines fit ``budget`` tokens; each after
    the first starts with the last ``overlap`` lines of the one before (fewer if they would not
    fit). Every line is new in exactly one window."""
    out: list[Window] = []
    start = 0
    while start < len(lines):
        ctx: list[Line] = []
        if out:
            for ln in reversed(out[-1].lines[-overlap:] if overlap else ()):
                ctx.insert(0, ln)
        used = sum(estimate_tokens(ln.render()) + 1 for ln in ctx)
        while ctx and used + estimate_tokens(lines[start].render()) + 1 > budget:
            used -= estimate_tokens(ctx.pop(0).render()) + 1
        end = start
        while end < len(lines):
            cost = estimate_tokens(lines[end].render()) + 1
            if end > start and used + cost > budget:
                break
            used += cost
            end += 1
        out.append(Window(tuple(ctx) + tuple(lines[start:end]), len(ctx)))
        start = end
    return out


def rest_of(win: Window, cited: Sequence[int], overlap: int) -> list[Window]:
    """What is left to read of ``win`` after an answer cut off by the output limit whose
    complete facts cite line numbers ``cited``: its new lines after the last cited one, with the
    ``overlap`` lines before them as context; when none of its new lines was cited, its new
    lines in two halves. Each window returned has fewer new lines than ``win`` (a window of one
    new line has nothing left to split: [])."""
    new = win.new
    numbers = {ln.number for ln in new}
    last = max((n for n in cited if n in numbers), default=None)
    if last is None:
        if len(new) < 2:
            return []
        half = len(new) // 2
        first = Window(win.lines[: win.context] + new[:half], win.context)
        ctx = new[:half][-overlap:] if overlap else ()
        return [first, Window(tuple(ctx) + new[half:], len(ctx))]
    done = [ln for ln in win.lines if ln.number <= last]
    rest = tuple(ln for ln in new if ln.number > last)
    if not rest:
        return []
    ctx = tuple(done[-overlap:]) if overlap else ()
    return [Window(ctx + rest, len(ctx))]


def _tells_change(text: str) -> bool:
    """Whether a statement says that something changed, ended or is corrected."""
    return changes(text) or has_correction_cue(text) or says_ended(text)


def _is_person(who: str, people: Sequence[str]) -> bool:
    """Whether ``who`` names someone of the conversation: a speaker, or the user."""
    low = who.lower()
    return low in ("the user", "user") or any(low == p.lower() for p in people)


def _lost_change(mine: str, theirs: Sequence[ExtractedFact]) -> bool:
    """Whether the user's words tell a change that the model's facts of the same statement
    lost: a change cue, or the dislike a change of taste turned away from ("superhero fatigue
    is real, i'm into korean dramas now" -> "The user is into Korean dramas now")."""
    if _tells_change(mine) and not any(_tells_change(f.text) for f in theirs):
        return True
    return dislikes(mine) and says_current(mine) and not any(dislikes(f.text) for f in theirs)


_USER = re.compile(r"^(?:the\s+)?user\b('s)?", re.IGNORECASE)
# What a person did in the conversation itself, which a small model reports as a fact: a
# question, agreement, thanks or praise says nothing durable about anyone.
_ACT = re.compile(
    r"^(?P<who>[Tt]he user|[A-Z][\w'-]*(?: [A-Z][\w'-]*)?) (?:also )?"
    r"(?:asked(?! \w+ (?:out|to marry))|agreed with|thanked|congratulated|complimented|praised|"
    r"replied|responded|greeted)\b"
)
# "Jon mentioned that he was considering Marley flooring": the report of a statement, told as
# the statement ("Jon was considering Marley flooring").
_REPORTED = re.compile(
    r"^(?P<who>[Tt]he user|[A-Z][\w'-]*(?: [A-Z][\w'-]*)?) (?:mentioned|said|stated|noted|shared|explained|"
    r"added|told \w+|revealed) that (?:he|she) "
)
_LABEL = re.compile(r"^(?:\[\d+\]\s*)?[A-Z][\w .'-]{0,40}:\s+")


class LLMExtractor:
    """Facts from an LLM, ``prompts/extract_facts.md`` -> :class:`ExtractionOutput`, one call
    per window (see the module docstring)."""

    name = "llm"

    def __init__(
        self,
        llm: LLMClient,
        *,
        context_tokens: int = 4096,
        output_tokens: int = 1024,
        overlap: int = 2,
        backfill: Extractor | None = None,
        rule_categories: bool = True,
        categories: CategoryModel | None = None,
    ) -> None:
        self.llm = llm
        self.backfill = backfill
        self.rule_categories = rule_categories
        #: the learned category of a fact the model files as work with no word of work in it
        self.categories = categories
        self.output_tokens = output_tokens
        self.overlap = overlap
        overhead = estimate_tokens(self._prompt([], "Monday 1 January 2024", ["Someone"], 0))
        self.budget = context_tokens - overhead - output_tokens
        if self.budget < 64:
            raise ValueError(
                f"an LLM context of {context_tokens} tokens leaves no room for the conversation "
                f"after the prompt ({overhead}) and the answer ({output_tokens})"
            )

    def _category(self, text: str, subject: str, said: Category) -> Category:
        """The category of an extracted fact. A slot the rules recognise outranks the model's
        label (a small model files a diet under health, a sister's city under other); with
        ``rule_categories`` so do the keyword rules (``write.categories``), and the model's
        label counts where they find nothing: with the local 1.5B model the rules agree with
        the behaviour set's labels more often than the model does (``eval/README.md``). The
        model's "work" is taken only where the rules see work too; else the learned
        ``categories`` model decides (``OTHER`` without one)."""
        if not self.rule_categories:
            return slot_category(text, subject) or said
        found = category_of(text, subject)
        if found is Category.OTHER and said is Category.WORK:
            # no word of work in it: the small model files hobbies as work ("restored a 1960s
            # Vespa", "passed my judo black belt grading", "a woodturning evening class")
            return category_of(text, subject, self.categories)
        return said if found is Category.OTHER else found

    def _prompt(self, lines: Sequence[Line], date: str, people: Sequence[str], context: int) -> str:
        if people:
            names = " or ".join(people) if len(people) < 3 else ", ".join(people[:-1]) + " or " + people[-1]
            who = " and ".join(people) if len(people) < 3 else ", ".join(people[:-1]) + " and " + people[-1]
            rule = f'Start it with the name of the person it is about ({names}), never with "I".'
        else:
            who, rule = "the user", 'Start it with "The user".'
        earlier = ""
        if context:
            last = lines[context - 1].number
            earlier = (
                f"11. Lines up to [{last}] were read before and are shown for context only: "
                "take no fact from them alone.\n"
            )
        return render_prompt(
            "extract_facts",
            date=date,
            people=who,
            name_rule=rule,
            earlier=earlier,
            lines="\n".join(ln.render() for ln in lines),
        )

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        date = f"{now:%A} {now.day} {now:%B %Y}"
        people = list(dict.fromkeys(m.name for m in messages if m.role == "user" and m.name))
        result = Extraction(facts=[])
        errors: list[LLMError] = []
        queue = deque(windows(lines_of(messages, self.budget), self.budget, self.overlap))
        while queue:
            win = queue.popleft()
            result.windows += 1
            prompt = self._prompt(win.lines, date, people, win.context)
            try:
                out = self.llm.complete(ExtractionOutput, prompt, max_tokens=self.output_tokens)
            except LLMError as e:
                log.warning("extraction of messages %s failed: %s", win.indexes, e)
                result.llm_calls += getattr(e, "attempts", 1) or 1
                result.failed.append((win.indexes, e))
                errors.append(e)
                continue
            result.llm_calls += out.calls
            result.prompt_tokens += out.prompt_tokens
            result.completion_tokens += out.completion_tokens
            for f in out.value.facts:
                fact = self._fact(f, win, messages, people, now, result)
                if fact is not None:
                    result.facts.append(fact)
            if out.truncated:
                more = rest_of(win, [n for f in out.value.facts for n in f.lines], self.overlap)
                log.info("an answer was cut at %d tokens: %d more windows", self.output_tokens, len(more))
                queue.extendleft(reversed(more))
        if errors and len(result.failed) == result.windows:
            raise errors[-1]
        if self.backfill is not None:
            self._backfill(messages, now, result)
        return result

    def _backfill(self, messages: Sequence[Message], now: datetime, result: Extraction) -> None:
        """The fallback extractor's facts that say what no fact of the model says (a small
        model passes over "pescatarian btw", or the second statement of a turn): those that
        share fewer than two content words (and less than half of theirs) with every grounded
        fact of the model from their turn. Between named people, only statements about the
        speaker (in the first person, or a bare attribute such as "pescatarian"). Failed windows
        are left out: they go to pending whole."""
        assert self.backfill is not None
        people = [m.name for m in messages if m.name]
        said: dict[int, list[tuple[set[str], ExtractedFact]]] = {}
        for f in result.facts:  # the model's facts that will be kept, by the turns they rest on
            turns, _ = grounded_turns(f.text, messages, f.source_turns, speakers=people)
            for i in turns or ():
                said.setdefault(i, []).append((set(content_words(f.text)), f))
        failed = {i for indexes, _ in result.failed for i in indexes}
        dropped: set[int] = set()
        fallback = self.backfill.extract(messages, now)
        for fact, doubted in [(f, False) for f in fallback.facts] + [(f, True) for f in fallback.doubtful]:
            if not fact.source_turns or failed & set(fact.source_turns):
                continue
            if (
                fact.subject not in (None, "the user")
                and fact.subject not in fact.text
                and not is_attribute(fact.text)
            ):
                # between named people, "Great to hear from you." or "Keep up the great work!"
                # says nothing about whoever said it (a chatbot's user, in fragments, does:
                # "nut allergy, severe")
                continue
            words = set(content_words(fact.text))
            same = [
                f
                for i in fact.source_turns
                for other, f in said.get(i, [])
                if len(words & other) >= min(2, len(words)) or len(words & other) * 2 >= len(words)
            ]
            if same and not _lost_change(fact.text, same):
                continue  # the model said it already
            if doubted:
                # what the fallback's memorable filter doubts ("Whats another word for happy",
                # "Prob just toast.") is kept only where it replaces a stored fact, as offline
                result.doubtful.append(fact.model_copy(update={"origin": "offline"}))
                continue
            # the model said it without the words that tell a change ("I no longer eat meat" ->
            # "The user wants vegetarian recipes"; "these days I'm all about cold brew, flat
            # whites feel too milky now" -> "The user likes cold brew"), which reconciliation
            # needs to end the old fact: the user's own words replace the model's
            dropped.update(id(f) for f in same)
            result.facts.append(fact.model_copy(update={"origin": "offline"}))
            result.backfilled += 1
        if dropped:
            result.facts = [f for f in result.facts if id(f) not in dropped]
            result.replaced += len(dropped)

    def _fact(
        self,
        f: LLMFact,
        win: Window,
        messages: Sequence[Message],
        people: Sequence[str],
        now: datetime,
        result: Extraction,
    ) -> ExtractedFact | None:
        """The model's fact made to hold (see the module docstring); None for a fact taken
        only from the window's context lines."""
        shown = {ln.number: ln.index for ln in win.lines}
        context = {ln.index for ln in win.lines[: win.context]}
        cited = list(dict.fromkeys(shown[n] for n in f.lines if n in shown))
        if cited and all(i in context for i in cited):
            return None  # the window before took it
        text = _LABEL.sub("", " ".join(f.text.split()))  # a model that copied the line's label
        if not text or text.endswith("?") or is_small_talk(text):
            return None  # a question, a greeting or thanks: no fact (rule 4 of the prompt)
        act = _ACT.match(text)
        if act and _is_person(act.group("who"), people):
            result.acts += 1
            return None  # what the conversation did, not what anyone is or did (rule 4)
        told = _REPORTED.match(text)
        if told and _is_person(told.group("who"), people):
            text = f"{told.group('who')} {text[told.end() :]}"
        spoken = [i for i in cited if messages[i].role == "user"]
        if not spoken or ground(text, [messages[i].content for i in spoken], speakers=people) is not None:
            best = _best_line(text, win, messages, people)
            if best is not None:
                cited = [best]
                result.regrounded += 1
                spoken = [i for i in cited if messages[i].role == "user"]
        if spoken and all(is_small_talk(messages[i].content) for i in spoken):
            return None  # "all good, just procrastinating lol" states nothing durable (rule 4)
        # a fact is about the person who said it (a small model often names the other one)
        subject = next((messages[i].name for i in cited if messages[i].name in people), None)
        if subject is None:
            subject = next((p for p in people if f.about and f.about.strip().lower() == p.lower()), None)
        if subject is not None:
            text = _USER.sub(lambda m: subject + ("'s" if m.group(1) else ""), text, count=1)
            text = in_person(text, subject)
        else:
            text = in_person(text, "the user")
        text = resolve_relative(text, now)
        return ExtractedFact(
            text=text,
            category=self._category(text, subject or "the user", f.category),
            concepts=list(f.concepts) or candidate_phrases(text)[:5],
            source_turns=cited,
            subject=subject,
        )


def _best_line(text: str, win: Window, messages: Sequence[Message], people: Sequence[str]) -> int | None:
    """The user message among the window's new lines that best supports ``text``, if one
    supports it enough to pass :func:`~.ground.ground`."""
    scored = [
        (support(text, [messages[i].content], speakers=people), i)
        for i in win.indexes
        if messages[i].role == "user"
    ]
    best = max(scored, key=lambda s: s[0], default=None)
    if best is None or ground(text, [messages[best[1]].content], speakers=people) is not None:
        return None
    return best[1]
