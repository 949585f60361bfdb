"""Association: facts the question never named, reached through the user's concept links, each
labelled with the path that brought it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._parts import Parts
from ..concepts import Expansion, expand
from ..models import Scope, Via
from ..recall import Hit, Source
from .hits import hit_of, score_parts
from .rank import Rows, strengths

__all__ = ["Reach", "associate", "pick", "reach"]


@dataclass
class Reach:
    """What the concept links reach from a query's concepts, before the hits are known: the
    expanded concepts (with their weights) and every fact reached, scored, best first."""

    expanded: dict[str, float]
    scored: list[tuple[float, str, Expansion, float, float]] = field(default_factory=list)
    briefs: dict[str, dict[str, Any]] = field(default_factory=dict)


def reach(parts: Parts, scope: Scope, at: datetime, qc: dict[str, float], memo: Rows | None = None) -> Reach:
    """Expand the query's concepts ``qc`` along the user's links and score the facts they
    reach (``memo``: the ranking fields of payloads read before, as in ``rank.rank``). It needs
    neither the query's vector nor the hits."""
    cfg = parts.config
    links = parts.links
    exp = expand(
        qc,
        lambda cs: links.neighbours(scope, cs, at),
        max_hops=cfg.max_hops,
        fanout=cfg.link_fanout,
        max_expanded=cfg.max_expanded_concepts,
    )
    out = Reach({c: round(e.weight, 4) for c, e in exp.items()})
    if cfg.association_limit == 0:
        return out
    # a fact tagged with a query concept but missed by the text search is reached through that
    # concept itself (path of one); others through the links (path of two or three)
    paths = {c: Expansion(c, w, [c]) for c, w in qc.items()}
    paths.update(exp)
    # a concept on many facts (a speaker's name) says little about which one is meant: its
    # facts rank by weight x specificity, and only the most telling concepts are read
    spec = links.specificity(scope, list(paths))
    telling = sorted(paths, key=lambda c: -paths[c].weight * spec[c])[: 2 * cfg.association_limit]
    # every fact is scored from its cached fields; hits are built for the winners only
    ids = links.fact_ids(scope, telling, 20 * cfg.association_limit)
    out.briefs = parts.store.fact_briefs(scope, ids)
    memo = memo if memo is not None else Rows(0)
    rows = memo.of(list(out.briefs.items()))
    n = len(rows)
    d, rf = (
        strengths(rows, at.timestamp(), cfg.half_lives_days, cfg.decay_floor)
        if cfg.use_decay
        else ([1.0] * n, [1.0] * n)
    )
    tells = {c: paths[c].weight * spec[c] for c in telling}  # a reached fact goes by its best
    for i, (fid, p) in enumerate(out.briefs.items()):
        best = paths[max((c for c in p.get("concepts") or () if c in tells), key=tells.__getitem__)]
        out.scored.append((best.weight * spec[best.concept] * d[i] * rf[i], fid, best, d[i], rf[i]))
    out.scored.sort(key=lambda t: (-t[0], t[1]))
    return out


def pick(found: Reach, direct: set[str], limit: int) -> list[Hit]:
    """The association hits: the best ``limit`` facts reached that are not hits already."""
    hits: list[Hit] = []
    for score, fid, best, d, rf in found.scored:
        if len(hits) >= limit:
            break
        if fid in direct:
            continue
        sp = score_parts(decay=d, reinforcement=rf, association=best.weight)
        via = Via(query_concept=best.path[0], path=best.path, weights=best.weights)
        source: Source = "association" if len(best.path) > 1 else "concept"
        hits.append(hit_of(fid, found.briefs[fid], score, source, sp, via))
    return hits


def associate(
    parts: Parts, scope: Scope, direct: set[str], at: datetime, qc: dict[str, float]
) -> tuple[list[Hit], dict[str, float]]:
    """The association hits (at most ``config.association_limit``, none of ``direct``) and the
    concepts the links reach from the query's concepts ``qc`` (with their weights):
    :func:`reach`, then :func:`pick`."""
    found = reach(parts, scope, at, qc)
    return pick(found, direct, parts.config.association_limit), found.expanded
