"""Association: facts the question never named, reached through the user's concept links, each
labelled with the path that brought it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .._parts import Parts
from ..concepts import Expansion, expand
from ..models import Scope, ScoreParts, Via
from ..recall import Hit, Source, hit_from_fact
from ..store._payload import payload_to_fact
from .rank import strength

__all__ = ["associate"]


def associate(
    parts: Parts,
    scope: Scope,
    direct: set[str],
    at: datetime,
    qc: dict[str, float],
    seen: Mapping[str, Mapping[str, Any]],
) -> tuple[list[Hit], dict[str, float]]:
    """The association hits (at most ``config.association_limit``, none of ``direct``) and the
    concepts the links reach from the query's concepts ``qc`` (with their weights). ``seen``:
    the payloads the search already read, by id (not read again)."""
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
    briefs = {fid: dict(seen[fid]) for fid in ids if fid in seen and seen[fid].get("valid", True)}
    briefs.update(parts.store.fact_briefs(scope, [fid for fid in ids if fid not in seen]))
    for fid, p in briefs.items():
        if fid in direct:
            continue
        best = max(
            (reach[c] for c in p.get("concepts") or [] if c in telling),
            key=lambda e: e.weight * spec[e.concept],
        )
        d, rf = (
            strength(p, at.timestamp(), cfg.half_lives_days, cfg.decay_floor) if cfg.use_decay else (1.0, 1.0)
        )
        scored.append((best.weight * spec[best.concept] * d * rf, fid, best, d, rf))
    scored.sort(key=lambda t: (-t[0], t[1]))
    scored = scored[: cfg.association_limit]
    winners = {t[1]: payload_to_fact(t[1], seen[t[1]]) for t in scored if t[1] in seen}
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
