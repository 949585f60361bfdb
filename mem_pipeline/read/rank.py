"""Ranking (pure): candidates scored from their dense and lexical scores and a few payload
fields, with the query's boosts, the reply and session lifts, decay and reinforcement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..decay import fuse, recency, reinforcement
from ..models import ScoreParts, session_key
from ..recall import Hit, hit_from_fact
from ..store import Candidate
from ..text.dates import says_when
from ..text.phrases import names_something

__all__ = ["DATE_SLACK", "fill_scores", "rank", "reply_lift"]

#: How long after a date named in a query a fact still counts as "of that date".
DATE_SLACK = timedelta(days=3)


def fill_scores(
    candidates: Sequence[Candidate], *, dense: Mapping[str, float], lexical: Mapping[str, float]
) -> None:
    """Give each candidate the score it lacks from the other search (in place).

    The dense and lexical searches each return their own top of the pool, so a candidate
    found by one only has no score from the other, and min-max (:func:`~mem_pipeline.decay.fuse`)
    would scale each signal over a different set of candidates. A missing *dense* score made a
    lexically found turn the least similar of all, when its cosine is often close to the
    pool's. A missing *lexical* score left the lexical scale to the lexical pool alone: its
    last turn scored 0, though the turns found by the dense search alone match fewer query
    words still (LoCoMo R@10 .878 -> .880 at the same settings, see README). The store scores
    those facts against the query (``QdrantStore.scores_of``: ``dense`` cosines, ``lexical``
    scores for the facts that share a term with it) and the scores are filled in here.
    """
    for c in candidates:
        if c.dense is None and c.fact.id in dense:
            c.dense = float(dense[c.fact.id])
        if c.lexical is None and lexical.get(c.fact.id, 0.0) > 0:
            c.lexical = float(lexical[c.fact.id])


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
    people: frozenset[str] = frozenset(),
) -> list[Hit]:
    """Score candidates (pure): relevance x decay x reinforcement, best first.

    A candidate whose ``metadata["speaker"]`` (lowercased) is in ``named_speakers`` has its
    relevance multiplied by ``1 + speaker_boost``: "what did Mel paint?" is about Mel's turns.
    A candidate created within one of the query's ``dates`` ranges ``[start, end)``, or up to
    :data:`DATE_SLACK` after it (people report a day's events the next days: "yesterday I..."),
    has its relevance multiplied by ``1 + date_boost``.

    ``when_boost`` (the caller passes it for a question that asks when: ``_text.asks_when``)
    multiplies by ``1 + when_boost`` the relevance of each candidate whose text places
    something in time (``_text.says_when``: "yesterday", "last week", a month, a year): the
    turn that answers "when?" says when, and its date resolves the rest. ``name_boost`` (passed
    for a question that asks for a name: ``_text.asks_name``) does the same for each candidate
    whose text names something other than ``people``, the conversation's speakers
    (``_text.names_something``: "we flew to Lisbon", a quoted title).

    With ``reply_boost``, a candidate that answers a question (``fact.reply_to``) gains
    ``reply_boost`` x the fused relevance of that question when the question is among the
    candidates (:func:`reply_lift`), before the other boosts.

    With ``session_boost``, each candidate that has a ``metadata["session"]`` gains
    ``session_boost`` x the best relevance among the candidates of its session: a conversation
    that holds a strong match for the query is where the rest of the answer tends to be (the
    turn that asked, the turn that answered, the follow-up), so its other relevant turns rise
    above equally relevant turns of unrelated conversations.
    """
    rel = fuse([c.dense for c in candidates], [c.lexical for c in candidates], dense_weight=dense_weight)
    lent = reply_lift(candidates, rel, reply_boost) if reply_boost else [0.0] * len(rel)
    rel = [r + x for r, x in zip(rel, lent)]
    if named_speakers and speaker_boost:
        rel = [
            r * (1 + speaker_boost)
            if str(c.fact.metadata.get("speaker", "")).lower() in named_speakers
            else r
            for c, r in zip(candidates, rel)
        ]
    if dates and date_boost:
        rel = [
            r * (1 + date_boost)
            if any(start <= c.fact.created_at < end + DATE_SLACK for start, end in dates)
            else r
            for c, r in zip(candidates, rel)
        ]
    if when_boost:
        rel = [r * (1 + when_boost) if says_when(c.fact.text) else r for c, r in zip(candidates, rel)]
    if name_boost:
        rel = [
            r * (1 + name_boost) if names_something(c.fact.text, people) else r
            for c, r in zip(candidates, rel)
        ]
    if session_boost:
        rel = _session_lift(candidates, rel, session_boost)
    hits = []
    for c, r, x in zip(candidates, rel, lent):
        f = c.fact
        d = (
            recency(
                f.last_seen_at,
                now,
                half_life_days=half_lives.get(f.category.value, 180.0),
                floor=decay_floor,
            )
            if use_decay
            else 1.0
        )
        rf = (
            reinforcement(f.confirmations, f.recalls, valence=f.valence, importance=f.importance)
            if use_decay
            else 1.0
        )
        parts = ScoreParts(
            similarity=c.dense or 0.0,
            lexical=c.lexical or 0.0,
            relevance=r,
            decay=d,
            reinforcement=rf,
            reply=x,
        )
        hits.append(hit_from_fact(f, r * d * rf, "semantic" if c.dense is not None else "lexical", parts))
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits


def reply_lift(candidates: Sequence[Candidate], rel: Sequence[float], boost: float) -> list[float]:
    """What each candidate gains from the question it answers (pure): ``boost`` x the
    relevance of the candidate its ``fact.reply_to`` names, 0 when that turn is not a candidate.

    A question and its answer split what a later query needs: "What's your favourite dish from
    the show?" holds the query's words, "Coconut milk ice cream, no contest." holds what it
    wants. Only the answer gains: the question already ranks on its own words (lifting the
    question from its answer as well lost recall in a scratch run on LoCoMo), and only after a
    question: a lift from any previous turn did not help there. Figures: README "Recall quality"
    and ``MemoryConfig.reply_boost``.
    """
    at = {c.fact.id: i for i, c in enumerate(candidates)}
    out = []
    for c in candidates:
        j = at.get(c.fact.reply_to) if c.fact.reply_to else None
        out.append(boost * rel[j] if j is not None else 0.0)
    return out


def _session_lift(candidates: Sequence[Candidate], rel: list[float], boost: float) -> list[float]:
    best: dict[Any, float] = {}
    keys = []
    for c, r in zip(candidates, rel):
        key = session_key(c.fact.metadata.get("session"))
        keys.append(key)
        if key is not None and r > best.get(key, float("-inf")):
            best[key] = r
    return [r if key is None else r + boost * best[key] for key, r in zip(keys, rel)]
