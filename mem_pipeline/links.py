"""The concept-link layer's state: each user's concept counts, co-occurrence links and name
vectors, kept in the store's ``concepts`` and ``links`` collections, with per-process caches.
The maths it applies (strength, expansion, deltas) is in :mod:`mem_pipeline.concepts`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any

import numpy as np

from .concepts import LinkStats, followable, link_strength, pair_deltas, pair_key, point_id, query_grams
from .models import Scope

__all__ = ["ConceptLinks", "LinkView"]


@dataclass(frozen=True)
class LinkView:
    """One concept link of a user as a reader sees it (:meth:`ConceptLinks.describe`): how often
    the two concepts met (``count``), the feedback it received (``feedback``, in [-1, 1]), its
    strength now, and whether a search would follow it."""

    a: str
    b: str
    count: float
    feedback: float
    strength: float
    followable: bool
    last_seen: datetime


class ConceptLinks:
    """Concept counts and links of each user, kept in the store's ``concepts`` and ``links``
    collections (see :mod:`mem_pipeline.store`). Scoped per (tenant, user_id): links never
    cross users or tenants; ``forget`` deletes them with the user's facts.
    """

    def __init__(
        self,
        store: Any,
        embed: Any,
        *,
        half_life_days: float,
        floor: float,
        min_count: int,
        match_threshold: float,
    ) -> None:
        self.store = store
        self.embed = embed
        self.half_life_days = half_life_days
        self.floor = floor
        self.min_count = min_count
        self.match_threshold = match_threshold
        self._adjacency: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = {}
        self._vocab: dict[tuple[str, str], tuple[list[str], Any]] = {}
        # concept name -> count of current facts, loaded with the vocabulary, kept in step by
        # update(): the read path looks names and counts up here instead of in the store
        self._counts: dict[tuple[str, str], dict[str, float]] = {}
        self._by_concept: dict[tuple[str, str], dict[str, set[str]]] = {}

    @staticmethod
    def _cid(scope: Scope, name: str) -> str:
        return point_id("c", scope.tenant, scope.user_id, name)

    @staticmethod
    def _lid(scope: Scope, a: str, b: str) -> str:
        return point_id("l", scope.tenant, scope.user_id, a, b)

    # -- writes ---------------------------------------------------------------------------------
    def unknown(self, scope: Scope, names: Sequence[str]) -> list[str]:
        """The names among ``names`` that are not yet concepts of the scope's user (their name
        embedding will be needed: ``Memory.add`` embeds them with the facts, in one call)."""
        ids = {n: self._cid(scope, n) for n in dict.fromkeys(names)}
        have = self.store.get_points(self.store.concepts, list(ids.values()), scope)
        return [n for n, i in ids.items() if i not in have]

    def update(
        self,
        scope: Scope,
        before: Sequence[str],
        after: Sequence[str],
        when: datetime,
        *,
        fact_id: str | None = None,
    ) -> None:
        """A fact's concepts changed from ``before`` to ``after`` (``[]`` -> added, -> ``[]``
        deleted): adjust concept counts and pair co-occurrence counts."""
        index = self._by_concept.get(self._ukey(scope))
        if index is not None and fact_id is not None:
            for c in set(before) - set(after):
                index.get(c, set()).discard(fact_id)
            for c in set(after) - set(before):
                index.setdefault(c, set()).add(fact_id)
        pairs, concepts = pair_deltas(before, after)
        if not pairs and not concepts:
            return
        ts = when.timestamp()
        if concepts:
            ids = {name: self._cid(scope, name) for name in concepts}
            have = self.store.get_points(self.store.concepts, list(ids.values()), scope)
            new = [n for n, d in concepts.items() if d > 0 and ids[n] not in have]
            vecs = self.embed.embed(new) if new else []
            self.store.put_points(
                self.store.concepts,
                scope,
                [(ids[n], {"name": n, "count": 1, "last_ts": ts}, v) for n, v in zip(new, vecs)],
            )
            updates, gone = [], []
            for n, d in concepts.items():
                p = have.get(ids[n])
                if p is None:
                    continue
                count = int(p.get("count", 0)) + d
                if count <= 0:
                    gone.append(ids[n])
                else:
                    updates.append(
                        (
                            ids[n],
                            {
                                "count": count,
                                "last_ts": max(ts, p.get("last_ts", ts)) if d > 0 else p.get("last_ts", ts),
                            },
                        )
                    )
            self.store.set_points(self.store.concepts, updates)
            self.store.delete_points(self.store.concepts, gone)
            key = self._ukey(scope)
            if gone:
                self._vocab.pop(key, None)
                self._counts.pop(key, None)
            elif key in self._vocab:
                counts = self._counts[key]
                for n, d in concepts.items():
                    if n in new:
                        counts[n] = 1.0
                    elif ids[n] in have:
                        counts[n] = float(int(have[ids[n]].get("count", 0)) + d)
                if new:
                    names, mat = self._vocab[key]
                    self._vocab[key] = ([*names, *new], np.vstack([mat, np.asarray(vecs)]))
        if pairs:
            self._bump_pairs(scope, {k: (float(d), 0.0) for k, d in pairs.items()}, ts)

    def _bump_pairs(
        self, scope: Scope, deltas: Mapping[tuple[str, str], tuple[float, float]], ts: float
    ) -> None:
        ids = {k: self._lid(scope, *k) for k in deltas}
        have = self.store.get_points(self.store.links, list(ids.values()), scope)
        puts: list[tuple[str, dict[str, Any], None]] = []
        gone: list[str] = []
        for (a, b), (dc, dfb) in deltas.items():
            p = have.get(ids[(a, b)], {"a": a, "b": b, "count": 0.0, "fb": 0.0, "last_ts": ts})
            count = max(0.0, float(p.get("count", 0.0)) + dc)
            fb = max(-1.0, min(1.0, float(p.get("fb", 0.0)) + dfb))
            if count <= 0 and fb <= 0:
                if ids[(a, b)] in have:
                    gone.append(ids[(a, b)])
                continue
            last = max(ts, float(p.get("last_ts", ts))) if dc > 0 or dfb else float(p.get("last_ts", ts))
            puts.append((ids[(a, b)], {"a": a, "b": b, "count": count, "fb": fb, "last_ts": last}, None))
        self.store.put_points(self.store.links, scope, puts)
        self.store.delete_points(self.store.links, gone)
        adj = self._adjacency.get(self._ukey(scope))
        if adj is not None:  # keep the cached adjacency in step with what was written
            for a, b in deltas:
                adj.get(a, {}).pop(b, None)
                adj.get(b, {}).pop(a, None)
            for _, p, _ in puts:
                adj.setdefault(p["a"], {})[p["b"]] = p
                adj.setdefault(p["b"], {})[p["a"]] = p

    @staticmethod
    def _ukey(scope: Scope) -> tuple[str, str]:
        return (scope.tenant, scope.user_id)

    def invalidate(self, scope: Scope | None = None) -> None:
        """Drop the cached adjacency and vocabulary (of one user, or all)."""
        if scope is None:
            self._adjacency.clear()
            self._vocab.clear()
            self._counts.clear()
            self._by_concept.clear()
        else:
            self._adjacency.pop(self._ukey(scope), None)
            self._vocab.pop(self._ukey(scope), None)
            self._counts.pop(self._ukey(scope), None)
            self._by_concept.pop(self._ukey(scope), None)

    def _adjacent(self, scope: Scope) -> dict[str, dict[str, dict[str, Any]]]:
        """The user's links as an adjacency map, read once per process and then kept in step
        by :meth:`_bump_pairs` (reads are O(links of the query's concepts), not a scan).
        Another process writing the same user on a server is seen after :meth:`invalidate`
        or a reopen."""
        key = self._ukey(scope)
        adj = self._adjacency.get(key)
        if adj is None:
            adj = {}
            for p in self.store.user_points(self.store.links, scope).values():
                adj.setdefault(p["a"], {})[p["b"]] = p
                adj.setdefault(p["b"], {})[p["a"]] = p
            self._adjacency[key] = adj
        return adj

    def rebuild(self, scope: Scope, facts: Sequence[Any]) -> None:
        """Set the user's concept and pair counts to what its valid ``facts`` imply (recovery
        after an interrupted write). Feedback on links is kept: it is not derived from facts."""
        counts: dict[str, int] = {}
        pairs: dict[tuple[str, str], int] = {}
        last: dict[str, float] = {}
        for f in facts:
            cs = sorted(set(f.concepts))
            ts = f.last_seen_at.timestamp()
            for c in cs:
                counts[c] = counts.get(c, 0) + 1
                last[c] = max(ts, last.get(c, ts))
            for k in combinations(cs, 2):
                pairs[k] = pairs.get(k, 0) + 1
        have = self.store.user_points(self.store.concepts, scope)
        ids = {self._cid(scope, n): n for n in counts}
        new = [n for i, n in ids.items() if i not in have]
        vecs = self.embed.embed(new) if new else []
        self.store.put_points(
            self.store.concepts,
            scope,
            [
                (self._cid(scope, n), {"name": n, "count": counts[n], "last_ts": last[n]}, v)
                for n, v in zip(new, vecs)
            ],
        )
        self.store.set_points(
            self.store.concepts,
            [
                (i, {"count": counts[n]})
                for i, n in ids.items()
                if i in have and have[i].get("count") != counts[n]
            ],
        )
        self.store.delete_points(self.store.concepts, [i for i in have if i not in ids])
        have = self.store.user_points(self.store.links, scope)
        lids = {self._lid(scope, *k): k for k in pairs}
        puts = []
        for i, (a, b) in lids.items():
            p = have.get(i, {"fb": 0.0, "last_ts": max(last[a], last[b])})
            if i not in have or float(p.get("count", 0.0)) != pairs[(a, b)]:
                puts.append((i, {**p, "a": a, "b": b, "count": float(pairs[(a, b)])}, None))
        gone = []
        for i, p in have.items():
            if i not in lids:
                if float(p.get("fb", 0.0)) > 0:
                    if float(p.get("count", 0.0)) != 0:
                        puts.append((i, {**p, "count": 0.0}, None))
                else:
                    gone.append(i)
        self.store.put_points(self.store.links, scope, puts)
        self.store.delete_points(self.store.links, gone)
        self.invalidate(scope)

    def feedback(
        self, scope: Scope, sources: Sequence[str], targets: Sequence[str], amount: float, when: datetime
    ) -> int:
        """Move every link between a source and a target concept by ``0.5 * amount`` (each pair
        once), bounded in [-1, 1]; returns how many links moved."""
        deltas = {pair_key(a, b): (0.0, 0.5 * amount) for a in set(sources) for b in set(targets) if a != b}
        if deltas:
            self._bump_pairs(scope, deltas, when.timestamp())
        return len(deltas)

    # -- reads ----------------------------------------------------------------------------------
    def match_query(self, scope: Scope, query: str) -> dict[str, float]:
        """The scope's known concepts the query names: exactly (weight 1) or by name embedding
        (weight = cosine, at or above ``match_threshold``)."""
        found, rest = self.query_terms(scope, query)
        return self.name_matches(scope, found, self.embed.embed(rest) if rest else None)

    def query_terms(self, scope: Scope, query: str) -> tuple[dict[str, float], list[str]]:
        """The first half of :meth:`match_query`: the concepts the query names exactly, and the
        n-grams left to match by name embedding (embedding them is the costly half, so a caller
        may run it beside other work and pass the vectors to :meth:`name_matches`)."""
        grams = query_grams(query)
        if not grams:
            return {}, []
        counts = self._concept_counts(scope)
        found = {g: 1.0 for g in grams if g in counts}
        if found:
            # name matching embeds 1-2 word grams, the costly part of a recall (~1 ms per gram on
            # one core; on LoCoMo's raw turns the concept layer cost 11 ms of an 18.6 ms search
            # with it, 3.5 ms of 11.7 without): a query that names concepts exactly is anchored
            # by them, so embedding is the fallback for a query that names none ("my pup" when
            # the user's concept is "puppy")
            return found, []
        rest = [g for g in grams if g.count(" ") < 2][:10]
        return found, (rest if self._vocabulary(scope)[0] else [])

    def name_matches(self, scope: Scope, found: dict[str, float], vectors: Any) -> dict[str, float]:
        """Add to ``found`` the concept each n-gram vector is closest to, at or above the
        threshold (cosine: both sides are L2-normalised)."""
        names, mat = self._vocabulary(scope)
        if vectors is None or not len(vectors) or not names:
            return found
        for row in np.asarray(vectors) @ mat.T:
            best = int(row.argmax())
            if row[best] >= self.match_threshold:
                found[names[best]] = max(found.get(names[best], 0.0), float(row[best]))
        return found

    def specificity(self, scope: Scope, concepts: Sequence[str]) -> dict[str, float]:
        """``1 / (1 + ln n)`` for a concept on ``n`` facts: 1 for a rare concept, 0.18 for one on
        100 facts. A concept on many facts (a speaker's name, "work") says little about which
        fact a query wants."""
        counts = self._concept_counts(scope)
        return {c: 1.0 / (1.0 + math.log(max(1.0, counts.get(c, 1.0)))) for c in concepts}

    def fact_ids(self, scope: Scope, concepts: Sequence[str], limit: int) -> list[str]:
        """Ids of the user's current facts carrying these concepts (in the concepts' order), from
        an index read once per process and kept in step by :meth:`update` -- so the read path
        fetches facts by id instead of filtering every point."""
        key = self._ukey(scope)
        index = self._by_concept.get(key)
        if index is None:
            index = {}
            for fid, cs in self.store.fact_concepts(scope):
                for c in cs:
                    index.setdefault(c, set()).add(fid)
            self._by_concept[key] = index
        out: list[str] = []
        for c in concepts:
            for fid in sorted(index.get(c, ())):
                if fid not in out:
                    out.append(fid)
                if len(out) >= limit:
                    return out
        return out

    def _vocabulary(self, scope: Scope) -> tuple[list[str], Any]:
        """The user's concept names and name vectors, read once per process; new concepts are
        appended by :meth:`update`, a removed one drops the cache (re-read on next use)."""
        key = self._ukey(scope)
        if key not in self._vocab:
            names, mat, counts = self.store.concept_vectors(scope)
            self._vocab[key] = (names, mat)
            self._counts[key] = dict(zip(names, counts))
        return self._vocab[key]

    def _concept_counts(self, scope: Scope) -> dict[str, float]:
        """The user's concept names and their fact counts (cached with the vocabulary)."""
        self._vocabulary(scope)
        return self._counts[self._ukey(scope)]

    def describe(self, scope: Scope, now: datetime) -> tuple[dict[str, float], list[LinkView]]:
        """The user's concepts (name -> count of current facts) and every link between them, as
        strength, feedback and followability stand at ``now``, strongest first: what a person
        looks at (the memory browser draws it). Read-only."""
        counts = dict(self._concept_counts(scope))
        seen: dict[int, dict[str, Any]] = {}
        for row in self._adjacent(scope).values():
            for p in row.values():
                seen[id(p)] = p
        out = []
        for p in seen.values():
            a, b = str(p["a"]), str(p["b"])
            last = float(p.get("last_ts", 0.0))
            stats = LinkStats(
                n_ab=float(p.get("count", 0.0)),
                n_a=counts.get(a, 0.0),
                n_b=counts.get(b, 0.0),
                age_days=max(0.0, (now.timestamp() - last) / 86_400.0),
                feedback=float(p.get("fb", 0.0)),
            )
            s = link_strength(stats, half_life_days=self.half_life_days)
            out.append(
                LinkView(
                    a=a,
                    b=b,
                    count=stats.n_ab,
                    feedback=stats.feedback,
                    strength=s,
                    followable=followable(stats, s, floor=self.floor, min_count=self.min_count),
                    last_seen=datetime.fromtimestamp(last, tz=now.tzinfo),
                )
            )
        out.sort(key=lambda v: (-v.strength, v.a, v.b))
        return counts, out

    def neighbours(
        self, scope: Scope, concepts: Sequence[str], now: datetime
    ) -> dict[str, list[tuple[str, float]]]:
        adj = self._adjacent(scope)
        seen: dict[int, dict[str, Any]] = {}
        for c in concepts:
            for p in adj.get(c, {}).values():
                # a link seen fewer than min_count times and without positive feedback is never
                # followable (see followable): skip it before scoring. Most links of a busy
                # concept are such one-offs, and scoring them was most of a recall's cost.
                if float(p.get("count", 0.0)) >= self.min_count or float(p.get("fb", 0.0)) > 0:
                    seen[id(p)] = p
        rows = list(seen.values())
        others = {r["a"] for r in rows} | {r["b"] for r in rows}
        known = self._concept_counts(scope)
        counts = {n: known.get(n, 0.0) for n in others}
        out: dict[str, list[tuple[str, float]]] = {}
        wanted = set(concepts)
        for r in rows:
            age = max(0.0, (now.timestamp() - float(r.get("last_ts", 0.0))) / 86_400.0)
            for src, dst in ((r["a"], r["b"]), (r["b"], r["a"])):
                if src not in wanted:
                    continue
                stats = LinkStats(
                    n_ab=float(r.get("count", 0.0)),
                    n_a=counts.get(src, 0.0),
                    n_b=counts.get(dst, 0.0),
                    age_days=age,
                    feedback=float(r.get("fb", 0.0)),
                )
                s = link_strength(stats, half_life_days=self.half_life_days)
                if followable(stats, s, floor=self.floor, min_count=self.min_count):
                    out.setdefault(src, []).append((dst, s))
        return out
