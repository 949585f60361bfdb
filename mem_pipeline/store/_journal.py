"""The journal, history and pending turns, and the points of the concept layer: every write
that spans several points, what changed and when, and what is still to be extracted."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import models

from ..models import Scope
from ._collections import SCROLL_PAGE, VALID, StoreBase, user_filter

__all__ = ["JournalStore"]

log = logging.getLogger(__name__)


class JournalStore(StoreBase):
    """History events, pending turns, the write journal, concept and link points, whole users."""

    # -- history ------------------------------------------------------------------------------
    def add_events(self, scope: Scope, events: Sequence[Mapping[str, Any]]) -> None:
        if not events:
            return
        points = [
            models.PointStruct(id=str(uuid.uuid4()), vector={}, payload={**scope.payload(), **e})
            for e in events
        ]
        with self._translate("writing history"):
            self.client.upsert(self.events, points=points, wait=True)

    def get_events(self, scope: Scope, fact_id: str) -> list[dict[str, Any]]:
        flt = user_filter(scope)
        flt.must = [
            *list(flt.must or []),  # type: ignore[list-item]
            models.FieldCondition(key="fact_id", match=models.MatchValue(value=fact_id)),
        ]
        rows = [dict(r.payload or {}) for r in self._scroll(self.events, flt)]
        rows.sort(key=lambda r: (r.get("at_ts", 0.0), r.get("seq", 0)))
        return rows

    # -- pending turns ------------------------------------------------------------------------
    def add_pending(self, scope: Scope, record: Mapping[str, Any]) -> str:
        pid = str(uuid.uuid4())
        with self._translate("writing a pending turn"):
            self.client.upsert(
                self.pending,
                points=[models.PointStruct(id=pid, vector={}, payload={**scope.payload(), **record})],
                wait=True,
            )
        return pid

    def list_pending(self, scope: Scope | None = None) -> list[tuple[str, dict[str, Any]]]:
        flt = user_filter(scope) if scope is not None else None
        rows: list[tuple[str, dict[str, Any]]] = []
        offset = None
        while True:
            with self._translate("reading pending turns"):
                recs, offset = self.client.scroll(
                    self.pending, scroll_filter=flt, limit=256, offset=offset, with_payload=True
                )
            rows.extend((str(r.id), dict(r.payload or {})) for r in recs)
            if offset is None:
                break
        rows.sort(key=lambda r: r[1].get("created_ts", 0.0))
        return rows

    def note_pending_failure(self, pending_id: str, error: str) -> None:
        with self._translate("updating a pending turn"):
            recs = self.client.retrieve(self.pending, ids=[pending_id], with_payload=True)
            attempts = int((recs[0].payload or {}).get("attempts", 1)) + 1 if recs else 1
            self.client.set_payload(
                self.pending,
                payload={"error": error[:2000], "attempts": attempts},
                points=[pending_id],
                wait=True,
            )

    def delete_pending(self, ids: Sequence[str]) -> None:
        if ids:
            with self._translate("deleting pending turns"):
                self.client.delete(
                    self.pending, points_selector=models.PointIdsList(points=list(ids)), wait=True
                )

    # -- concepts and links -------------------------------------------------------------------
    def get_points(self, collection: str, ids: Sequence[str], scope: Scope) -> dict[str, dict[str, Any]]:
        """Payloads of the points with these ids that belong to the scope's user."""
        if not ids:
            return {}
        with self._translate("reading concepts"):
            recs = self.client.retrieve(collection, ids=list(ids), with_payload=True)
        return {
            str(r.id): dict(r.payload or {})
            for r in recs
            if (r.payload or {}).get("tenant") == scope.tenant
            and (r.payload or {}).get("user_id") == scope.user_id
        }

    def put_points(
        self, collection: str, scope: Scope, items: Sequence[tuple[str, dict[str, Any], Any]]
    ) -> None:
        """Upsert (id, payload, vector or None) points of the scope's user."""
        if not items:
            return
        who = {"tenant": scope.tenant, "user_id": scope.user_id}
        points = [
            models.PointStruct(
                id=pid,
                vector={} if vec is None else {"name": [float(x) for x in vec]},
                payload={**payload, **who},
            )
            for pid, payload, vec in items
        ]
        with self._translate("writing concepts"):
            self.client.upsert(collection, points=points, wait=True)

    def set_points(self, collection: str, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        with self._translate("updating concepts"):
            for pid, fields in updates:
                self.client.set_payload(collection, payload=fields, points=[pid], wait=True)

    def delete_points(self, collection: str, ids: Sequence[str]) -> None:
        if ids:
            with self._translate("deleting concepts"):
                self.client.delete(
                    collection, points_selector=models.PointIdsList(points=list(ids)), wait=True
                )

    def fact_concepts(self, scope: Scope) -> list[tuple[str, list[str]]]:
        """(id, concepts) of every current fact of one user in one tenant."""
        flt = user_filter(scope)
        flt.must = [*list(flt.must or []), VALID]  # type: ignore[list-item]
        return [
            (str(r.id), list((r.payload or {}).get("concepts") or [])) for r in self._scroll(self.facts, flt)
        ]

    def begin(self, scope: Scope, op: str) -> str:
        """Announce a multi-point write of this user; :meth:`end` clears it when complete."""
        jid = str(uuid.uuid4())
        who = {"tenant": scope.tenant, "user_id": scope.user_id}
        with self._translate("writing the journal"):
            self.client.upsert(
                self.journal,
                points=[models.PointStruct(id=jid, vector={}, payload={**who, "op": op})],
                wait=True,
            )
        return jid

    def end(self, jid: str) -> None:
        with self._translate("clearing the journal"):
            self.client.delete(self.journal, points_selector=models.PointIdsList(points=[jid]), wait=True)

    def unfinished(self) -> list[tuple[str, dict[str, Any]]]:
        """Writes announced and never cleared (the process died, or the write failed)."""
        return [(str(r.id), dict(r.payload or {})) for r in self._scroll(self.journal, models.Filter())]

    def user_points(self, collection: str, scope: Scope) -> dict[str, dict[str, Any]]:
        """Every point of one user in one tenant in ``collection``: id -> payload."""
        return {str(r.id): dict(r.payload or {}) for r in self._scroll(collection, user_filter(scope))}

    def concept_vectors(self, scope: Scope) -> tuple[list[str], npt.NDArray[np.float32], list[float]]:
        """Names, name embeddings and fact counts of one user's concepts (for in-process
        matching)."""
        names: list[str] = []
        counts: list[float] = []
        rows: list[list[float]] = []
        offset = None
        while True:
            with self._translate("reading concept vectors"):
                recs, offset = self.client.scroll(
                    self.concepts,
                    scroll_filter=user_filter(scope),
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=["name"],
                )
            for r in recs:
                vec = r.vector.get("name") if isinstance(r.vector, dict) else None
                if isinstance(vec, list):
                    names.append(str((r.payload or {})["name"]))
                    counts.append(float((r.payload or {}).get("count", 0)))
                    rows.append([float(x) for x in vec])  # type: ignore[arg-type]
            if offset is None:
                break
        mat = np.array(rows, dtype=np.float32).reshape(len(rows), self.dimensions)
        return names, mat, counts

    # -- whole user ---------------------------------------------------------------------------
    def delete_user(self, scope: Scope) -> None:
        """Remove everything of one user (facts, history, pending, links) in one tenant."""
        flt = user_filter(scope)
        self.briefs.drop_user(scope.tenant, scope.user_id)
        self._speakers.clear()
        with self._translate("forgetting a user"):
            for name in (self.facts, self.events, self.pending, self.links, self.concepts, self.journal):
                self.client.delete(name, points_selector=models.FilterSelector(filter=flt), wait=True)
        log.info("forgot user %r in tenant %r", scope.user_id, scope.tenant)

    def count_user_points(self, scope: Scope) -> dict[str, int]:
        flt = user_filter(scope)
        with self._translate("counting"):
            return {
                name: int(self.client.count(name, count_filter=flt, exact=True).count)
                for name in (self.facts, self.events, self.pending, self.links, self.concepts, self.journal)
            }
