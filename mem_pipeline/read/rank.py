"""Ranking (pure): candidates scored from their dense and lexical scores and a few payload
fields, with the query's boosts, the reply and session lifts, decay and reinforcement; the
concept boost; how confident a hit is that it is relevant at all; and turns folded under the
facts made of them.

Everything here reads the candidates' payloads (numbers and short strings); the full hit of a
candidate is built only if it is returned (``recall.Hit``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

from ..decay import decays, fuse, reinforcement
from ..models import session_key
from ..store import Candidate
from ..store._payload import kind_of
from ..text.dates import says_when
from ..text.lexical import content_words
from ..text.opinion import turns_from
from ..text.phrases import AGREED_FRAME, gives_name, names_something
from ..text.slots import says_current, says_ended, slot_of, states_value

__all__ = [
    "AGREED_WINDOW_S",
    "DATE_SLACK",
    "Parts",
    "Ranked",
    "Row",
    "Rows",
    "agreed_first",
    "boost_by_concepts",
    "confidence",
    "fold",
    "rank",
    "reply_lift",
    "row_of",
]

#: How long after a date named in a query a fact still counts as "of that date".
DATE_SLACK = timedelta(days=3)


class Parts(NamedTuple):
    """Why a candidate ranked where it did (``models.ScoreParts`` once returned)."""

    similarity: float = 0.0
    lexical: float = 0.0
    relevance: float = 0.0
    decay: float = 1.0
    reinforcement: float = 1.0
    concept: float = 0.0
    association: float = 0.0
    reply: float = 0.0
    confidence: float = 1.0


@dataclass(slots=True)
class Ranked:
    """A scored candidate. ``tie``: how it ranks against a candidate of the same score (see
    :func:`_order`), worked out once."""

    cand: Candidate
    score: float
    parts: Parts
    tie: tuple[int, float, float, str, str] | None = None
    row: Row | None = None

    @property
    def id(self) -> str:
        return self.cand.id

    @property
    def text(self) -> str:
        return self.cand.text

    @property
    def concepts(self) -> list[str]:
        return list(self.cand.payload.get("concepts") or [])


class Row(NamedTuple):
    """What ranking reads of a candidate's payload, read once (:func:`row_of`): the fields as
    plain values, so that scoring ~160 candidates a search does no dictionary work."""

    kind: int  # 0: a fact, 1: a turn (a fact wins a tie)
    created: float
    seen: float  # last seen (else created): where decay counts from
    category: str
    reinforcement: float
    speaker: str  # ``metadata["speaker"]``, lowercased
    session: str | int | None  # ``models.session_key`` of ``metadata["session"]``
    reply_to: str | None
    text: str
    concepts: frozenset[str]
    about: str | None = None  # ``StoredFact.about``
    slot: str | None = None  # ``StoredFact.slot``


def row_of(p: Mapping[str, Any]) -> Row:
    """The :class:`Row` of a payload (pure)."""
    meta = p.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    created = float(p.get("created_ts") or 0.0)
    imp = p.get("importance")
    return Row(
        0 if kind_of(p) == "fact" else 1,
        created,
        float(p.get("last_seen_ts") or created),
        str(p.get("category", "other")),
        _reinforcement(
            int(p.get("confirmations", 1)),
            int(p.get("recalls", 0)),
            float(p.get("valence", 0.0)),
            None if imp is None else float(imp),
        ),
        str(meta.get("speaker", "")).lower(),
        session_key(meta.get("session")),
        p.get("reply_to") or None,
        str(p.get("text", "")),
        frozenset(p.get("concepts") or ()),
        p.get("about") or None,
        p.get("slot") or None,
    )


class Rows:
    """The rows of the payloads a search reads, kept by point id for the next search (a
    candidate comes back search after search). A payload is never changed in place: a write
    replaces it (``store._briefs``), so a row is reused only for the very payload it was read
    from. At most ``size`` are kept (0: none, for a store whose payloads are read afresh each
    time); past that the memo starts again, so memory stays flat."""

    def __init__(self, size: int) -> None:
        self.size = max(0, int(size))
        self._memo: dict[str, tuple[Mapping[str, Any], Row]] = {}

    def __call__(self, candidates: Sequence[Candidate]) -> list[Row]:
        return self.of([(c.id, c.payload) for c in candidates])

    def of(self, payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Row]:
        """The rows of ``(point id, payload)`` pairs."""
        if not self.size:
            return [row_of(p) for _, p in payloads]
        memo = self._memo
        out = []
        for pid, p in payloads:
            got = memo.get(pid)
            if got is not None and got[0] is p:
                out.append(got[1])
                continue
            row = row_of(p)
            memo[pid] = (p, row)
            out.append(row)
        if len(memo) > self.size:
            memo.clear()
        return out


def _tie(c: Candidate, row: Row | None = None) -> tuple[int, float, float, str, str]:
    r = row_of(c.payload) if row is None else row
    return (r.kind, -round(c.dense or 0.0, 4), r.created, r.text, c.id)


def _order(r: Ranked) -> tuple[float, tuple[int, float, float, str, str]]:
    """Best first; a tie (to 6 decimals: the last float bits of an embedding move with the batch
    it was computed in) goes to a fact before a turn, then to the closer meaning, the older
    point, the text and the id: the same memory ranks the same whatever else a store holds."""
    if r.tie is None:
        r.tie = _tie(r.cand, r.row)
    return (-round(r.score, 6), r.tie)


def rank(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    half_lives: Mapping[str, float],
    dense_weight: float,
    decay_floor: float,
    use_decay: bool = True,
    named_speakers: frozenset[str] = frozenset(),
    speaker_boost: float = 0.0,
    dates: Sequence[tuple[datetime, datetime]] = (),
    date_boost: float = 0.0,
    session_boost: float = 0.0,
    reply_boost: float = 0.0,
    when_boost: float = 0.0,
    name_boost: float = 0.0,
    given_boost: float = 0.0,
    people: frozenset[str] = frozenset(),
    slot: str | None = None,
    slot_boost: float = 0.0,
    named: Callable[[str], bool] | None = None,
    current_boost: float = 0.0,
    memo: Rows | None = None,
    concepts: Mapping[str, float] | None = None,
    concept_boost: float = 0.0,
    top: int | None = None,
) -> list[Ranked]:
    """Score candidates: relevance x decay x reinforcement, best first. ``memo`` keeps the
    candidates' :class:`Row` from one search to the next (the same ranking without it).
    ``concepts`` and ``concept_boost``: the concept boost (:func:`boost_by_concepts`), applied
    here so that only the first ``top`` (all by default) of the order need be built: the same
    candidates in the same order, with the same scores, as ranking all and boosting them.

    Relevance fuses the min-max scaled dense and lexical scores, then each signal multiplies or
    adds (``MemoryConfig`` gives each one's measured effect):

    - ``speaker_boost``: x (1 + boost) for a turn whose ``metadata["speaker"]`` (lowercased) is
      in ``named_speakers`` ("what did Mel paint?" is about Mel's turns);
    - ``date_boost``: x (1 + boost) for a candidate created within one of the query's
      ``dates`` ranges ``[start, end)``, or up to :data:`DATE_SLACK` after it;
    - ``when_boost`` (passed for a question that asks when): x (1 + boost) for a text that
      places something in time (``text.dates.says_when``);
    - ``name_boost`` (passed for a question that asks for a name): x (1 + boost) for a text
      that names something other than ``people``, the conversation's speakers;
    - ``given_boost`` (passed for a question that asks what something is called): x (1 +
      boost) for a text that gives a name ("Named him Bún", ``text.phrases.gives_name``);
    - ``reply_boost``: + boost x the relevance of the question a turn answers
      (:func:`reply_lift`), before the others;
    - ``session_boost``: + boost x the best relevance among the candidates of the same
      ``metadata["session"]``;
    - ``current_boost`` (passed for a question to the asker about their present): x (1 +
      boost) for a text that says it holds now (``text.slots.says_current``);
    - ``slot_boost``: a fact that sets the ``slot`` the question asks about ("am I still
      working?" and "Retired since 2022": the user's work) ranks above every other candidate,
      in its own order among such facts: its relevance becomes ``best + boost x (best + r) /
      2``. Not a factor: the scaled relevance of the least similar candidate is 0, and the
      embedding may well put "Retired" furthest from "working". So does a fact whose text
      is ``named`` (for a question about a relation of the asker's: it names the relation or a
      name the user gave it, "My wife Ngozi ..." and "Ngozi swapped the ward ..." for "what does
      my wife do for work?"), with the same ``slot_boost``.
    """
    rows = memo(candidates) if memo is not None else [row_of(c.payload) for c in candidates]
    rel = fuse([c.dense for c in candidates], [c.lexical for c in candidates], dense_weight=dense_weight)
    lent = _reply_lift(candidates, rows, rel, reply_boost) if reply_boost else [0.0] * len(rel)
    if reply_boost:
        rel = [r + x for r, x in zip(rel, lent)]
    if named_speakers and speaker_boost:
        up = 1 + speaker_boost
        rel = [r * up if w.speaker in named_speakers else r for w, r in zip(rows, rel)]
    if dates and date_boost:
        spans = [(start.timestamp(), (end + DATE_SLACK).timestamp()) for start, end in dates]
        rel = [
            r * (1 + date_boost) if any(a <= w.created < b for a, b in spans) else r
            for w, r in zip(rows, rel)
        ]
    if when_boost:
        rel = [r * (1 + when_boost) if _says_when(w.text) else r for w, r in zip(rows, rel)]
    if name_boost:
        rel = [r * (1 + name_boost) if _names_something(w.text, people) else r for w, r in zip(rows, rel)]
    if given_boost:
        rel = [r * (1 + given_boost) if _gives_name(w.text) else r for w, r in zip(rows, rel)]
    if current_boost:
        rel = [r * (1 + current_boost) if _says_current(w.text) else r for w, r in zip(rows, rel)]
    if slot and slot_boost:
        best = max(rel, default=0.0)
        rel = [
            best + slot_boost * (best + r) / 2 if sets_slot(c.payload, slot) else r
            for c, r in zip(candidates, rel)
        ]
    if named is not None and slot_boost:
        best = max(rel, default=0.0)
        rel = [
            best + slot_boost * (best + r) / 2 if c.kind == "fact" and named(w.text) else r
            for c, w, r in zip(candidates, rows, rel)
        ]
    if session_boost:
        rel = _session_lift(rows, rel, session_boost)
    n = len(rel)
    if use_decay:
        d, rf = strengths(rows, now.timestamp(), half_lives, decay_floor)
        score = [r * a * b for r, a, b in zip(rel, d, rf)]
    else:
        d = rf = [1.0] * n
        score = list(rel)  # x 1.0 x 1.0 changes no float
    cw = [0.0] * n
    if concepts and concept_boost > 0:
        asked = frozenset(concepts)
        cw = [
            0.0 if asked.isdisjoint(w.concepts) else _concept_weight(w.concepts, w.text, concepts)
            for w in rows
        ]
        score = [s * (1 + concept_boost * k) if k > 0 else s for s, k in zip(score, cw)]
    out = []
    for i in _order_of(score, candidates, rows, top):
        c = candidates[i]
        parts = Parts(c.dense or 0.0, c.lexical or 0.0, rel[i], d[i], rf[i], cw[i], 0.0, lent[i])
        out.append(Ranked(c, score[i], parts, None, rows[i]))
    return out


def _order_of(
    score: Sequence[float], candidates: Sequence[Candidate], rows: Sequence[Row], top: int | None
) -> list[int]:
    """The indices of the first ``top`` (or all) candidates in :func:`_order`'s order: by
    score to 6 decimals, and a tie-break worked out only among the candidates that tie."""
    keys = [-round(s, 6) for s in score]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    end = len(order) if top is None else min(top, len(order))
    i = 0
    while i < end:
        j = i + 1
        while j < len(order) and keys[order[j]] == keys[order[i]]:
            j += 1
        if j - i > 1:
            order[i:j] = sorted(order[i:j], key=lambda k: _tie(candidates[k], rows[k]))
        i = j
    return order[:end]


def latest_in_slot(ranked: Sequence[Ranked], slot: str) -> list[Ranked]:
    """For a question about the asker's present and the ``slot`` it asks about: the facts that
    set the slot to a value (:func:`sets_slot`) in the places they hold, the last said first,
    each with the score of the place it takes (pure). The slot lift puts every value of the
    slot above the rest in the order of their words; the present is the one said last: "Started
    a new job at Tetra Pak" months before "Guess who's back at IKEA", both of them stating
    where the user works, the second one worded further from "where do I work?"."""
    at = [i for i, r in enumerate(ranked) if r.cand.kind == "fact" and sets_slot(r.cand.payload, slot)]
    if len(at) < 2:
        return list(ranked)
    facts = [ranked[i] for i in at]
    latest = sorted(facts, key=lambda r: -(r.row or row_of(r.cand.payload)).seen)
    if latest == facts:
        return list(ranked)
    out = list(ranked)
    for i, r in zip(at, latest):
        out[i] = replace(r, score=ranked[i].score)
    return out


def history_last(ranked: Sequence[Ranked]) -> list[Ranked]:
    """For a question about the present: the stored facts that say something ended ("I've gone
    off Arctic Monkeys", "I cancelled my PureGym membership": ``text.slots.says_ended``), and the
    turns only such facts come from, after the other candidates, in their own order, each scored
    at most as the last candidate before them (pure). Other turns stay where they rank. Not a
    factor: the scaled relevance of the least similar of two candidates is 0, so no weight could
    put "Big fan of Fontaines D.C." above the band the user has gone off.

    So does a fact that turns from something (``text.opinion.turns_from``: "Weirdly, any music
    at all distracts me now", "Turns out warehouse work wasn't for me") when a fact of the same
    message that does not is among the candidates ("It's silence or brown noise for me these
    days", "Driving vans for DHL now"): the message said what it turned from and what holds
    now, and the question asks what holds now."""
    ended = {r.id for r in ranked if r.cand.kind == "fact" and _ended(r.text)}
    turned = {r.id for r in ranked if r.cand.kind == "fact" and r.id not in ended and _turns_from(r.text)}
    if not ended and not turned:
        return list(ranked)
    citing: dict[str, set[str]] = {}
    for r in ranked:
        if r.cand.kind == "fact":
            for t in r.cand.payload.get("sources") or ():
                citing.setdefault(t, set()).add(r.id)
    for facts in citing.values():
        if facts & turned and facts - turned - ended:  # the same message says what holds now
            ended |= facts & turned
    if not ended:
        return list(ranked)
    later = ended | {t for t, facts in citing.items() if facts <= ended}
    now = [r for r in ranked if r.id not in later]
    if not now:
        return list(ranked)
    cap = now[-1].score
    return now + [replace(r, score=min(r.score, cap)) for r in ranked if r.id in later]


#: How long after the statement first found an agreed proposal may come to take its place.
AGREED_WINDOW_S = 24 * 3600.0


def agreed_first(ranked: Sequence[Ranked], share: float, window: float = AGREED_WINDOW_S) -> list[Ranked]:
    """What the user settled with the assistant ranks before what they said to start it (pure).

    "Need a new running watch, budget around 300 quid", then the assistant's offer and "yes,
    order it": the stored "I agreed: order it (The Garmin Forerunner 265 ...)" answers "which
    watch did I get?", but the need, worded like the question, ranks first (.95 against .24),
    and so do "It's our anniversary on Saturday" before the table booked for it, and "I keep
    forgetting to water my plants" before the Sunday reminder. So when the first item is a
    fact and an agreed proposal (the extractor's ``text.phrases.AGREED_FRAME``) among the next
    five was stored at most ``window`` seconds after it and is at least ``share`` as close to
    the question in meaning, the proposal goes first; the rest keep their order. It costs a
    question about the start itself ("when does my passport expire?" before the reminder set
    for it). Behaviour sets: ``eval/README.md``, "What was settled"."""
    if len(ranked) < 2 or share <= 0:
        return list(ranked)
    top = ranked[0]
    if top.cand.kind != "fact" or AGREED_FRAME.match(top.text):
        return list(ranked)
    start = (top.row or row_of(top.cand.payload)).created
    for r in ranked[1:6]:
        if r.cand.kind != "fact" or not AGREED_FRAME.match(r.text):
            continue
        at = (r.row or row_of(r.cand.payload)).created
        if 0 <= at - start <= window and (r.cand.dense or 0.0) >= share * (top.cand.dense or 0.0):
            return [r, *(x for x in ranked if x is not r)]
    return list(ranked)


def sets_slot(payload: Mapping[str, Any], slot: str) -> bool:
    """Whether a valid fact sets ``slot`` to a value, as a question about the slot asks ("I
    quit my job" tells that a value ended, not what it is now)."""
    return payload.get("slot") == slot and payload.get("valid", True) and _gives_value(str(payload["text"]))


@lru_cache(maxsize=8192)
def _gives_value(text: str) -> bool:
    found = slot_of(text)
    return found is not None and not found.stopped and states_value(text)


def strengths(
    rows: Sequence[Row], at: float, half_lives: Mapping[str, float], floor: float
) -> tuple[list[float], list[float]]:
    """The decay and the reinforcement of facts from their :class:`Row` at time ``at`` (epoch
    seconds), computed together (a search ranks ~150)."""
    hl = [half_lives.get(w.category, 180.0) for w in rows]
    return decays([w.seen for w in rows], hl, at, floor=floor), [w.reinforcement for w in rows]


# the text features and the reinforcement of a candidate are pure functions of a few of its
# fields, the same each time it is a candidate again: computed once (a search ranks ~150)
@lru_cache(maxsize=32768)
def _says_when(text: str) -> bool:
    return says_when(text)


@lru_cache(maxsize=32768)
def _says_current(text: str) -> bool:
    return says_current(text)


@lru_cache(maxsize=32768)
def _ended(text: str) -> bool:
    return says_ended(text)


@lru_cache(maxsize=32768)
def _turns_from(text: str) -> bool:
    return turns_from(text)


@lru_cache(maxsize=32768)
def _gives_name(text: str) -> bool:
    return gives_name(text)


@lru_cache(maxsize=32768)
def _names_something(text: str, people: frozenset[str]) -> bool:
    return names_something(text, people)


@lru_cache(maxsize=4096)
def _reinforcement(confirmations: int, recalls: int, valence: float, importance: float | None) -> float:
    return reinforcement(confirmations, recalls, valence=valence, importance=importance)


def reply_lift(candidates: Sequence[Candidate], rel: Sequence[float], boost: float) -> list[float]:
    """What each candidate gains from the question it answers (pure): ``boost`` x the
    relevance of the candidate its ``reply_to`` names, 0 when that turn is not a candidate.

    A question and its answer split what a later query needs: "What's your favourite dish from
    the show?" holds the query's words, "Coconut milk ice cream, no contest." holds what it
    wants. Only the answer gains: lifting the question from its answer as well lost recall on
    LoCoMo, and so did a lift from any previous turn.
    """
    return _reply_lift(candidates, [row_of(c.payload) for c in candidates], rel, boost)


def _reply_lift(
    candidates: Sequence[Candidate], rows: Sequence[Row], rel: Sequence[float], boost: float
) -> list[float]:
    at = {c.id: i for i, c in enumerate(candidates)}
    out = []
    for w in rows:
        j = at.get(w.reply_to) if w.reply_to else None
        out.append(boost * rel[j] if j is not None else 0.0)
    return out


def _session_lift(rows: Sequence[Row], rel: list[float], boost: float) -> list[float]:
    best: dict[Any, float] = {}
    for w, r in zip(rows, rel):
        key = w.session
        if key is not None and r > best.get(key, float("-inf")):
            best[key] = r
    return [r if w.session is None else r + boost * best[w.session] for w, r in zip(rows, rel)]


@lru_cache(maxsize=32768)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


def boost_by_concepts(
    ranked: Sequence[Ranked], query_concepts: Mapping[str, float], boost: float
) -> list[Ranked]:
    """Rank higher the candidates tagged with a concept the query names.

    A candidate whose concepts include query concept ``c`` (matched with weight ``w``) has its
    score multiplied by ``1 + boost * w`` (the best such concept counts); ``parts.concept``
    records ``w``. Returns them re-sorted, best first.

    Only a concept whose words are *not* in the candidate's own text counts: a tag like "dog"
    on "we adopted a puppy" tells the ranking something the words do not, while a tag that
    repeats the text ("painting" on "I love painting", as the key phrases of a raw turn do) was
    already scored by the lexical signal, and boosting it would count the same words twice
    (LoCoMo R@5 -0.011 when it did).
    """
    if not query_concepts or boost <= 0:
        return list(ranked)
    out = []
    boosted = False
    for r in ranked:
        tags = r.row.concepts if r.row is not None else frozenset(r.cand.payload.get("concepts") or ())
        w = _concept_weight(tags, r.text, query_concepts)
        if w > 0:
            r = Ranked(r.cand, r.score * (1 + boost * w), r.parts._replace(concept=w), r.tie, r.row)
            boosted = True
        out.append(r)
    if boosted:
        out.sort(key=_order)  # in order but for the boosted
    return out


def _concept_weight(tags: frozenset[str], text: str, query_concepts: Mapping[str, float]) -> float:
    """The best weight of a query concept among a candidate's ``tags`` whose words its
    ``text`` does not hold (0: none), as :func:`boost_by_concepts` counts it."""
    tagged = [c for c in query_concepts if c in tags]
    if not tagged:
        return 0.0
    words = _word_set(text)
    return max((query_concepts[c] for c in tagged if not _word_set(c) <= words), default=0.0)


_WORD = re.compile(r"[^\W\d_][\w'’-]*")


@lru_cache(maxsize=256)
def _words_of(question: str) -> frozenset[str]:
    """A question's words, lowercased (read once a search, not once a candidate)."""
    return frozenset(w.lower() for w in _WORD.findall(question))


def names_asked(question: str, text: str) -> bool:
    """Whether ``text`` names (a capitalised word other than its first: "Defne", "Zobnik")
    something the question asks about, however the question is cased ("which city is defne
    in?"): such a question is about what the memory holds (pure)."""
    asked = _words_of(question)
    words = _WORD.findall(text)
    return any(w[0].isupper() and w.lower() in asked and w != "I" for w in words[1:])


def confidence(similarity: float, about: bool, weights: Sequence[float]) -> float:
    """How likely a hit is relevant at all (pure): ``1 / (1 + exp(-(a * similarity + b *
    about + c)))`` with ``weights = (a, b, c)`` fitted on labelled pairs
    (``MemoryConfig.confidence_weights``, ``python -m eval.abstention``). Unlike the fused
    relevance, which is scaled per query (its best candidate is always 1), the inputs mean the
    same for every query: the cosine of the question and the text, and whether the question is
    about what the memory holds at all: the person (first person, a speaker's name:
    ``text.phrases.about_person``) or one of their concepts ("deploy timeout"). A general
    question ("What's the capital of Peru?") needs a far closer match before memory answers.
    (The share of the question's words the text holds was tried as a third input: its fitted
    weight came out slightly negative and it changed nothing.)"""
    a, b, c = weights
    return 1.0 / (1.0 + math.exp(-(a * similarity + b * float(about) + c)))


def fold(ranked: Sequence[Ranked], limit: int) -> list[tuple[Ranked, list[str]]]:
    """The first ``limit`` hits, each with the turns folded under it: a turn whose fact (a
    candidate with the turn among its ``sources``) is also a hit is not returned as a hit of its
    own; the fact keeps its place (or the turn's, if the turn ranked higher) and lists it."""
    taken: list[tuple[Ranked, list[str]]] = []
    source_of: dict[str, int] = {}  # turn id -> index in taken of the fact citing it
    turn_at: dict[str, int] = {}  # turn id -> index in taken of that turn as a hit
    for r in ranked:
        if r.cand.kind == "turn":
            if r.id in source_of:
                taken[source_of[r.id]][1].append(r.id)
                continue
            turn_at[r.id] = len(taken)
            taken.append((r, []))
        else:
            sources = [t for t in r.cand.payload.get("sources") or [] if t]
            folded = [t for t in sources if t in turn_at]
            if folded:  # the fact takes the place of the best of its turns already taken
                first = min(turn_at[t] for t in folded)
                taken[first] = (r, folded)
                drop = {turn_at[t] for t in folded} - {first}
                taken = [x for i, x in enumerate(taken) if i not in drop]
                turn_at = {t: i for i, (h, _) in enumerate(taken) if h.cand.kind == "turn" for t in [h.id]}
                source_of = {
                    t: i
                    for i, (h, _) in enumerate(taken)
                    if h.cand.kind == "fact"
                    for t in h.cand.payload.get("sources") or []
                }
            else:
                for t in sources:
                    source_of[t] = len(taken)
                taken.append((r, []))
        if len(taken) >= limit:
            break
    return taken[:limit]
