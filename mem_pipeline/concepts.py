"""The maths of the concept-link layer (pure): link strength, expansion along links, count
deltas, the concept boost, and the n-grams a query is matched by. The state it works on (each
user's counts and links) is kept by :class:`mem_pipeline.links.ConceptLinks`.

Strength of the link a–b (symmetric)::

    ochiai = n_ab / sqrt(n_a * n_b)          # co-occurrence, normalised by each concept's frequency
    decayed by 0.5 ** (age / half_life)      # links fade unless seen again
    strength = ochiai_decayed + 0.5 * fb     # fb in [-1, 1] from feedback; clamped to [0, 1]

Why Ochiai (cosine of the two concepts' fact sets) and not PPMI: PPMI compares the pair with
chance, so in a five-fact store where "timeout" and "retry" each sit in 3-4 facts it scores
their link at zero; Ochiai gives 2/sqrt(3*3) = 0.67. In a 50,000-fact store a hub concept in
2,000 facts that meets "x" once scores 1/sqrt(2000) = 0.02, far under the floor: the frequency
penalty is built in, at any size (``eval/associations.py`` measures both).

A link is followed only when ``strength >= floor`` and it was seen at least ``min_count`` times
(a pair seen once can be chance) or feedback vouched for it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from .text.lexical import STOPWORDS, stem, tokens
from .text.phrases import candidate_phrases, normalize_concept

__all__ = [
    "Expansion",
    "LinkStats",
    "expand",
    "followable",
    "link_strength",
    "name_key",
    "pair_deltas",
    "pair_key",
    "point_id",
    "query_grams",
    "strength_of",
]

_NS = uuid.UUID("0b8f7e0e-4a4b-4bd0-9a38-1f3c54a3c7d2")


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def point_id(*parts: str) -> str:
    return str(uuid.uuid5(_NS, "\x1f".join(parts)))


@dataclass(frozen=True)
class LinkStats:
    """What is stored about one pair, plus the two concepts' fact counts."""

    n_ab: float
    n_a: float
    n_b: float
    age_days: float = 0.0
    feedback: float = 0.0


def link_strength(s: LinkStats, *, half_life_days: float = 180.0) -> float:
    """Ochiai co-occurrence, decayed with age, plus the feedback term; in [0, 1]."""
    return strength_of(s.n_ab, s.n_a, s.n_b, s.age_days, s.feedback, half_life_days)


def strength_of(
    n_ab: float, n_a: float, n_b: float, age_days: float, feedback: float, half_life_days: float
) -> float:
    """:func:`link_strength` of plain numbers (the read path scores every link of a concept)."""
    base = 0.0
    if n_ab > 0 and n_a > 0 and n_b > 0:
        base = min(1.0, n_ab / math.sqrt(n_a * n_b))
        base *= 0.5 ** (max(0.0, age_days) / half_life_days)
    return max(0.0, min(1.0, base + 0.5 * max(-1.0, min(1.0, feedback))))


def name_key(name: str) -> str:
    """A concept name's words, each stemmed, in order ("pottery classes" and "pottery class"
    -> "potteri class", "hiking" and "hike" -> "hike"): the key of the lexical index over a
    user's concept names, by which a query's words find a concept in another form of the same
    words without embedding them. Stopwords are kept ("timed out" is not "time")."""
    return " ".join(stem(t) for t in tokens(name))


def followable(n_ab: float, feedback: float, strength: float, *, floor: float, min_count: int) -> bool:
    """Whether a link of this strength may be followed: strong enough, and seen ``min_count``
    times (a pair seen once can be chance) or vouched for by feedback."""
    return strength >= floor and (n_ab >= min_count or feedback > 0)


@dataclass
class Expansion:
    """A concept reached from the query: its weight, the path from a query concept, link weights."""

    concept: str
    weight: float
    path: list[str]
    weights: list[float] = field(default_factory=list)


Neighbours = Callable[[Sequence[str]], Mapping[str, Sequence[tuple[str, float]]]]


def expand(
    query_concepts: Mapping[str, float],
    neighbours: Neighbours,
    *,
    max_hops: int = 2,
    fanout: int = 3,
    max_expanded: int = 8,
) -> dict[str, Expansion]:
    """Follow the strongest links from the query's concepts (pure, given ``neighbours``).

    ``neighbours(concepts)`` returns, for each concept, its followable links as
    ``(other, strength)``. Each hop keeps at most ``fanout`` links per concept, strongest first;
    at most ``max_expanded`` concepts in total; a concept's weight is the query concept's weight
    times the product of link strengths on the best path. Query concepts themselves are never
    "expanded".
    """
    best: dict[str, Expansion] = {}
    frontier = [Expansion(c, w, [c]) for c, w in query_concepts.items()]
    for _ in range(max_hops):
        if not frontier:
            break
        table = neighbours([e.concept for e in frontier])
        nxt: list[Expansion] = []
        for e in frontier:
            links = sorted(table.get(e.concept, ()), key=lambda x: (-x[1], x[0]))[:fanout]
            for other, s in links:
                if other in query_concepts or other in e.path:
                    continue
                cand = Expansion(other, e.weight * s, [*e.path, other], [*e.weights, s])
                old = best.get(other)
                if old is None or cand.weight > old.weight:
                    best[other] = cand
                    nxt.append(cand)
        frontier = nxt
    ranked = sorted(best.values(), key=lambda e: (-e.weight, e.concept))[:max_expanded]
    return {e.concept: e for e in ranked}


def pair_deltas(
    before: Sequence[str], after: Sequence[str]
) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """Count changes when a fact's concept set goes from ``before`` to ``after``."""
    b, a = set(before), set(after)
    pairs: dict[tuple[str, str], int] = {}
    for x, y in combinations(sorted(a), 2):
        pairs[(x, y)] = pairs.get((x, y), 0) + 1
    for x, y in combinations(sorted(b), 2):
        pairs[(x, y)] = pairs.get((x, y), 0) - 1
    concepts = {c: 1 for c in a - b}
    concepts.update({c: -1 for c in b - a})
    return {k: v for k, v in pairs.items() if v}, concepts


_PARTICLES = frozenset("out up off down over back in on".split())  # "timed out", "back off"


def query_grams(query: str, max_words: int = 3) -> list[str]:
    """Normalised 1-3 word n-grams of the query that are not only stopwords, plus its keyword
    phrases: the candidates matched against a user's concept names."""
    toks = tokens(query)
    out: list[str] = []
    for n in range(max_words, 0, -1):
        for i in range(len(toks) - n + 1):
            gram = toks[i : i + n]
            last_ok = gram[-1] not in STOPWORDS or (len(gram) > 1 and gram[-1] in _PARTICLES)
            if gram[0] in STOPWORDS or not last_ok:
                continue
            c = normalize_concept(" ".join(gram))
            if c and c not in out:
                out.append(c)
    for c in candidate_phrases(query):
        if c not in out:
            out.append(c)
    return out[:24]
