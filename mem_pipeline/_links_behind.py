"""The write-behind of journaled writes (see :mod:`mem_pipeline.links`): each user's concept
count and pair deltas, the history rows of its writes, the context its new turns lend the
turns before them and the dense vectors of its new turns, gathered inside journaled writes and
written in one batch ``delay`` seconds later by a background thread, or first by any read of
that user (a search, ``history``, the next add that reads its turns from the engine) and before
any other journaled write of it.

:class:`WriteBehind` holds only what waits, its journal entries and the thread. What a batch
does to the store is the ``write``, ``history``, ``contexts`` and ``vectors`` it is given;
``embed`` computes waiting turns' vectors, which the thread does before the batch without the
lock (a read that writes the batch first computes those still missing itself); ``end`` clears
a journal entry; ``idle`` runs on the thread after each batch, without the lock
(``ConceptLinks`` embeds waiting names there).

All of it is derived from the facts and turns, which are written at once: a process that dies
before the batch leaves the write's journal entry open, and recovery recomputes the user's
counts and links, adds the history events its facts imply (marked ``recovered``), lends the
latest turns the context of the turns after them and embeds the turns still without a vector,
as for any interrupted write.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from .models import Scope

__all__ = ["WriteBehind"]

log = logging.getLogger(__name__)

#: Turns embedded per call by ``embed_waiting``. One: a search's query waits for
#: the model behind at most one turn, and on 2 cores one short text a call was the cheapest per
#: text (LoCoMo turns, MiniLM int8: 6.6-7.2 ms a turn one at a time, 9.3-10.7 ms in calls of 8)
EMBED_CHUNK = 1

#: name -> (count delta, latest time it was added, or None)
Counts = dict[str, tuple[float, float | None]]
#: pair -> (count delta, feedback delta, time of the change)
Pairs = dict[tuple[str, str], tuple[float, float, float]]
#: history rows waiting to be written, each with the scope it is written under
Rows = list[tuple[Scope, list[dict[str, Any]]]]
#: turn id -> (its grown lexical index text, other fields), as ``FactStore.set_lexicals`` takes
Contexts = dict[str, tuple[str, dict[str, Any]]]
#: turn id -> [the text it is embedded as, its vector once computed, else None]
Dense = dict[str, list[Any]]


class _Due:
    """One user's deltas waiting to be written, and the journal entry that stays open until
    they are: concept -> [delta, latest time of an addition (None: none)]; pair -> the same."""

    __slots__ = ("chosen", "concepts", "contexts", "dense", "events", "jid", "pairs", "scope")

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.concepts: dict[str, list[Any]] = {}
        self.chosen: set[str] = set()  # concepts an extractor or the caller chose (not picked)
        self.pairs: dict[tuple[str, str], list[Any]] = {}
        self.events: Rows = []
        self.contexts: Contexts = {}
        self.dense: Dense = {}
        self.jid: str | None = None


def _merge(into: dict[Any, list[Any]], deltas: Mapping[Any, int], ts: float) -> None:
    for k, d in deltas.items():
        row = into.setdefault(k, [0.0, None])
        row[0] += d
        if d > 0:
            row[1] = ts if row[1] is None else max(row[1], ts)


class WriteBehind:
    """Deltas waiting per user, written by a background thread ``delay`` seconds after the
    first of a burst. ``lock``: the store's lock, which every method takes (the thread too).
    ``write(scope, counts, pairs, ts)``: apply one user's batch; ``history(rows)``: write
    waiting history rows; ``contexts(grown)``: write turns' grown contexts; ``vectors(dense)``:
    write turns' dense vectors, computing those still None; ``embed(texts)``: compute vectors,
    called by the thread without the lock; ``end(jid)``: clear a journal entry; ``idle()``:
    called by the thread after each batch, without the lock."""

    def __init__(
        self,
        *,
        delay: float,
        lock: threading.RLock,
        write: Callable[[Scope, Counts, Pairs, float, AbstractSet[str]], None],
        history: Callable[[Rows], None],
        contexts: Callable[[Contexts], None],
        vectors: Callable[[Dense], None],
        embed: Callable[[list[str]], Any],
        end: Callable[[str], None],
        idle: Callable[[], None],
    ) -> None:
        self.delay = max(0.0, delay)
        self._lock = lock
        self._write, self._history, self._contexts = write, history, contexts
        self._vectors, self._embed = vectors, embed
        self._end, self._idle = end, idle
        self._due: dict[tuple[str, str], _Due] = {}
        self._local = threading.local()  # the scope of the journaled write this thread is in
        self._wake = threading.Event()
        self._stopping = threading.Event()  # ends the thread's wait for a burst to gather
        self.stopped = False
        self._thread: threading.Thread | None = None
        self._at_exit: Callable[[], None] | None = None

    @staticmethod
    def _key(scope: Scope) -> tuple[str, str]:
        return (scope.tenant, scope.user_id)

    def enabled(self) -> bool:
        """Whether journaled writes' records wait for a batch (a ``delay`` is set and the
        thread is not stopped)."""
        return self.delay > 0 and not self.stopped

    def active(self, scope: Scope) -> bool:
        """Whether a change of ``scope``'s counts made now, in this thread, is to wait."""
        return self.enabled() and getattr(self._local, "scope", None) == scope

    def active_user(self, scope: Scope) -> bool:
        """Whether a write of ``scope``'s user (any agent or run) made now, in this thread, is
        inside a journaled write of that user whose records are to wait."""
        inside = getattr(self._local, "scope", None)
        return self.enabled() and inside is not None and self._key(inside) == self._key(scope)

    def settled(self) -> bool:
        """Whether nothing waits to be written (the background writer may still be computing
        name vectors after its last batch)."""
        with self._lock:
            return not self._due

    def in_writer(self) -> bool:
        """Whether the calling thread is the background writer."""
        return threading.current_thread() is self._thread

    @contextlib.contextmanager
    def deferring(self, scope: Scope) -> Iterator[None]:
        """Within this block (a journaled write of ``scope``, in this thread), changes wait for
        the user's next batch (:meth:`record`); :meth:`adopt` then hands the batch the block's
        journal entry."""
        outer = getattr(self._local, "scope", None)
        self._local.scope = scope
        try:
            yield
        finally:
            self._local.scope = outer

    def _due_of(self, scope: Scope) -> _Due:
        due = self._due.get(self._key(scope))
        if due is None:
            due = self._due[self._key(scope)] = _Due(scope)
        return due

    def record(
        self,
        scope: Scope,
        concepts: Mapping[str, int],
        pairs: Mapping[tuple[str, str], int],
        ts: float,
        chosen: AbstractSet[str] = frozenset(),
    ) -> None:
        """Add count and pair deltas of ``scope``, made at ``ts``, to its next batch (``chosen``:
        concepts an extractor or the caller chose, see ``ConceptLinks.update``)."""
        with self._lock:
            due = self._due_of(scope)
            _merge(due.concepts, concepts, ts)
            due.chosen |= chosen
            _merge(due.pairs, pairs, ts)
            self._start()

    def record_events(self, scope: Scope, rows: Sequence[dict[str, Any]]) -> None:
        """Add history rows of a write of ``scope`` (any agent or run of the user) to the
        user's next batch."""
        with self._lock:
            self._due_of(scope).events.append((scope, list(rows)))
            self._start()

    def record_contexts(self, scope: Scope, grown: Sequence[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Add turns' grown contexts (turn id, index text, fields) to the user's next batch; a
        turn's later growth replaces its earlier (it extends it)."""
        with self._lock:
            due = self._due_of(scope)
            for fid, text, fields in grown:
                due.contexts[fid] = (text, dict(fields))
            self._start()

    def record_dense(self, scope: Scope, items: Sequence[tuple[str, str]]) -> None:
        """Add turns written without a dense vector (turn id, the text it is embedded as) to
        the user's next batch."""
        with self._lock:
            due = self._due_of(scope)
            for fid, text in items:
                due.dense[fid] = [text, None]
            self._start()

    def waiting_context(self, scope: Scope, fid: str) -> tuple[str, dict[str, Any]] | None:
        """The grown context of turn ``fid`` of ``scope``'s user still waiting, if any."""
        with self._lock:
            due = self._due.get(self._key(scope))
            return None if due is None else due.contexts.get(fid)

    def waiting_dense(self) -> int:
        """How many turns wait for their dense vector, of all users."""
        with self._lock:
            return sum(len(due.dense) for due in self._due.values())

    def _write_rest(self, due: _Due, computed_only: bool = False) -> None:
        """Write what of ``due`` is not concept counts or links: turns' vectors (with
        ``computed_only``, those the thread computed; the others keep waiting) and contexts,
        history rows."""
        if due.dense:
            ready = {f: row for f, row in due.dense.items() if row[1] is not None or not computed_only}
            if ready:
                self._vectors(ready)
            due.dense = {f: row for f, row in due.dense.items() if f not in ready}
        if due.contexts:
            self._contexts(due.contexts)
            due.contexts = {}  # written: a failure below does not write them twice
        if due.events:
            self._history(due.events)
            due.events = []

    def adopt(self, scope: Scope, jid: str) -> bool:
        """Keep the journal entry ``jid`` of a finished write of ``scope`` open until the
        user's waiting deltas are written (True), or not, when none wait or an earlier entry
        already covers them (False: the caller clears it)."""
        with self._lock:
            due = self._due.get(self._key(scope))
            if due is None or due.jid is not None:
                return False
            due.jid = jid
            self._wake.set()
            return True

    def covered(self, scope: Scope) -> bool:
        """Whether a journal entry of the user is open until its waiting deltas are written."""
        with self._lock:
            due = self._due.get(self._key(scope))
            return due is not None and due.jid is not None

    def flush(self, scope: Scope | None = None, *, computed_only: bool = False) -> None:
        """Write the waiting deltas of one user (or of everyone) now, and clear the journal
        entries that covered them. ``computed_only`` (the thread): turns whose vector is not
        computed yet keep waiting, with their journal entry, for the thread's next round."""
        with self._lock:
            keys = [self._key(scope)] if scope is not None else list(self._due)
            for key in keys:
                due = self._due.get(key)
                if due is None:
                    continue
                self._write_rest(due, computed_only)
                ts = max([r[1] for r in due.concepts.values() if r[1] is not None] + [0.0])
                counts: Counts = {c: (d, t) for c, (d, t) in due.concepts.items()}
                pairs: Pairs = {k: (d, 0.0, ts if t is None else t) for k, (d, t) in due.pairs.items() if d}
                if counts or pairs:
                    self._write(due.scope, counts, pairs, ts, due.chosen)
                del self._due[key]
                if due.dense:  # not computed yet: they wait, and so does the entry
                    kept = self._due[key] = _Due(due.scope)
                    kept.dense, kept.jid = due.dense, due.jid
                elif due.jid is not None:
                    if getattr(self._local, "scope", None) == due.scope:
                        # read in the middle of a write of this user that the entry covers:
                        # it stays open (empty) until that write's deltas are written too
                        kept = self._due[key] = _Due(due.scope)
                        kept.jid = due.jid
                    else:
                        self._end(due.jid)

    def discard(self, scope: Scope, *, forgetting: bool = False) -> None:
        """Drop the user's waiting deltas (its counts and links were just recomputed from its
        facts, or the user is being forgotten) and clear their journal entry. Its waiting
        turn vectors and contexts and history rows are written first, unless it is
        ``forgetting``."""
        with self._lock:
            due = self._due.pop(self._key(scope), None)
            if due is None:
                return
            if not forgetting:
                self._write_rest(due)
            if due.jid is not None:
                self._end(due.jid)

    def close(self) -> None:
        """Stop the thread and write what waits. Not to be called holding the lock (the thread
        is joined)."""
        with self._lock:
            self.stopped = True
            self._wake.set()
            self._stopping.set()
        # joined without the lock (the thread takes it): the caller must not hold it either
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)  # at most one chunk of names being embedded
        with self._lock:
            try:
                self.flush()
            finally:
                if self._at_exit is not None:  # this instance's handler only
                    atexit.unregister(self._at_exit)
                    self._at_exit = None

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="mem-pipeline-links", daemon=True)
            self._thread.start()
            if self._at_exit is None:
                self._at_exit = functools.partial(_close_at_exit, weakref.ref(self))
                atexit.register(self._at_exit)

    def _run(self) -> None:
        while not self.stopped:
            self._wake.wait()
            if self.stopped:
                return
            self._stopping.wait(self.delay)  # let a burst of writes gather into one batch
            if self.stopped:  # ``close`` writes what waits
                return
            try:
                self.embed_waiting()
                with self._lock:
                    self.flush(computed_only=True)
                    if not self._due:
                        self._wake.clear()
                if not self.stopped:
                    self._idle()
            except Exception:  # the journal entries stay open: recovery completes them
                log.exception("writing concept counts and links failed; retrying in %.1f s", self.delay)

    def embed_waiting(self, scope: Scope | None = None) -> None:
        """Compute the vectors of the turns (of one user, or everyone's) waiting for one,
        without the lock: an add or a search goes on beside it. The thread does it before each
        batch, and a search before it writes its user's batch under the lock. A turn whose
        batch was written meanwhile is left alone; one added meanwhile waits for the batch,
        which embeds it."""
        with self._lock:
            dues = list(self._due.values()) if scope is None else [self._due.get(self._key(scope))]
            todo = [
                (due, fid, row[0])
                for due in dues
                if due is not None
                for fid, row in due.dense.items()
                if row[1] is None
            ]
        # in small calls (``EMBED_CHUNK``)
        for start in range(0, len(todo), EMBED_CHUNK):
            chunk = todo[start : start + EMBED_CHUNK]
            vecs = self._embed([text for _, _, text in chunk])
            with self._lock:
                for (due, fid, text), vec in zip(chunk, vecs):
                    row = due.dense.get(fid)
                    if row is not None and row[0] == text:
                        row[1] = vec
            if self.stopped:
                return


def _close_at_exit(ref: weakref.ref[WriteBehind]) -> None:
    """At interpreter exit, write what still waits of a :class:`WriteBehind` never closed (else
    its journal entries make the next open recompute those users)."""
    behind = ref()
    if behind is not None and not behind.stopped:
        with contextlib.suppress(Exception):
            behind.close()
