"""The collaborators every stage shares, built once by :class:`~mem_pipeline.Memory` and handed
to the write path, the read path and upkeep (constructor injection; nothing is global)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .config import MemoryConfig
from .embed import EmbeddingCache
from .links import ConceptLinks
from .store import QdrantStore

__all__ = ["Parts", "event_row"]


@dataclass
class Parts:
    """What the stages work with: the configuration, the store, the (caching) embedder, the
    concept links, the clock, and the lock that serialises reads and writes of the store."""

    config: MemoryConfig
    store: QdrantStore
    embed: EmbeddingCache
    links: ConceptLinks
    clock: Callable[[], datetime]
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> datetime:
        return self.clock()


def event_row(
    fid: str, event: str, old: str | None, new: str | None, at: datetime, **detail: Any
) -> dict[str, Any]:
    """One history row. ``seq`` (wall-clock ns) orders events that share ``at`` (an injected
    clock can stand still), in this process and across restarts."""
    return {
        "fact_id": fid,
        "event": event,
        "old_text": old,
        "new_text": new,
        "at_ts": at.timestamp(),
        "seq": time.time_ns(),
        "detail": {k: v for k, v in detail.items() if v not in (None, False, "")},
    }
