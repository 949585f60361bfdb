"""The offline extractor: facts from user messages by rules, with no LLM; honest about what
it cannot do (its docstring)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from ..models import ExtractedFact, Message
from ..text.dates import resolve_relative
from ..text.lexical import has_clause_verb, split_sentences, tokens
from ..text.opinion import turns_away
from ..text.phrases import candidate_phrases, names_something
from ..text.slots import says_current
from ..text.smalltalk import is_reaction, is_statement, told_before_asking
from ..text.voice import as_user, in_person, strip_filler
from .answers import MAX_WORDS, answered, question_about_user
from .categories import CategoryModel, categories_of, category_of, timed
from .clauses import PAIR
from .extract import Extraction
from .ground import ACCEPTANCE, TOOK_UP, accepts, without_symbols
from .memorable import MemorableFilter

__all__ = ["OfflineExtractor"]

#: the words a clause may open on to say when it holds ("in the evenings I'm ...")
_WHEN = r"(?:in|on|at|during|every|this|next|last)"
# where a compound statement splits into facts of their own: "I live in Lisbon and I work as a
# nurse", "I'm based in Leeds, working for an insurer", "...; my sister lives in Porto"; not
# "me and my husband", two people
_COMPOUND = re.compile(
    r"\s*(?:,\s*(?:and|but|so|while)\s+|(?<!\bme)\s+(?:and|but|while)\s+|;\s*|,\s+)"
    # a new clause about the speaker, maybe after when it holds: "... and in the evenings I'm
    # teaching myself the charango", "... and in June we're flying to Madeira"
    # (not "Lukas and I are going": two people, one subject)
    r"(?!i\s+(?:are|were)\b)"
    rf"(?={_WHEN}\s+(?:(?!where|which|who|that|when)[\w'’-]+\s+){{0,3}}?"
    r"(?:i|i['’]m|i['’]ve|i['’]ll|we|we['’]re|we['’]ve|we['’]ll)\s|"
    r"(?:i|i['’]m|i['’]ve|i['’]d|my|we|we['’]re|our)\b|"
    # "..., Joost and I are going to Lisbon": a named person and the speaker, one subject
    # (``_NAMED_PAIR`` masks its "and")
    r"(?-i:[A-Z][a-z]+)\x01and\x01|"
    # "..., working from home" is a fact of its own; "... while working" says when (no split)
    r"(?<!while )(?:working|living|studying|training|teaching)\b|"
    r"(?<!while )(?:work|live|study|teach) (?:in|at|for|as|from)\b)",
    re.IGNORECASE,
)
_OFFER_LEAD = re.compile(
    r"^\s*(?:maybe|perhaps|how about|what about|why not|shall i|should i|would you like (?:me )?to|"
    r"do you want (?:me )?to|want me to|can i|could i|may i|you could|you might|have you considered)\s+",
    re.IGNORECASE,
)


# what the assistant assumes before it proposes ("Since you're vegetarian, how about ..."): its
# words, not the user's, so a "yes" takes the proposal only
_PREMISE = re.compile(
    r"^\s*(?:since|as|because|given (?:that )?|now that|if)\s+you\b[^,]*,\s*", re.IGNORECASE
)


# a clause that goes on with the first one's "I": "I live in Utrecht and work at Heineken"
_BARE_VERB = re.compile(r"(?:work|live|study|teach) (?:in|at|for|as|from)\b", re.IGNORECASE)
#: a clause that names nothing of its own but what the clause before it named
_REFERS_BACK = re.compile(r"\b(?:it|them|there|that one|the [\w-]+ one)\b(?!['’]s)", re.IGNORECASE)


#: a named person and the speaker at the start of a clause ("Joost and I are going ..."): one
#: subject, whose "and" starts no clause
_NAMED_PAIR = re.compile(r"(?:^|(?<=,\s))(?-i:[A-Z][a-z]+) and (?=(?:i|we)\b)", re.IGNORECASE)

#: words a sentence opens on to say when or what for, before its clause ("In March, I moved")
_OPENS_ON_WHEN = re.compile(
    r"\s*(?:in|on|at|during|every|this|next|last|after|before|since|for|by|over|from|until|around)\b",
    re.IGNORECASE,
)

#: a clause that opens on when it holds
_WHEN_FIRST = re.compile(rf"{_WHEN}\s", re.IGNORECASE)


def split_compound(sentence: str) -> list[str]:
    """A statement of several facts, split where a new clause about the speaker starts ("I live
    in Lisbon and I work as a nurse" -> two); parts too short to stand alone stay joined, and so
    does a subject of two ("My boyfriend Marco and I have been together": no verb before the
    "and", so it names the first of two people, not a fact), and so does a pair said beside its
    verb ("We live in Bergen, my wife and I, in a wooden house")."""
    if (named := _NAMED_PAIR.sub(lambda m: m.group().replace(" ", "\x01"), sentence)) != sentence:
        return [p.replace("\x01", " ") for p in split_compound(named)]
    pair = PAIR.search(sentence)
    if pair is not None:
        # the pair is who "we" are: no clause starts inside it
        mask = "\x00" * len(pair.group())
        masked = sentence[: pair.start()] + mask + sentence[pair.end() :]
        return [p.replace(mask, pair.group()) for p in split_compound(masked)]
    parts = [p.strip(" ,;") for p in _COMPOUND.split(sentence) if p and p.strip(" ,;")]
    if len(parts) < 2 or any(len(tokens(p)) < 2 for p in parts):
        return [sentence]
    first = _COMPOUND.search(sentence)
    if first is not None and first.group().strip().lower() == "and" and not has_clause_verb(parts[0]):
        return [sentence]
    # each part with where it starts, so that parts joined again keep the words between them
    found = list(_COMPOUND.finditer(sentence))
    seps = ["", *(m.group().strip(" ,").lower() for m in found)]
    starts = [0, *(m.end() for m in found)]
    joined: list[tuple[int, str]] = []
    for start, sep, p in zip(starts, seps, parts, strict=True):
        # "They live in Leeds and work in York": only the speaker's own "I" carries over
        bare = bool(_BARE_VERB.match(p)) and not re.match(r"\s*i\b", sentence, re.I)
        # "living in Dunedin with my partner and our two cats": a part with no verb of its own
        # is a noun phrase of the clause before it, not a fact
        verbless = not _BARE_VERB.match(p) and not has_clause_verb(p)
        # "... coltrane on repeat while i work": a short "while" clause says when, not a fact
        when = sep == "while" and len(tokens(p)) <= 3
        if joined and (
            bare
            or verbless
            # "In March, I moved to Leeds", "For our anniversary in May, Lukas and I are going
            # ...": what opens on when or what for, with no verb, belongs to the clause after it
            or (_OPENS_ON_WHEN.match(joined[-1][1]) and not has_clause_verb(joined[-1][1]))
            or when
            or _REFERS_BACK.search(p)
            or (turns_away(joined[-1][1]) and says_current(p))
        ):
            # "Got a Kindle ..., I read everything on it now": "it" is the Kindle; "pineapple on
            # pizza is gross, I'm a margherita person now": one change of taste, whole
            first_start = joined[-1][0]
            joined[-1] = (first_start, sentence[first_start : start + len(p)].strip(" ,;"))
        else:
            joined.append((start, p))
    out = []
    for _, p in joined:
        if re.match(r"(?:working|living|studying|training|teaching)\b", p, re.IGNORECASE):
            p = "I'm " + p[0].lower() + p[1:]  # "..., working from home" -> "I'm working from home"
        elif joined[0][1] != p and _BARE_VERB.match(p):
            p = "I " + p  # "I live in Utrecht and work at Heineken": the same "I" works there
        elif joined[0][1] != p and _WHEN_FIRST.match(p):
            p = p[0].upper() + p[1:]  # "..., and in June we're flying" -> "In June we're flying"
        out.append(p if p.endswith((".", "!")) else p + ".")
    return out


class OfflineExtractor:
    """Facts from user messages by rules, with no LLM.

    What it does: splits each *user* message into sentences; drops greetings, thanks and
    acknowledgements, questions, requests to the assistant and passing moods ("I slept badly");
    strips opening filler ("Actually,", "Just so you know,"); splits a compound statement into
    its facts ("I live in Lisbon and I work as a nurse" -> two), but keeps a clause that refers
    back ("..., I read everything on it now") and a change of taste ("pineapple on pizza is
    gross, I'm a margherita person now") whole; writes relative dates as the
    dates they mean ("yesterday" -> "on 7 May 2023", from the time of the turn); in a
    conversation between named people, tells each fact about its speaker ("I went" ->
    "Caroline went"); categorises by what the fact is about (``category_of``) and takes up to
    ``max_concepts`` keyword phrases as concepts. A short "yes, book it" to the assistant's
    proposal ("Maybe book a flight to Rome?") becomes the fact that the user agreed to it, and
    a bare answer to the assistant's question about the user ("What's your name?" / "Ngozi"),
    alone or before other sentences, the statement it makes ("My name is Ngozi.";
    ``write.answers``). A request that states a plan or a preference ("Remind me: dentist on 27
    January", "Can you switch my reminders to WhatsApp?") is kept as that (:func:`requested`).

    What it cannot do: it does not resolve "it", "she" or "there", does not merge facts spread
    over several sentences, does not understand hypotheticals or sarcasm, and its categories
    and moods are word lists. Assistant messages never become facts on their own. Configure an
    LLM (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``) for real extraction.
    """

    name = "offline"

    def __init__(
        self,
        *,
        max_concepts: int = 5,
        judge: MemorableFilter | None = None,
        categories: CategoryModel | None = None,
    ) -> None:
        self.max_concepts = max_concepts
        #: a learned second opinion that may drop a sentence the rules keep (``write.memorable``):
        #: what it doubts is returned apart (``Extraction.doubtful``), and the writer stores it
        #: only when the learned replacement model says it replaces a stored fact
        self.judge = judge
        #: a learned category, in place of the word rules (``write.categories.CategoryModel``)
        self.categories = categories

    def _statements(self, messages: Sequence[Message]) -> tuple[dict[int, list[str]], set[tuple[int, str]]]:
        """Each user turn's sentences that state something (the rules, in one batch for the
        whole call), and those of them the judge doubts (turn, sentence)."""
        said = {
            turn_id: _joined(
                [
                    clean
                    for sentence in split_sentences(msg.content)
                    if is_statement(
                        clean := requested(strip_filler(told_before_asking(sentence) or sentence))
                    )
                ]
            )
            for turn_id, msg in enumerate(messages)
            if msg.role == "user"
        }
        doubted: set[tuple[int, str]] = set()
        if self.judge is not None:
            flat = [(t, s) for t, sentences in said.items() for s in sentences]
            doubted = {(t, s) for (t, s), drop in zip(flat, self.judge.drop([s for _, s in flat])) if drop}
        return said, doubted

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        facts: list[ExtractedFact] = []
        doubtful: list[ExtractedFact] = []
        seen: set[str] = set()
        statements, doubted = self._statements(messages)
        for turn_id, msg in enumerate(messages):
            if msg.role != "user":
                continue
            texts = [
                (part, (turn_id, sentence) in doubted)
                for sentence in statements[turn_id]
                for part in _parts(sentence)
            ]
            plain = without_symbols(msg.content)  # "go for it 👍"
            if turn_id > 0 and accepts(plain, says_more=bool(texts)):
                # the acceptance itself ("Go on then, book me in!") says nothing more
                said = [(t, d) for t, d in texts if not ACCEPTANCE.match(without_symbols(t))]
                agreed = _agreed(messages[turn_id - 1])
                if not agreed and (did := TOOK_UP.match(plain)):
                    # "Perfect, just switched to it." after a statement, not an offer: what was done
                    agreed = _took_up(messages[turn_id - 1], did["verb"])
                    said = [(t, d) for t, d in said if not TOOK_UP.match(without_symbols(t))]
                texts = [(t, False) for t in agreed] + said
            elif (
                turn_id > 0
                and (did := TOOK_UP.match(plain))
                and (took := _took_up(messages[turn_id - 1], did["verb"]))
            ):
                # "Done, just enrolled online!" after the assistant's suggestion: what was done
                said = [(t, d) for t, d in texts if not TOOK_UP.match(without_symbols(t))]
                texts = [(t, False) for t in took] + said
            elif turn_id > 0 and messages[turn_id - 1].role == "assistant":
                # "What's your name?" / "Ngozi": the answer, worded by the question; also when
                # more follows it ("What are you reading?" / "Piranesi. Oh and we switched...")
                answer = None
                if not texts:
                    answer = answered(messages[turn_id - 1].content, plain)
                elif all(d for _, d in texts) and (
                    answer := answered(messages[turn_id - 1].content, plain, templated=True)
                ):
                    # "bex is fine" to "what should I call you?": a statement the filter doubts,
                    # and an answer ("Call me bex.")
                    texts = []
                elif (first := _first_fragment(plain, statements[turn_id])) is not None:
                    if len(tokens(plain)) <= MAX_WORDS and (
                        answer := answered(messages[turn_id - 1].content, plain)
                    ):
                        texts = []  # "No car. Cycle everywhere.": the whole short reply answers
                    elif answer := answered(messages[turn_id - 1].content, first):
                        # "The evening before, always." is the answer, not a statement of its own
                        texts = [(t, d) for t, d in texts if t.rstrip(".!") != first.rstrip(".!")]
                if texts and question_about_user(messages[turn_id - 1].content) is not None:
                    # what the user says to a question about them ("Anyone waiting for you at
                    # home?" / "Two axolotls in a big tank, Pickle and Gherkin.") is about them
                    texts = [(t, False) for t, _ in texts]
                texts = ([(answer, False)] if answer else []) + texts
            for text, doubt in texts:
                text = resolve_relative(text, now)
                if msg.name:
                    text = in_person(text, msg.name)
                key = " ".join(text.lower().split())
                if key in seen:
                    continue
                seen.add(key)
                (doubtful if doubt else facts).append(
                    ExtractedFact(
                        text=text,
                        category=timed(category_of(text), text, now),
                        concepts=candidate_phrases(text)[: self.max_concepts],
                        source_turns=[turn_id],
                        subject=msg.name or "the user",
                    )
                )
        if self.categories is not None and (facts or doubtful):
            # what a fact's slot tells comes first ("My sister Ana is a nurse": relationship)
            labels = categories_of([f.text for f in facts + doubtful], model=self.categories)
            labels = [timed(c, f.text, now) for f, c in zip(facts + doubtful, labels)]
            labelled = [f.model_copy(update={"category": c}) for f, c in zip(facts + doubtful, labels)]
            facts, doubtful = labelled[: len(facts)], labelled[len(facts) :]
        return Extraction(facts=facts, doubtful=doubtful)


# a request that states what the user will do or wants from now on: "Remind me: dentist on 27
# January at 4pm", "Can you switch my reminders to WhatsApp?"
_REMIND = re.compile(
    r"^\s*(?:(?:please|pls|can you|could you|would you|will you|also|and)[\s,]+)*remind me"
    r"(?:\s*(?:about|of|that)\b|\s*[:,–—-])?\s+(?!(?:what|who|where|when|how|which|why|if|whether)\b)(.+?)"
    r"[\s?.!]*$",
    re.IGNORECASE,
)
_SWITCH = re.compile(
    r"^\s*(?:(?:please|pls|also|and)[\s,]+)*(?:can|could|would|will) you (?:please )?"
    r"(switch|change|move|set|update) my (.+?) (?:over )?to (.+?)(?:,?\s+please)?[\s?.!]*$",
    re.IGNORECASE,
)
_DONE_FORM = {"switch": "switched", "change": "changed", "move": "moved", "set": "set", "update": "updated"}


def requested(sentence: str) -> str:
    """What a request to the assistant states of the user, as a statement ("Remind me:
    dentist appointment on 27 January" -> "Reminder: dentist appointment on 27 January.",
    "Remind me to call Mum" -> "Reminder to call Mum.", "Can you switch my reminders to
    WhatsApp?" -> "I want my reminders switched to WhatsApp."); any other sentence as it is."""
    m = _REMIND.match(sentence)
    if m is not None:
        rest = m.group(1)
        return f"Reminder {rest}." if rest.lower().startswith("to ") else f"Reminder: {rest}."
    m = _SWITCH.match(sentence)
    if m is not None:
        verb, what, to = m.groups()
        return f"I want my {what} {_DONE_FORM[verb.lower()]} to {to}."
    return sentence


# a clause that opens on what stayed as it was: "Same city, but the office is further away",
# "same job still, I go by train every day", "Same city, same test lead role, but ..."
_SAME_LEAD = re.compile(
    r"^\s*(?:(?:oh|but|and|still)[\s,]+)*(?:the )?same (?:[\w'’-]+ ){0,2}?[\w'’-]+"
    r"(?:[\s,]+(?:though|tho|still|really|basically|thank god|thankfully))*\s*[,;]\s*"
    r"(?:(?:but|and|so|just|only)\b\s*)?",
    re.IGNORECASE,
)


def without_same(part: str) -> str:
    """``part`` without the words that open it on what stayed the same ("Same university,
    she's still at Moi." -> "She's still at Moi."): they name what the statement before said,
    and would answer a question about it ("which city?") with no city."""
    rest = part
    while (m := _SAME_LEAD.match(rest)) is not None and m.end() < len(rest):
        rest = rest[m.end() :]
    return rest if rest == part else rest[0].upper() + rest[1:]


def _parts(sentence: str) -> list[str]:
    """The facts of one statement (:func:`split_compound`), without a part that states nothing
    on its own ("Same job though, I transferred to the Christchurch branch"), nor the words a
    part opens on to say what stayed the same (:func:`without_same`)."""
    parts = split_compound(sentence)
    kept = [without_same(p) for p in parts]
    if len(parts) < 2 and kept == parts:
        return parts
    return [k for k in kept if is_statement(k)]


#: a subject or a finite verb, which makes a sentence more than a fragment ("evening" is not)
_FINITE = re.compile(
    r"\b(?:i|we|you|he|she|they|it|i['’]m|we['’]re|it['’]s|am|is|are|was|were|be|been|has|have|had|"
    r"do|does|did|can|will|would|could|should|may|might|must|\w+ed)\b",
    re.IGNORECASE,
)


def _first_fragment(message: str, statements: list[str]) -> str | None:
    """The message's first sentence when it is a fragment with no verb and no reaction (a bare
    answer: "Piranesi.", "The evening before, always."), ahead of the sentences that state
    something; else None."""
    sentences = [s for s in split_sentences(message) if s.strip()]
    if len(sentences) < 2:
        return None
    first = strip_filler(sentences[0])
    if is_reaction(first) or (first in statements and (_FINITE.search(first) or len(tokens(first)) > 6)):
        return None
    return first


#: emoji and other symbols, which say nothing of whether a reply accepts an offer


# a yes/no question about the user ("Are you following a training plan?"), answered yes: what
# the user confirmed of themselves, in the first person
_ASKED_ABOUT_YOU = re.compile(r"^\s*(are|do|have|were)\s+you\s+(.+)$", re.IGNORECASE)
_I_AM = {"are": "I am", "do": "I", "have": "I have", "were": "I was"}
# any other question that opens on a verb of its own asks something no "yes" turns into a fact
_AUXILIARY = re.compile(
    r"^\s*(?:is|are|am|was|were|do|does|did|has|have|had|can|could|will|would|should|may|might|must)\b",
    re.IGNORECASE,
)


def _agreed(prev: Message) -> list[str]:
    """What the user agreed to by a bare "yes" to the assistant's proposal just before: the
    proposal (its last question), as a statement ("Maybe book a flight to Rome?" -> "I agreed:
    book a flight to Rome."); a question about the user, as what they confirmed ("Are you
    following a training plan?" -> "I am following a training plan.")."""
    if prev.role != "assistant":
        return []
    asked = [s for s in split_sentences(prev.content) if s.strip().endswith("?")]
    if not asked:
        return []
    offer = _OFFER_LEAD.sub("", _PREMISE.sub("", asked[-1])).strip().rstrip("?").strip()
    if _ELLIPTIC.match(offer):
        # "I can book a table for two at Dishoom at 7:30pm on Saturday. Shall I?": the offer
        # is the statement the question stands for
        lead = [t for t in split_sentences(prev.content[: prev.content.rfind(asked[-1])]) if t.strip()]
        stated = _I_CAN.match(lead[-1]) if lead else None
        if stated is None:
            return []
        return [f"I agreed: {as_user(lead[-1][stated.end() :].strip().rstrip('.!'))}."]
    offer = re.sub(r"^(?:i |we )?remember that ", "", offer, flags=re.IGNORECASE)
    if not tokens(offer):
        return []
    about = _ASKED_ABOUT_YOU.match(offer)
    if about:  # "Are you following a training plan?" / "Yeah": a statement of the user's own
        rest = about.group(2)
        rest = as_user(rest)
        return [f"{_I_AM[about.group(1).lower()]} {rest}."]
    if _AUXILIARY.match(offer):  # "Is anyone helping you out?": a question, not a proposal
        return []
    if _CHAT_ONLY.search(offer):  # "Want a silly joke to lift it?": over when it is told
        return []
    offer = as_user(offer)
    first = offer.split(" ", 1)[0]
    agreed = f"I agreed: {offer if first == 'I' else offer[0].lower() + offer[1:]}"
    before = prev.content[: prev.content.rfind(asked[-1])]
    said = [t for t in split_sentences(before) if not t.strip().endswith("?")]
    if not (_IT.search(offer) or _SLOT.search(offer)):
        # what the offer goes with, when the statement just before it names it ("The Couch to
        # 5K app is perfect for that. Want me to set reminders for Monday mornings?")
        if said and names_something(said[-1]):
            context = said[-1].strip().rstrip(".!")
            return [f"{agreed} ({context})."]
        return [f"{agreed}."]
    # what "it" or "a place" is: the assistant's statement just before the offer ("There's a
    # sourdough workshop at Flour Power this Saturday at 10am. Want me to book you a place?"),
    # else the name it gave
    if said and tokens(said[-1]) and _ACTION.search(offer):
        context = said[-1].strip().rstrip(".!")
        if not _NAME_RUN.match(context):
            context = context[0].lower() + context[1:]
        return [f"{agreed} ({context})."]
    named = _antecedent(prev.content, asked[-1])
    return [f"{agreed} ({named})." if named else f"{agreed}."]


#: a question that stands for the offer said before it ("Shall I?", "Want me to?")
_ELLIPTIC = re.compile(
    r"^\s*(?:shall i|should i|want me to|do you want me to|would you like me to|(?:is that|does that sound|"
    r"sound) (?:ok|okay|good|alright)|ok|okay)?\s*$",
    re.IGNORECASE,
)
#: the assistant's offer to do something, said as a statement ("I can book ...", "I'll add ...")
_I_CAN = re.compile(r"^\s*(?:i can|i could|i['’]ll|i will|i['’]d be happy to|happy to)\s+", re.IGNORECASE)
#: a sentence that points back at the one before for what it is about ("Earl Grey, milk, no
#: sugar. That's how I take my tea.")
_POINTS_BACK = re.compile(r"^\s*(?:that|this)(?:['’]s| is) (?:how|what|why|where|when|the way)\b", re.I)


def _joined(sentences: list[str]) -> list[str]:
    """``sentences`` with each one that points back at the statement before it joined to that
    one: "Earl Grey, milk, no sugar: that's how I take my tea, always have." is one fact, which
    a later "I can't do Earl Grey anymore" replaces whole."""
    out: list[str] = []
    for sentence in sentences:
        if out and _POINTS_BACK.match(sentence):
            out[-1] = f"{out[-1].rstrip('.!')}: {sentence[0].lower()}{sentence[1:]}"
        else:
            out.append(sentence)
    return out


def _took_up(prev: Message, verb: str) -> list[str]:
    """What the user did of the assistant's suggestion just before, when they say they did it
    ("The library runs a beginners' Welsh evening class on Wednesdays" / "Done, just
    enrolled online!" -> "I enrolled: the library runs a beginners' Welsh evening class on
    Wednesdays."): the suggestion's first statement that names something."""
    if prev.role != "assistant":
        return []
    for sentence in split_sentences(prev.content):
        said = _PREMISE.sub("", sentence).strip()
        if said.endswith("?") or not tokens(said) or not re.search(r"\b[A-Z][a-z]", said[1:]):
            continue
        said = re.split(r",\s*(?:it|that|which)\s+(?:could|might|would|may|is|['’]s)\b", said)[0]
        said = as_user(said.rstrip(".!"))
        done = "signed up" if verb.lower().startswith("signed") else verb.split()[0].lower()
        return [f"I {done}: {said[0].lower() + said[1:]}."]
    return []


#: an offer of something said in the chat and done with (a joke, a story, a pep talk)
_CHAT_ONLY = re.compile(
    r"\b(?:jokes?|story|stories|poem|riddles?|fun facts?|quiz|pep talk|hug|virtual hug|pun|limerick|"
    r"tongue twister|quote)\b",
    re.IGNORECASE,
)
#: an offer to do something about "it" for the user (book, order, reserve...), which makes what
#: the assistant said before it the user's plan ("Want a silly joke to lift it?" does not)
_ACTION = re.compile(
    r"\b(?:book|order|reserve|sign|buy|get|schedule|set up|put|pencil|add|register|enrol|enroll|grab|hold|"
    r"note|save|log|set|remind|hire|rent|give it a go|give it a try|try it|try that|go with)\b",
    re.IGNORECASE,
)
#: an offer of a place, a table, a slot, or the way to one ("the sign-up link", "the booking
#: form"): what it is the assistant said before
_SLOT = re.compile(
    r"\b(?:a|the) (?:place|spot|seat|table|slot|ticket|appointment|booking)s?\b|\bme in\b|"
    r"\bthe (?:sign[- ]?up |booking |registration |enrol?ment |application )?(?:link|form)\b",
    re.I,
)


_IT = re.compile(r"\b(?:it|that|them|this one|that one)\b", re.IGNORECASE)
# a name of several words the assistant's message gave before its offer ("The Garmin Forerunner
# 265 is about £299 ... Want me to order it?")
_NAME_RUN = re.compile(r"\b[A-Z][\w'’&-]*(?:\s+(?:[A-Z0-9][\w'’&-]*|of|de|la))*\s+[A-Z0-9][\w'’&-]*")


def _antecedent(message: str, offer: str) -> str | None:
    """What "it" in the assistant's offer names: the first name of several words in the
    message before the offer, or None."""
    before = message[: message.rfind(offer)] if offer in message else ""
    m = _NAME_RUN.search(before)
    if m is None:
        return None
    return re.sub(r"^(?:The|A|An)\s+", "", m.group())
