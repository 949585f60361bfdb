"""The reads and writes of the concept layer that answer one question each: the concepts a
query names (by id, by their words' stems, by the nearest name vector), the links of a few
concepts (or, for a user with few, all of them), the facts of one concept (or the concepts of
each of a user's few facts), and the names whose vectors are still to be computed. Each is one
engine call over a payload index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qdrant_client import models

from ..models import Scope
from ._briefs import BRIEF_SELECTOR
from ._collections import VALID, StoreBase, user_filter

__all__ = ["ConceptStore"]

#: ``vec`` of a concept point whose name vector is not computed yet (``ConceptLinks`` writes
#: a new concept without it and fills it later, in batches); points written before have no
#: ``vec`` field and a vector
NO_VECTOR_YET = 0
HAS_VECTOR = 1
#: ``vec`` of a concept without its name vector whose name was picked by rules from a raw
#: turn's words, not chosen by an extractor or the caller: its vector is computed once enough
#: current facts carry it (``ConceptLinks.due_vector``)
PICKED = 2


def _user_and(scope: Scope, *conds: models.Condition) -> models.Filter:
    flt = user_filter(scope)
    assert isinstance(flt.must, list)
    flt.must.extend(conds)
    return flt


def _followable(min_count: int) -> models.Filter:
    """A link that may be followed: seen at least ``min_count`` times, or vouched for by
    feedback (``concepts.followable`` before its strength is known)."""
    return models.Filter(
        should=[
            models.FieldCondition(key="count", range=models.Range(gte=float(min_count))),
            models.FieldCondition(key="fb", range=models.Range(gt=0.0)),
        ]
    )


class ConceptStore(StoreBase):
    """Lookups of the ``concepts`` and ``links`` collections for one user."""

    def concepts_by_key(self, scope: Scope, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The user's concepts whose stem key (``concepts.name_key``) is one of ``keys``:
        name -> payload."""
        if not keys:
            return {}
        flt = _user_and(scope, models.FieldCondition(key="key", match=models.MatchAny(any=list(keys))))
        with self._translate("reading concepts"):
            recs, _ = self.client.scroll(self.concepts, scroll_filter=flt, limit=256, with_payload=True)
        return {str(p["name"]): dict(p) for r in recs if (p := r.payload or {}).get("name")}

    def has_concepts(self, scope: Scope) -> bool:
        with self._translate("counting concepts"):
            recs, _ = self.client.scroll(
                self.concepts, scroll_filter=user_filter(scope), limit=1, with_payload=False
            )
        return bool(recs)

    def nearest_concepts(
        self, scope: Scope, vectors: Sequence[Any], threshold: float
    ) -> list[tuple[str, float] | None]:
        """For each vector, the user's concept whose name vector is closest (cosine), if at
        least ``threshold``: one batch of queries over the name vectors."""
        if not len(vectors):
            return []
        reqs = [
            models.QueryRequest(
                query=[float(x) for x in v],
                using="name",
                filter=user_filter(scope),
                limit=1,
                score_threshold=threshold,
                with_payload=models.PayloadSelectorInclude(include=["name"]),
            )
            for v in vectors
        ]
        with self._translate("matching concept names"):
            responses: list[Any] = self.client.query_batch_points(self.concepts, requests=reqs)
        out: list[tuple[str, float] | None] = []
        for resp in responses:
            best = resp.points[0] if resp.points else None
            out.append(None if best is None else (str((best.payload or {})["name"]), float(best.score)))
        return out

    def links_of(self, scope: Scope, concepts: Sequence[str], min_count: int) -> list[dict[str, Any]]:
        """The user's links with one end among ``concepts`` that may be followed: seen at least
        ``min_count`` times, or vouched for by feedback."""
        if not concepts:
            return []
        names = list(concepts)
        flt = _user_and(
            scope,
            models.Filter(
                should=[
                    models.FieldCondition(key="a", match=models.MatchAny(any=names)),
                    models.FieldCondition(key="b", match=models.MatchAny(any=names)),
                ]
            ),
            _followable(min_count),
        )
        return [dict(r.payload or {}) for r in self._scroll(self.links, flt)]

    def followable_links(self, scope: Scope, min_count: int, at_most: int) -> list[dict[str, Any]] | None:
        """All the user's links that may be followed (as :meth:`links_of` reads them), when they
        are at most ``at_most``; None when there are more. One engine call, of at most
        ``at_most + 1`` points."""
        flt = _user_and(scope, _followable(min_count))
        with self._translate("reading a user's links"):
            recs, _ = self.client.scroll(
                self.links, scroll_filter=flt, limit=at_most + 1, with_payload=True, with_vectors=False
            )
        if len(recs) > at_most:
            return None
        return [dict(r.payload or {}) for r in recs]

    def concept_fact_ids(self, scope: Scope, concept: str, limit: int) -> list[str]:
        """The ids of the first ``limit`` current facts (in id order) of the user carrying
        ``concept``."""
        flt = _user_and(
            scope, VALID, models.FieldCondition(key="concepts", match=models.MatchValue(value=concept))
        )
        with self._translate("reading a concept's facts"):
            recs, _ = self.client.scroll(self.facts, scroll_filter=flt, limit=limit, with_payload=False)
        return sorted(str(r.id) for r in recs)

    def facts_concepts(self, scope: Scope, at_most: int) -> dict[str, list[str]] | None:
        """The concepts of each of the user's current facts (id -> concepts), when they are at
        most ``at_most`` facts; None when there are more. One engine call, of at most
        ``at_most + 1`` points. What ranking reads of those facts (``_briefs``) comes in the same
        call and goes into the payload cache, when it has room for them: the user's next
        searches read no payload from the engine."""
        flt = _user_and(scope, VALID)
        fill = 0 < at_most <= self.briefs.size // 2  # never more than half the cache at once
        with self._translate("reading a user's fact concepts"):
            recs, _ = self.client.scroll(
                self.facts,
                scroll_filter=flt,
                limit=at_most + 1,
                with_payload=BRIEF_SELECTOR if fill else models.PayloadSelectorInclude(include=["concepts"]),
                with_vectors=False,
            )
        if len(recs) > at_most:
            return None
        if fill:
            self.briefs.put_many({str(r.id): r.payload or {} for r in recs})
        return {str(r.id): [str(c) for c in (r.payload or {}).get("concepts") or ()] for r in recs}

    def concept_layer(self, scope: Scope) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The user's whole concept layer, for a person to look at: concept name -> fact count,
        and the payload of every link."""
        counts = {
            str(p["name"]): float(p.get("count", 0.0))
            for r in self._scroll(self.concepts, user_filter(scope))
            if (p := r.payload or {}).get("name")
        }
        links = [dict(r.payload or {}) for r in self._scroll(self.links, user_filter(scope))]
        return counts, links

    def unembedded_concepts(
        self, scope: Scope | None = None, *, picked_at: int = 1
    ) -> list[tuple[str, dict[str, Any]]]:
        """(id, payload) of the concepts (of one user, or everyone's) written without their
        name vector: all that were chosen, and those picked from a raw turn's words (``PICKED``)
        that at least ``picked_at`` current facts carry."""
        due = models.Filter(
            should=[
                models.FieldCondition(key="vec", match=models.MatchValue(value=NO_VECTOR_YET)),
                models.Filter(
                    must=[
                        models.FieldCondition(key="vec", match=models.MatchValue(value=PICKED)),
                        models.FieldCondition(key="count", range=models.Range(gte=float(picked_at))),
                    ]
                ),
            ]
        )
        flt = _user_and(scope, due) if scope is not None else models.Filter(must=[due])
        return [(str(r.id), dict(r.payload or {})) for r in self._scroll(self.concepts, flt)]

    def set_concept_vectors(self, items: Sequence[tuple[str, Any]]) -> None:
        """Write the name vectors of concepts written without them, and mark them done (those
        deleted since they were read are skipped: the vectors are computed unlocked)."""
        if not items:
            return
        with self._translate("reading concepts"):
            alive = {
                str(r.id)
                for r in self.client.retrieve(self.concepts, ids=[c for c, _ in items], with_payload=False)
            }
        items = [(cid, v) for cid, v in items if cid in alive]
        if not items:
            return
        vecs = [models.PointVectors(id=cid, vector={"name": [float(x) for x in v]}) for cid, v in items]
        with self._translate("writing concept vectors"):
            self.client.update_vectors(self.concepts, points=vecs, wait=True)
            self.client.set_payload(
                self.concepts, payload={"vec": HAS_VECTOR}, points=[cid for cid, _ in items], wait=True
            )
