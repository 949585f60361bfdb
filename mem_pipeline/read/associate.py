"""Association: facts the question never named, reached through the user's concept links, each
labelled with the path that brought it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from .._parts import Parts
from ..concepts import Expansion, expand
from ..decay import recency, reinforcement
from ..models import Scope, ScoreParts, StoredFact, Via
from ..recall import Hit, Source, hit_from_fact

__all__ = ["associate"]


def _brief(f: StoredFact) -> dict[str, Any]:
    """The fields association scoring reads, from a fact already in hand (the payload shape of
    ``QdrantStore.fact_briefs``)."""
    return {
        "concepts": f.concepts,
        "category": f.category.value,
        "created_ts": f.created_at.timestamp(),
        "last_seen_ts": f.last_seen_at.timestamp(),
        "confirmations": f.confirmations,
        "recalls": f.recalls,
        "valence": f.valence,
        "importance": f.importance,
    }


def associate(
    parts: Parts,
    scope: Scope,
    direct: set[str],
    at: datetime,
    qc: dict[str, float],
    seen: Mapping[str, StoredFact],
) -> tuple[list[Hit], dict[str, float]]:
    """The association hits (at most ``config.association_limit``, none of ``direct``) and the
    concepts the links reach from the query's concepts ``qc`` (with their weights). ``seen``:
    facts the search already read (not read again)."""
    cfg = parts.config
    links = parts.links
    exp = expand(
        qc,
        lambda cs: links.neighbours(scope, cs, at),
        max_hops=cfg.max_hops,
        fanout=cfg.link_fanout,
        max_expanded=cfg.max_expanded_concepts,
    )
    expanded = {c: round(e.weight, 4) for c, e in exp.items()}
    if cfg.association_limit == 0:
        return [], expanded
    # a fact tagged with a query concept but missed by the text search is reached through that
    # concept itself (path of one); others through the links (path of two or three)
    reach = {c: Expansion(c, w, [c]) for c, w in qc.items()}
    reach.update(exp)
    # a concept on many facts (a speaker's name) says little about which one is meant: its
    # facts rank by weight x specificity, and only the most telling concepts are read
    spec = links.specificity(scope, list(reach))
    telling = sorted(reach, key=lambda c: -reach[c].weight * spec[c])[: 2 * cfg.association_limit]
    # score every candidate from a few payload fields; read the full facts of the winners
    scored: list[tuple[float, str, Expansion, float, float]] = []
    ids = links.fact_ids(scope, telling, 20 * cfg.association_limit)
    briefs = {fid: _brief(seen[fid]) for fid in ids if fid in seen and seen[fid].is_valid}
    briefs.update(parts.store.fact_briefs(scope, [fid for fid in ids if fid not in seen]))
    for fid, p in briefs.items():
        if fid in direct:
            continue
        best = max(
            (reach[c] for c in p.get("concepts") or [] if c in telling),
            key=lambda e: e.weight * spec[e.concept],
        )
        d, rf = _strength(
            p, at, cfg.half_life(str(p.get("category", "other"))), cfg.decay_floor, cfg.use_decay
        )
        scored.append((best.weight * spec[best.concept] * d * rf, fid, best, d, rf))
    scored.sort(key=lambda t: (-t[0], t[1]))
    scored = scored[: cfg.association_limit]
    winners = {t[1]: seen[t[1]] for t in scored if t[1] in seen}
    winners.update(
        {f.id: f for f in parts.store.get_facts(scope, [t[1] for t in scored if t[1] not in seen])}
    )
    hits: list[Hit] = []
    for score, fid, best, d, rf in scored:
        if fid not in winners:  # removed between the two reads (another writer)
            continue
        score_parts = ScoreParts(association=best.weight, decay=d, reinforcement=rf)
        via = Via(query_concept=best.path[0], path=best.path, weights=best.weights)
        source: Source = "association" if len(best.path) > 1 else "concept"
        hits.append(hit_from_fact(winners[fid], score, source, score_parts, via))
    return hits, expanded


def _strength(
    p: Mapping[str, Any], at: datetime, half_life: float, floor: float, use: bool
) -> tuple[float, float]:
    """(decay, reinforcement) of a fact from its payload fields; (1, 1) with decay off."""
    if not use:
        return 1.0, 1.0
    last_seen = p.get("last_seen_ts") or p["created_ts"]
    d = recency(
        datetime.fromtimestamp(float(last_seen), tz=timezone.utc), at, half_life_days=half_life, floor=floor
    )
    rf = reinforcement(
        int(p.get("confirmations", 1)),
        int(p.get("recalls", 0)),
        valence=float(p.get("valence", 0.0)),
        importance=None if p.get("importance") is None else float(p["importance"]),
    )
    return d, rf
