"""The collaborators every stage shares, built once by :class:`~mem_pipeline.Memory` and handed
to the write path, the read path and upkeep (constructor injection; nothing is global)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .config import MemoryConfig
from .embed import EmbeddingCache
from .links import ConceptLinks
from .models import Scope
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
    #: makes one user's history, counts and links agree with its facts again (upkeep's
    #: ``recovery.repair_user``, set by ``Memory``): what a failed journaled write calls
    repair: Callable[[Scope, str], None] = field(default=lambda scope, op: None)

    def now(self) -> datetime:
        return self.clock()

    def record_history(self, scope: Scope, rows: list[dict[str, Any]]) -> None:
        """Write the history rows (``event_row``) of a change to ``scope``'s facts. Inside a
        journaled write they wait for the user's next write-behind batch, with its concept
        counts and links (its journal entry stays open until they are written); ``history``
        and every other read of them write the user's waiting rows first."""
        self.links.history(scope, rows)

    @contextlib.contextmanager
    def journaled(self, scope: Scope, op: str) -> Iterator[None]:
        """Journal a write that spans several points: a fact, its history, concept counts and
        links are separate Qdrant writes, so a crash (or an error) between them would leave a
        fact without its ADD event or counts off by one. The entry is cleared when the write is
        complete; one left behind is repaired by ``upkeep.recovery.recover`` (on open for
        embedded stores), or at once when the write failed with an error. The concept counts
        and links the write changed may be written a moment later, in a batch
        (:class:`~mem_pipeline.links.ConceptLinks`): the entry then stays open until they are."""
        # an entry still open for the user (its links wait to be written) covers this write
        # too: what recovery does for it (the user's history, counts and links made to agree
        # with its facts) is what this write would need
        if op not in ("add", "forget"):
            # what the user's earlier adds left waiting (the contexts their turns lend the
            # turns before them) is written before a write that may rewrite or delete those turns
            self.links.flush(scope)
        covered = op != "forget" and self.links.covered(scope)
        jid = None if covered else self.store.begin(scope, op)
        try:
            with self.links.deferring(scope):
                yield
        except BaseException:
            with contextlib.suppress(Exception):  # repair now if we can, else on the next open
                self.repair(scope, op)
                if jid is not None:
                    self.store.end(jid)
            raise
        if jid is not None and not self.links.adopt(scope, jid):  # else cleared with the links
            self.store.end(jid)


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
