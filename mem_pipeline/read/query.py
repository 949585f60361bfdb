"""Query analysis: a question turned, once, into everything the ranking needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .._parts import Parts
from ..models import Scope
from ..text.dates import asks_when, date_ranges
from ..text.lexical import sparse_query
from ..text.phrases import asks_called, asks_name, name_tokens, without_names
from ..text.slots import asked_slot, asks_many, asks_now, asks_state

__all__ = ["Query", "analyse", "dense_query"]


@dataclass(frozen=True)
class Query:
    """A question as the read path uses it.

    ``dense_text`` is what the dense search embeds (the question without the speakers it
    names); ``sparse`` the lexical query (None with the lexical signal off); ``named`` the
    scope's speakers the question names and ``people`` all of them (lowercased); ``dates`` the
    calendar ranges it names; ``asks_when`` / ``asks_name`` whether it asks when or for a
    name; ``concepts`` the user's concepts it names exactly and ``grams`` its n-grams left to
    match by name embedding (see ``ConceptLinks.query_terms``)."""

    text: str
    at: datetime
    dense_text: str
    sparse: tuple[list[int], list[float]] | None
    named: frozenset[str] = frozenset()
    people: frozenset[str] = frozenset()
    dates: tuple[tuple[datetime, datetime], ...] = ()
    asks_when: bool = False
    asks_name: bool = False
    #: whether it asks what something or someone is called (``text.phrases.asks_called``)
    asks_called: bool = False
    concepts: dict[str, float] = field(default_factory=dict)
    grams: tuple[str, ...] = ()
    #: the slot the question asks about ("the user/residence"; ``text.slots.asked_slot``)
    slot: str | None = None
    #: whether it asks the asker about their present (``text.slots.asks_now``)
    asks_now: bool = False
    #: whether it asks how things stand now, for the asker or anyone (``text.slots.asks_state``)
    asks_state: bool = False
    #: whether it asks for several things at once (``text.slots.asks_many``: "What are my hobbies?")
    asks_many: bool = False


def analyse(parts: Parts, scope: Scope, text: str, at: datetime, *, use_concepts: bool) -> Query:
    """Analyse ``text`` for ``scope`` at time ``at`` (reads the scope's speakers and concept
    names; embeds nothing)."""
    cfg = parts.config
    asking_name = bool(cfg.name_boost) and asks_name(text)
    dense_text, named, people = dense_query(parts, scope, text, asking_name)
    found: dict[str, float] = {}
    rest: list[str] = []
    if use_concepts:
        with parts.lock:  # the concept caches are shared with writers
            found, rest = parts.links.query_terms(scope, text)
    return Query(
        text=text,
        at=at,
        dense_text=dense_text,
        sparse=sparse_query(text) if cfg.use_sparse else None,
        named=named,
        people=people,
        dates=tuple(date_ranges(text, at)) if cfg.date_boost else (),
        asks_when=bool(cfg.when_boost) and asks_when(text),
        asks_name=asking_name,
        asks_called=bool(cfg.name_boost) and asks_called(text),
        concepts=found,
        grams=tuple(rest),
        slot=asked_slot(text) if cfg.slot_boost else None,
        asks_now=asks_now(text),
        asks_state=asks_state(text),
        asks_many=asks_many(text),
    )


def dense_query(
    parts: Parts, scope: Scope, query: str, need_speakers: bool = False
) -> tuple[str, frozenset[str], frozenset[str]]:
    """What the dense search embeds, the speakers (lowercased) the query names, and all the
    scope's speakers (lowercased; read when the speaker signal is on or ``need_speakers``).

    With the speaker signal on, the query's words are matched against the scope's speakers
    (``QdrantStore.speakers``, a facet over an index: no facts are read); a named speaker's
    turns get the speaker boost in ``rank``, and with ``config.dense_without_speakers`` the
    names are left out of the text the dense search embeds (``text.phrases.without_names``):
    the boost matches the person, the vector what is asked about. A name in the vector makes
    short turns that only say it ("Thanks, Caroline!") look like the answer."""
    cfg = parts.config
    if not (cfg.speaker_boost or need_speakers):
        return query, frozenset(), frozenset()
    with parts.lock:  # a store read, like every other (the embedding after it runs unlocked)
        speakers = parts.store.speakers(scope)
    people = frozenset(sp.lower() for sp in speakers)
    qnames = name_tokens(query)
    named = [sp for sp in speakers if sp.lower() in qnames] if cfg.speaker_boost else []
    if not named:
        return query, frozenset(), people
    text = without_names(query, named) if cfg.dense_without_speakers else query
    return text, frozenset(sp.lower() for sp in named), people
