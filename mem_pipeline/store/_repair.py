"""Repair of points the engine can no longer read (written by an older version)."""

from __future__ import annotations

import logging
from typing import Any

from qdrant_client import models

from ..errors import StoreError
from ._collections import StoreBase

__all__ = ["RepairStore"]

log = logging.getLogger(__name__)


class RepairStore(StoreBase):
    """Finding unreadable points and rebuilding a collection without them."""

    def _collections(self) -> list[str]:
        return [self.facts, self.events, self.pending, self.links, self.concepts, self.journal]

    def unreadable(self, collection: str) -> list[str]:
        """Ids of the points of ``collection`` whose payload the engine cannot read (written by
        an older version that let metadata nest too deep): reads in batches, and halves a
        batch that fails until the bad points are found."""
        ids = [str(r.id) for r in self._scroll(collection, models.Filter(), payload=False)]
        bad: list[str] = []
        todo = [ids[i : i + 256] for i in range(0, len(ids), 256)]
        while todo:
            batch = todo.pop()
            try:
                with self._translate("reading"):
                    self.client.retrieve(collection, ids=batch, with_payload=True)
            except StoreError:
                if len(batch) == 1:
                    bad.extend(batch)
                else:
                    todo += [batch[: len(batch) // 2], batch[len(batch) // 2 :]]
        return bad

    def repair(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Find points whose payload cannot be read and rebuild their collections without them.

        The readable points are copied (ids, vectors, payloads) into a new collection of the
        same schema; the damaged one is set aside by the edge engine (``<name>.damaged-<time>``)
        or, on other engines, dropped after the copy was read. Returns what was found and done,
        with any write-ahead-log repair made when the store was opened."""
        report: dict[str, Any] = {
            "wal_repairs": [vars(r) for r in getattr(self.client, "repairs", [])],
            "unreadable": {},
            "rebuilt": [],
        }
        for name in self._collections():
            bad = self.unreadable(name)
            if not bad:
                continue
            report["unreadable"][name] = bad
            if dry_run:
                continue
            skip = set(bad)
            keep = [
                str(r.id) for r in self._scroll(name, models.Filter(), payload=False) if str(r.id) not in skip
            ]
            points: list[models.PointStruct] = []
            for i in range(0, len(keep), 256):
                with self._translate("reading points to keep"):
                    recs = self.client.retrieve(
                        name, ids=keep[i : i + 256], with_payload=True, with_vectors=True
                    )
                points += [
                    models.PointStruct(
                        id=str(r.id),
                        vector=dict(r.vector) if isinstance(r.vector, dict) else {},
                        payload=dict(r.payload or {}),
                    )
                    for r in recs
                ]
            log.warning("rebuilding collection %s without %d unreadable points", name, len(bad))
            self.briefs.clear()
            self._speakers.clear()
            with self._translate("rebuilding a collection"):
                self.client.delete_collection(name)
                self._ensure()
                for i in range(0, len(points), 256):
                    self.client.upsert(name, points=points[i : i + 256], wait=True)
            report["rebuilt"].append(name)
        return report
