"""The payload cache: the fields of a fact that ranking and hits read, kept for the facts read
most recently, so that a search asks the engine for ids and scores only.

Reading payloads is most of what a search costs the engine: the edge engine parses a point's
whole JSON payload (the turn's lexical text with its neighbours' words included) to return any
field of it. At LoCoMo size a dense + lexical query of 80 points each took 0.2 ms without
payloads and 12-16 ms with them (the same run, a loaded machine). So the candidates' fields come
from this cache, and only the facts it misses are read from the engine, in one call.

The cache holds at most ``size`` facts (least recently used leave first): memory stays flat
however many facts the store holds. It is coherent because every write of the facts collection
goes through :mod:`mem_pipeline.store` in this process and drops (or refreshes) what it
changes; an embedded store belongs to one process. A Qdrant server can be written by other
processes, so a store opened with ``url=`` keeps no cache (size 0).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from qdrant_client import models

__all__ = ["BRIEF_FIELDS", "BRIEF_SELECTOR", "BriefCache", "brief_of", "touches"]

#: The fields of a fact point kept in the cache: all a :class:`~mem_pipeline.models.StoredFact`
#: is built from (so ``get`` and a hit read it too), none of the texts that were embedded and
#: indexed, nor the bookkeeping of upkeep (repeat key, analysis versions, write order).
BRIEF_FIELDS: tuple[str, ...] = (
    *("tenant", "user_id", "agent_id", "run_id", "kind", "origin", "sources", "slot", "text"),
    *("category", "concepts", "metadata", "created_ts", "updated_ts", "last_seen_ts"),
    *("valid_from_ts", "invalid_ts", "valid", "superseded_by", "confirmations", "recalls"),
    *("valence", "importance", "reply_to", "bare", "about"),
)
BRIEF_SELECTOR = models.PayloadSelectorInclude(include=list(BRIEF_FIELDS))
_FIELDS = frozenset(BRIEF_FIELDS)


def brief_of(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The cached fields of a full payload (what a write puts in the cache)."""
    return {k: v for k, v in payload.items() if k in _FIELDS}


def touches(fields: Iterable[str]) -> bool:
    """Whether a write of these payload fields changes what the cache holds."""
    return any(f in _FIELDS for f in fields)


class BriefCache:
    """An LRU of fact id -> its cached fields (a dict that callers must not change)."""

    def __init__(self, size: int) -> None:
        self.size = max(0, int(size))
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, ids: Iterable[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """The cached briefs among ``ids``, and the ids missing."""
        found: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        if not self.size:
            return found, list(ids)
        with self._lock:
            items = self._items
            for i in ids:
                b = items.get(i)
                if b is None:
                    missing.append(i)
                else:
                    items.move_to_end(i)
                    found[i] = b
        return found, missing

    def put_many(self, briefs: Mapping[str, dict[str, Any]]) -> None:
        if not self.size or not briefs:
            return
        with self._lock:
            items = self._items
            for i, b in briefs.items():
                items[i] = b
                items.move_to_end(i)
            while len(items) > self.size:
                items.popitem(last=False)

    def drop(self, ids: Iterable[str]) -> None:
        if not self._items:
            return
        with self._lock:
            for i in ids:
                self._items.pop(str(i), None)

    def drop_user(self, tenant: str, user_id: str) -> None:
        """Forget every cached fact of one user (after a delete by filter)."""
        with self._lock:
            gone = [
                i for i, b in self._items.items() if b.get("user_id") == user_id and b.get("tenant") == tenant
            ]
            for i in gone:
                del self._items[i]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
