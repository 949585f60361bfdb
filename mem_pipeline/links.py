"""The concept-link layer's state: each user's concept counts, co-occurrence links and name
vectors, kept in the store's ``concepts`` and ``links`` collections. The maths it applies
(strength, expansion, deltas) is in :mod:`mem_pipeline.concepts`.

What a search needs of it is read from the engine one question at a time, over payload indexes
(``store._concepts``): the concepts the query names (by name, else by their words' stems, else,
rarely, by the nearest name vector), the links of those concepts, the facts of a few concepts.
A user's followable links and the concepts of the user's current facts are each read whole, in
one engine call, on the first search that needs them, but only when they are few
(``WHOLE_LINKS``, ``WHOLE_FACTS``); a larger user's are read per concept as searches meet them.
So a user's first search after the store is opened costs a few small reads more than the next,
whatever the user's size. What was read is kept for the users searched most recently (a bounded
number of them) and kept in step by every write: a write marks the concepts whose links or facts
it changed, and those are read again per concept.

A new concept's name vector is only needed by that rare fallback, so a write stores the concept
without it and the vectors are computed later in batches: when enough names wait, before a
fallback match for their user, on close, and when the store is opened (which is how a crash
that left names without vectors is repaired). A concept an extractor or the caller chose is due
its vector at once; one only picked by rules from a raw turn's words (``text.phrases.
candidate_phrases``: up to eight a turn, "hey mel", "wow", "support group") is due it once
``min_count`` current facts carry it (``due_vector``), as a followable link needs. On LoCoMo
two in three picked names are said once, and embedding every one of them cost more than the
turn's own vector (about 3 ms a turn, in the background).

**Write-behind** (``_links_behind``). The counts and links a write changes are derived data (the facts are the
truth), and one turn with eight concepts changes 28 links. A write inside a journaled block
(``Parts.journaled``) therefore only records its deltas; a background thread writes each user's
gathered deltas in one batch ``delay`` seconds later (pairs that recur across turns are written
once). The block's journal entry stays open until its user's batch is written, so a process that
dies first leaves an unfinished write that recovery (on open, for embedded stores) completes by
recomputing the user's counts and links from its facts. Every read of a user's counts or links
writes that user's waiting deltas first, so what a search sees does not depend on timing; only
another process (a shared server) sees them up to ``delay`` seconds late. ``close`` writes what
waits. ``delay=0`` writes them with the fact, as before.

Two other records of a write wait in the same batch, since both are derived too: its history
rows (``Parts.record_history``; ``Memory.history`` writes the user's first) and the context a
new turn lends the turns before it (:meth:`ConceptLinks.contexts`; a search writes the user's
first, an add reading those turns from the engine sees the waiting ones, and a delete or update
writes them first). Recovery adds the history its facts imply and lends the latest turns what
the turns after them did not (``write.turns.missing_contexts``).

A new turn's dense vector waits too (:meth:`ConceptLinks.dense`): the turn is written at once,
text, payload and lexical vector, and the background thread embeds the waiting turns, one a
call, before it takes the lock, so an ``add`` of a raw turn returns without the model's ~7 ms,
and a chatbot's next add or search goes on while it runs. A read that writes the batch
first (a search) computes what the thread has not. Only for an embedder that runs in this
process (``in_process``): a remote one's errors must reach the ``add`` that caused them.
Recovery embeds the turns a process left without a vector.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any

from ._links_behind import Contexts, Counts, Dense, Pairs, Rows, WriteBehind
from .concepts import followable, name_key, pair_deltas, pair_key, point_id, query_grams, strength_of
from .models import Scope
from .store import NO_VECTOR_YET, PICKED

__all__ = ["ConceptLinks", "LinkView"]

log = logging.getLogger(__name__)

#: At most this many turns wait for the write-behind to embed them; past it an add embeds its
#: own turns (a bulk load one call at a time outruns the thread)
DENSE_BACKLOG = 32


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


#: the most query n-grams known not to be concepts that are kept per user
_MAX_ABSENT = 20_000

#: a link as the read path scores it: (a, b, count, feedback, last seen)
_Link = tuple[str, str, float, float, float]

#: A user's followable links are read all at once, on the first search that needs any, when
#: they are at most this many (LoCoMo's conversations have 357-743, read in 2.5-5.6 ms here);
#: more, and they are read per concept, as each search meets them.
WHOLE_LINKS = 1024

#: A user's current facts' concepts are read all at once, on the first search that follows
#: links, when the user has at most this many current facts; more, and each concept's facts
#: are read as a search meets it.
WHOLE_FACTS = 1024

#: A fallback match embeds at most this many of the user's picked names said only once, the
#: latest said (a chat's store has fewer; a LoCoMo conversation has 800-1,400, 0.4-0.8 s
#: to embed, whose turns the text search finds anyway)
FALLBACK_PICKED = 256

#: the ``facts`` entry of a concept read whole: every current fact that carries it
_ALL = sys.maxsize
_NO_FACTS: tuple[int, list[str]] = (_ALL, [])


class _User:
    """What this process has read of one user's concept layer."""

    __slots__ = (
        "absent",
        "any",
        "counts",
        "facts",
        "facts_stale",
        "facts_whole",
        "links",
        "links_stale",
        "links_whole",
        "vectors_checked",
    )

    def __init__(self) -> None:
        self.counts: dict[str, float] = {}  # concept -> count of current facts
        self.absent: set[str] = set()  # names known not to be concepts
        self.any: bool | None = None  # whether the user has any concept
        self.links: dict[str, _Fan] = {}  # concept -> its links that may be followed
        # whether ``links`` holds every followable link of the user (None: not read yet; False:
        # more than WHOLE_LINKS, read per concept); while it does, a concept not in ``links`` has
        # none, unless a write changed its links since (``links_stale``: read again per concept)
        self.links_whole: bool | None = None
        self.links_stale: set[str] = set()
        self.facts: dict[str, tuple[int, list[str]]] = {}  # concept -> (limit, first fact ids)
        # the same for ``facts``: every current fact's concepts read at once (WHOLE_FACTS)
        self.facts_whole: bool | None = None
        self.facts_stale: set[str] = set()
        self.vectors_checked = False  # every name of the user has its vector (for a fallback)


class ConceptLinks:
    """Concept counts and links of each user, kept in the store's ``concepts`` and ``links``
    collections (see :mod:`mem_pipeline.store`). Scoped per (tenant, user_id): links never
    cross users or tenants; ``forget`` deletes them with the user's facts.

    ``cache_users``: how many users' lookups are kept (least recently searched leave first).
    ``vector_batch``: how many concept names wait before their vectors are computed (a name
    waits once ``min_count`` current facts carry it: :meth:`due_vector`).
    ``delay``: seconds a journaled write's count and pair deltas wait to be written with others
    (0: written with the fact; see the module docstring). ``lock``: the lock that serialises
    the store's reads and writes (the background writer takes it too).
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
        cache_users: int = 256,
        vector_batch: int = 64,
        delay: float = 0.0,
        lock: threading.RLock | None = None,
    ) -> None:
        self.store = store
        self.embed = embed
        self.half_life_days = half_life_days
        self.floor = floor
        self.min_count = min_count
        self.match_threshold = match_threshold
        self.cache_users = max(1, cache_users)
        self.vector_batch = max(1, vector_batch)
        self._users: OrderedDict[tuple[str, str], _User] = OrderedDict()
        self._waiting = 0  # names written without a vector since the last batch
        self._lock = lock if lock is not None else threading.RLock()
        self._behind = WriteBehind(
            delay=delay,
            lock=self._lock,
            write=self._write_batch,
            history=self._write_history,
            contexts=self._write_contexts,
            vectors=self._write_dense,
            embed=embed.embed,
            end=store.end,
            idle=self._after_batch,
        )

    @staticmethod
    def _cid(scope: Scope, name: str) -> str:
        return point_id("c", scope.tenant, scope.user_id, name)

    @staticmethod
    def _lid(scope: Scope, a: str, b: str) -> str:
        return point_id("l", scope.tenant, scope.user_id, a, b)

    def due_vector(self, count: int, vec: Any) -> bool:
        """Whether a concept carried by ``count`` current facts, whose stored ``vec`` marker is
        this, is due a name vector it lacks: one written without it (``NO_VECTOR_YET``), or one
        picked from a raw turn's words (``PICKED``) that ``min_count`` facts carry. A concept
        written before the marker existed has its vector."""
        return vec == NO_VECTOR_YET or (vec == PICKED and count >= self.min_count)

    @staticmethod
    def _ukey(scope: Scope) -> tuple[str, str]:
        return (scope.tenant, scope.user_id)

    def _user(self, scope: Scope, create: bool = True) -> _User | None:
        key = self._ukey(scope)
        u = self._users.get(key)
        if u is not None:
            self._users.move_to_end(key)
            return u
        if not create:
            return None
        u = self._users[key] = _User()
        while len(self._users) > self.cache_users:
            self._users.popitem(last=False)
        return u

    # -- writes ---------------------------------------------------------------------------------
    def update(
        self,
        scope: Scope,
        before: Sequence[str],
        after: Sequence[str],
        when: datetime,
        *,
        fact_id: str | None = None,
        picked: bool = False,
    ) -> None:
        """A fact's concepts changed from ``before`` to ``after`` (``[]`` -> added, -> ``[]``
        deleted): adjust concept counts and pair co-occurrence counts, now or (inside a
        journaled write, with a ``delay``) in the user's next batch. New concepts are written
        without their name vector (see the module docstring); ``picked``: the concepts were
        picked by rules from a raw turn's words, not chosen (their vectors wait longer)."""
        with self._lock:
            u = self._user(scope, create=False)
            if u is not None:
                changed = set(before) ^ set(after)
                for c in changed:
                    u.facts.pop(c, None)
                if u.facts_whole:
                    u.facts_stale |= changed
                    if len(u.facts_stale) > WHOLE_FACTS:  # many changed since: read them whole again
                        u.facts_whole = None
            pairs, concepts = pair_deltas(before, after)
            if not pairs and not concepts:
                return
            ts = when.timestamp()
            chosen = frozenset() if picked else frozenset(c for c, d in concepts.items() if d > 0)
            if self._behind.active(scope):
                self._behind.record(scope, concepts, pairs, ts, chosen)
                return
            if concepts:
                deltas = {c: (float(d), ts if d > 0 else None) for c, d in concepts.items()}
                self._count(scope, u, deltas, ts, chosen)
            if pairs:
                self._bump_pairs(scope, {k: (float(d), 0.0, ts) for k, d in pairs.items()}, ts)
            if self._waiting >= self.vector_batch:
                self.embed_names()

    def history(self, scope: Scope, rows: Sequence[dict[str, Any]]) -> None:
        """Write the history rows of a write of ``scope``: inside a journaled write (with a
        ``delay``) with the user's next batch, else now."""
        if not rows:
            return
        with self._lock:
            if self._behind.active_user(scope):
                self._behind.record_events(scope, rows)
            else:
                self.store.add_events(scope, rows)

    def contexts(self, scope: Scope, grown: Sequence[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Write the context new turns lend the turns before them (``write.turns.place_turn``):
        inside a journaled write (with a ``delay``) with the user's next batch, else now."""
        if not grown:
            return
        with self._lock:
            if self._behind.active_user(scope):
                self._behind.record_contexts(scope, grown)
            else:
                self.store.set_lexicals(grown)

    def defers_dense(self, turns: int) -> bool:
        """Whether a journaled write's ``turns`` new turns are embedded by the write-behind
        (:meth:`dense`) rather than before they are written: it is on, and with them at most
        :data:`DENSE_BACKLOG` turns wait (adds faster than the thread embeds, and an add of
        many turns, embed their own, in batches)."""
        return self._behind.enabled() and self._behind.waiting_dense() + turns <= DENSE_BACKLOG

    def dense(self, scope: Scope, items: Sequence[tuple[str, str]]) -> None:
        """Give turns written without a dense vector theirs: (turn id, the text it is embedded
        as). Inside a journaled write (with a ``delay``) with the user's next batch, which the
        background thread embeds before it takes the lock; else now."""
        if not items:
            return
        with self._lock:
            if self._behind.active_user(scope):
                self._behind.record_dense(scope, items)
            else:
                self._write_dense({fid: [text, None] for fid, text in items})

    def embed_waiting(self, scope: Scope) -> None:
        """Compute the vectors of the user's turns that wait for one, without the store's lock
        (a search does, before it writes the user's batch under the lock)."""
        self._behind.embed_waiting(scope)

    def settled(self) -> bool:
        """Whether the write-behind has nothing waiting (for benchmarks that must not let its
        background work fall into another system's timed calls)."""
        return self._behind.settled()

    def waiting_context(self, scope: Scope, fid: str) -> tuple[str, dict[str, Any]] | None:
        """The grown context (index text, fields) of turn ``fid`` that still waits, if any."""
        return self._behind.waiting_context(scope, fid)

    def _write_contexts(self, grown: Contexts) -> None:
        # the turns still stored (a delete is preceded by a flush; this is the safety net); the
        # latest turns an add keeps in memory already hold these contexts and stay current
        self.store.set_lexicals([(fid, text, fields) for fid, (text, fields) in grown.items()], batched=True)

    def _write_dense(self, dense: Dense) -> None:
        for row in dense.values():  # a read writes the batch before the thread computed them
            if row[1] is None:  # one a call, as the thread does and an add of one turn did
                row[1] = self.embed.embed([row[0]])[0]
        self.store.set_dense([(fid, vec) for fid, (_, vec) in dense.items()])

    def _write_history(self, rows: Rows) -> None:
        by_scope: dict[Scope, list[dict[str, Any]]] = {}
        for scope, some in rows:
            by_scope.setdefault(scope, []).extend(some)
        for scope, some in by_scope.items():
            self.store.add_events(scope, some)

    # -- write-behind (``_links_behind``) --------------------------------------------------------
    def deferring(self, scope: Scope) -> contextlib.AbstractContextManager[None]:
        """Within this block (a journaled write of ``scope``, in this thread), :meth:`update`
        records its deltas for the user's next batch; :meth:`adopt` then hands the batch the
        block's journal entry."""
        return self._behind.deferring(scope)

    def adopt(self, scope: Scope, jid: str) -> bool:
        """Keep the journal entry ``jid`` of a finished write of ``scope`` open until the
        user's waiting deltas are written (True), or not (False: the caller clears it)."""
        return self._behind.adopt(scope, jid)

    def covered(self, scope: Scope) -> bool:
        """Whether a journal entry of the user is open until its waiting deltas are written."""
        return self._behind.covered(scope)

    def flush(self, scope: Scope | None = None) -> None:
        """Write the waiting deltas of one user (or of everyone) now, and clear the journal
        entries that covered them."""
        self._behind.flush(scope)

    def settle(self) -> None:
        """Do now, in the caller's thread, all that the background writer would do next: write
        what waits of every user (computing the waiting turns' vectors) and the name vectors
        that are due. ``eval.compare_mem0`` times it after each add, so that an add is billed
        with the work it leaves behind."""
        self.flush()
        self._after_batch()

    def discard(self, scope: Scope, *, forgetting: bool = False) -> None:
        """Drop the user's waiting deltas (its counts and links were just recomputed from its
        facts, or the user is being forgotten) and clear their journal entry; its waiting turn
        contexts and history rows are written first, unless it is ``forgetting``."""
        self._behind.discard(scope, forgetting=forgetting)

    def close(self) -> None:
        """Stop the background writer and write what waits. Not to be called holding the
        store's lock (the writer is joined)."""
        self._behind.close()

    def _write_batch(
        self, scope: Scope, counts: Counts, pairs: Pairs, ts: float, chosen: AbstractSet[str]
    ) -> None:
        if counts:
            self._count(scope, self._user(scope, create=False), counts, ts, chosen)
        if pairs:
            self._bump_pairs(scope, pairs, ts)

    def _after_batch(self) -> None:
        with self._lock:
            names = self._waiting >= self.vector_batch
        if names and not self._behind.stopped:  # the embedding itself runs unlocked
            self.embed_names()

    def _count(
        self,
        scope: Scope,
        u: _User | None,
        concepts: Mapping[str, tuple[float, float | None]],
        ts: float,
        chosen: AbstractSet[str] = frozenset(),
    ) -> None:
        """Apply concept count deltas: name -> (delta, latest time it was added, or None).
        ``chosen``: those an extractor or the caller chose; the others new here were picked
        from a raw turn's words (``PICKED``: their name vectors wait for ``min_count`` facts)."""
        ids = {name: self._cid(scope, name) for name in concepts}
        have = self.store.get_points(self.store.concepts, list(ids.values()), scope)
        new = [n for n, (d, _) in concepts.items() if d > 0 and ids[n] not in have]
        marks = {n: NO_VECTOR_YET if n in chosen else PICKED for n in new}
        self.store.put_points(
            self.store.concepts,
            scope,
            [
                (
                    ids[n],
                    {
                        "name": n,
                        "count": int(concepts[n][0]),
                        "last_ts": concepts[n][1] or ts,
                        "key": name_key(n),
                        "vec": marks[n],
                    },
                    None,
                )
                for n in new
            ],
        )
        self._waiting += sum(1 for n in new if self.due_vector(int(concepts[n][0]), marks[n]))
        if u is not None and PICKED in marks.values():
            u.vectors_checked = False  # a fallback match embeds these picked names first
        updates, gone = [], []
        counts: dict[str, float] = {n: float(concepts[n][0]) for n in new}
        for n, (d, added) in concepts.items():
            p = have.get(ids[n])
            if p is None:
                continue
            count = int(p.get("count", 0)) + int(d)
            if count <= 0:
                gone.append(ids[n])
                counts[n] = 0.0
            else:
                last = p.get("last_ts", ts)
                if added is not None:
                    last = max(added, last)
                was, vec = p.get("vec"), p.get("vec")
                if vec == PICKED and n in chosen:  # chosen now: its vector is due at once
                    vec = NO_VECTOR_YET
                fields: dict[str, Any] = {"count": count, "last_ts": last}
                if vec != was:
                    fields["vec"] = vec
                if count != int(p.get("count", 0)) or last != p.get("last_ts") or vec != was:
                    updates.append((ids[n], fields))
                if self.due_vector(count, vec) and not self.due_vector(int(p.get("count", 0)), was):
                    self._waiting += 1  # due its name vector now
                counts[n] = float(count)
        self.store.set_points(self.store.concepts, updates)
        self.store.delete_points(self.store.concepts, gone)
        if u is not None:  # keep what this process read of the user in step
            for n, c in counts.items():
                if c > 0:
                    u.counts[n] = c
                    u.absent.discard(n)
                else:
                    u.counts.pop(n, None)
                    u.absent.add(n)
            if new:
                u.any = True
            elif gone:
                u.any = None

    def _bump_pairs(
        self, scope: Scope, deltas: Mapping[tuple[str, str], tuple[float, float, float]], ts: float
    ) -> None:
        """Apply link deltas: pair -> (count delta, feedback delta, time of the change)."""
        ids = {k: self._lid(scope, *k) for k in deltas}
        have = self.store.get_points(self.store.links, list(ids.values()), scope)
        puts: list[tuple[str, dict[str, Any], None]] = []
        gone: list[str] = []
        for (a, b), (dc, dfb, ts) in deltas.items():
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
        u = self._user(scope, create=False)
        if u is not None:  # the links of both ends are read again when next needed
            for a, b in deltas:
                u.links.pop(a, None)
                u.links.pop(b, None)
            if u.links_whole:
                u.links_stale.update(c for pair in deltas for c in pair)
                if len(u.links_stale) > WHOLE_LINKS:  # many changed since: read them whole again
                    u.links_whole = None

    def embed_names(
        self, scope: Scope | None = None, *, picked_at: int | None = None, picked_most: int | None = None
    ) -> int:
        """Compute the name vectors due (of one user, or everyone's: ``due_vector``; with
        ``picked_at``, those of picked concepts that many facts carry too, at most
        ``picked_most`` of them that are not due, the latest said), in batches; returns how many
        were computed. The embedding runs without the store's lock (unless the caller holds
        it): reads and writes go on beside it."""
        with self._lock:
            self.flush(scope)  # everyone's, for scope None
            if scope is None:
                self._waiting = 0
            at = self.min_count if picked_at is None else picked_at
            todo = self.store.unembedded_concepts(scope, picked_at=at)
            if picked_most is not None:
                due: list[tuple[str, dict[str, Any]]] = []
                early: list[tuple[str, dict[str, Any]]] = []
                for t in todo:
                    (due if self.due_vector(int(t[1].get("count", 0)), t[1].get("vec")) else early).append(t)
                early.sort(key=lambda t: -float(t[1].get("last_ts", 0.0)))
                todo = due + early[:picked_most]
        background = self._behind.in_writer()
        for i in range(0, len(todo), 256):
            if background and self._behind.stopped:  # closing: the closer computes what is left
                break
            chunk = todo[i : i + 256]
            vecs = self.embed.embed([str(p["name"]) for _, p in chunk])
            with self._lock:
                if background and self._behind.stopped:
                    break
                self.store.set_concept_vectors([(cid, v) for (cid, _), v in zip(chunk, vecs)])
        return len(todo)

    def invalidate(self, scope: Scope | None = None) -> None:
        """Drop what this process read of one user's concept layer (or of all users)."""
        with self._lock:
            if scope is None:
                self._users.clear()
            else:
                self._users.pop(self._ukey(scope), None)

    def rebuild(self, scope: Scope, facts: Sequence[Any]) -> None:
        """Set the user's concept and pair counts to what its valid ``facts`` imply (recovery
        after an interrupted write). Feedback on links is kept: it is not derived from facts."""
        counts: dict[str, int] = {}
        pairs: dict[tuple[str, str], int] = {}
        last: dict[str, float] = {}
        chosen: set[str] = set()  # a raw turn's concepts count as picked (the caller's too, here)
        for f in facts:
            cs = sorted(set(f.concepts))
            ts = f.last_seen_at.timestamp()
            if f.kind != "turn":
                chosen.update(cs)
            for c in cs:
                counts[c] = counts.get(c, 0) + 1
                last[c] = max(ts, last.get(c, ts))
            for k in combinations(cs, 2):
                pairs[k] = pairs.get(k, 0) + 1
        with self._lock:
            self.discard(scope)  # the facts include what the waiting deltas describe
            have = self.store.user_points(self.store.concepts, scope)
            ids = {self._cid(scope, n): n for n in counts}
            new = [n for i, n in ids.items() if i not in have]
            marks = {n: NO_VECTOR_YET if n in chosen else PICKED for n in new}
            self.store.put_points(
                self.store.concepts,
                scope,
                [
                    (
                        self._cid(scope, n),
                        {
                            "name": n,
                            "count": counts[n],
                            "last_ts": last[n],
                            "key": name_key(n),
                            "vec": marks[n],
                        },
                        None,
                    )
                    for n in new
                ],
            )
            self._waiting += sum(1 for n in new if self.due_vector(counts[n], marks[n]))
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
        ts = when.timestamp()
        deltas = {
            pair_key(a, b): (0.0, 0.5 * amount, ts) for a in set(sources) for b in set(targets) if a != b
        }
        if deltas:
            with self._lock:
                self.flush(scope)
                self._bump_pairs(scope, deltas, ts)
        return len(deltas)

    # -- reads ----------------------------------------------------------------------------------
    def match_query(self, scope: Scope, query: str) -> dict[str, float]:
        """The scope's known concepts the query names: exactly or by their words' stems
        (weight 1), or by name embedding (weight = cosine, at or above ``match_threshold``)."""
        found, rest = self.query_terms(scope, query)
        return self.name_matches(scope, found, self.embed.embed(rest) if rest else None)

    def query_terms(self, scope: Scope, query: str) -> tuple[dict[str, float], list[str]]:
        """The first half of :meth:`match_query`: the concepts the query names, and the n-grams
        left to match by name embedding (embedding them is the costly half, so a caller may run
        it beside other work and pass the vectors to :meth:`name_matches`).

        A query that names concepts exactly is anchored by them; else one whose words name a
        concept in another form ("pottery classes", "hiking" for "pottery class", "hike", by
        :func:`~mem_pipeline.concepts.name_key`); only a query that names none by its words
        ("my pup" for "puppy") is left to embedding (3 of 385 LoCoMo questions)."""
        grams = query_grams(query)
        if not grams:
            return {}, []
        with self._lock:
            self.flush(scope)
            counts = self._counts(scope, grams)
            found = {g: 1.0 for g in grams if g in counts}
            if found:
                return found, []
            u = self._user(scope)
            assert u is not None
            if u.any is False:
                return {}, []
            keys = {name_key(g) for g in grams} - {""}
            by_key = self.store.concepts_by_key(scope, sorted(keys))
            for name, p in by_key.items():
                u.counts[name] = float(p.get("count", 0))
                u.absent.discard(name)
            if by_key:
                u.any = True
                return {name: 1.0 for name in by_key}, []
            if u.any is None:
                u.any = self.store.has_concepts(scope)
            rest = [g for g in grams if g.count(" ") < 2][:10]
            return {}, (rest if u.any else [])

    def name_matches(self, scope: Scope, found: dict[str, float], vectors: Any) -> dict[str, float]:
        """Add to ``found`` the concept each n-gram vector is closest to, at or above the
        threshold (cosine: both sides are L2-normalised), by the engine over the user's name
        vectors (those still to be computed are computed first, with the latest
        :data:`FALLBACK_PICKED` picked names said once, which no batch embeds until a second
        turn says them; later fallbacks embed those written since)."""
        if vectors is None or not len(vectors):
            return found
        with self._lock:
            self.flush(scope)
            u = self._user(scope)
            assert u is not None
            if not u.vectors_checked:
                self.embed_names(scope, picked_at=1, picked_most=FALLBACK_PICKED)
                u.vectors_checked = True
            for best in self.store.nearest_concepts(scope, list(vectors), self.match_threshold):
                if best is not None:
                    name, score = best
                    found[name] = max(found.get(name, 0.0), score)
        return found

    def _counts(self, scope: Scope, names: Sequence[str]) -> dict[str, float]:
        """The fact counts of those of ``names`` that are concepts of the user: for a user whose
        current facts' concepts are read whole (``_read_facts``), how many of them carry it (a
        concept's count is the number of current facts that carry it; none carry a name that is
        no concept); else, and for a concept a write changed since, read from the store once
        per process, by id."""
        u = self._user(scope)
        assert u is not None
        if u.facts_whole is None:
            self._read_facts(scope, u)
        unknown = [n for n in dict.fromkeys(names) if n not in u.counts and n not in u.absent]
        if unknown and u.facts_whole:
            left = []
            for n in unknown:
                got = u.facts.get(n)
                if n in u.facts_stale or (got is not None and got[0] != _ALL):
                    left.append(n)  # changed since the whole read: its count is the store's
                elif got is None:
                    u.absent.add(n)
                else:
                    u.counts[n] = float(len(got[1]))
                    u.any = True
            unknown = left
        if unknown:
            ids = {self._cid(scope, n): n for n in unknown}
            got = self.store.get_points(self.store.concepts, list(ids), scope)
            if len(u.absent) > _MAX_ABSENT:
                u.absent.clear()
            for cid, n in ids.items():
                if cid in got:
                    u.counts[n] = float(got[cid].get("count", 0))
                    u.any = True
                else:
                    u.absent.add(n)
        return {n: u.counts[n] for n in names if n in u.counts}

    def specificity(self, scope: Scope, concepts: Sequence[str]) -> dict[str, float]:
        """``1 / (1 + ln n)`` for a concept on ``n`` facts: 1 for a rare concept, 0.18 for one on
        100 facts. A concept on many facts (a speaker's name, "work") says little about which
        fact a query wants."""
        with self._lock:
            self.flush(scope)
            counts = self._counts(scope, concepts)
        return {c: 1.0 / (1.0 + math.log(max(1.0, counts.get(c, 1.0)))) for c in concepts}

    def fact_ids(self, scope: Scope, concepts: Sequence[str], limit: int) -> list[str]:
        """Ids of the user's current facts carrying these concepts (in the concepts' order; a
        concept's facts in id order), at most ``limit``."""
        out: list[str] = []
        with self._lock:
            u = self._user(scope)
            assert u is not None
            if u.facts_whole is None:
                self._read_facts(scope, u)
            for c in concepts:
                got = u.facts.get(c)
                if got is None and u.facts_whole and c not in u.facts_stale:
                    got = _NO_FACTS  # read whole: no current fact carries it
                if got is None or got[0] < limit:
                    got = u.facts[c] = (limit, self.store.concept_fact_ids(scope, c, limit))
                    u.facts_stale.discard(c)
                for fid in got[1]:
                    if fid not in out:
                        out.append(fid)
                    if len(out) >= limit:
                        return out
        return out

    def _read_facts(self, scope: Scope, u: _User) -> None:
        """Read which concepts each of the user's current facts carries, at once, when they are
        few (at most :data:`WHOLE_FACTS`): as :meth:`_read_links` does for links."""
        got = self.store.facts_concepts(scope, WHOLE_FACTS)
        u.facts_whole = got is not None
        if got is None:
            return
        by_concept: dict[str, list[str]] = {}
        for fid, concepts in sorted(got.items()):
            for c in dict.fromkeys(concepts):
                by_concept.setdefault(c, []).append(fid)
        u.facts = {c: (_ALL, ids) for c, ids in by_concept.items()}
        u.facts_stale.clear()

    def describe(self, scope: Scope, now: datetime) -> tuple[dict[str, float], list[LinkView]]:
        """The user's concepts (name -> count of current facts) and every link between them, as
        strength, feedback and followability stand at ``now``, strongest first: what a person
        looks at (the memory browser draws it). Read-only; reads the user's concept layer whole
        (the read path never does)."""
        with self._lock:
            self.flush(scope)
            counts, links = self.store.concept_layer(scope)
        out = []
        for p in links:
            a, b = str(p["a"]), str(p["b"])
            last = float(p.get("last_ts", 0.0))
            n_ab, fb = float(p.get("count", 0.0)), float(p.get("fb", 0.0))
            age = max(0.0, (now.timestamp() - last) / 86_400.0)
            s = strength_of(n_ab, counts.get(a, 0.0), counts.get(b, 0.0), age, fb, self.half_life_days)
            out.append(
                LinkView(
                    a=a,
                    b=b,
                    count=n_ab,
                    feedback=fb,
                    strength=s,
                    followable=followable(n_ab, fb, s, floor=self.floor, min_count=self.min_count),
                    last_seen=datetime.fromtimestamp(last, tz=now.tzinfo),
                )
            )
        out.sort(key=lambda v: (-v.strength, v.a, v.b))
        return counts, out

    def _read_links(self, scope: Scope, u: _User) -> None:
        """Read all the user's followable links at once when they are few (at most
        :data:`WHOLE_LINKS`): the user's later searches then read no links, where reading them
        per concept cost each search an engine call for the concepts it met first."""
        got = self.store.followable_links(scope, self.min_count, WHOLE_LINKS)
        u.links_whole = got is not None
        if got is None:
            return
        u.links = {c: _Fan.of(c, rows, self.min_count) for c, rows in _by_end(got).items()}
        u.links_stale.clear()

    def neighbours(
        self, scope: Scope, concepts: Sequence[str], now: datetime
    ) -> dict[str, list[tuple[str, float]]]:
        """For each of ``concepts``, the concepts its followable links lead to, with the
        links' strength.

        A link whose strength could not reach the floor even undecayed is passed over without
        being scored: most of a common concept's links are (nine in ten on LoCoMo). The others
        are scored by ``strength_of``."""
        with self._lock:
            self.flush(scope)
            u = self._user(scope)
            assert u is not None
            wanted = list(dict.fromkeys(concepts))
            if u.links_whole is None:
                self._read_links(scope, u)
            missing = [c for c in wanted if c not in u.links and (not u.links_whole or c in u.links_stale)]
            if missing:
                fetched = _by_end(self.store.links_of(scope, missing, self.min_count), missing)
                u.links.update({c: _Fan.of(c, rows, self.min_count) for c, rows in fetched.items()})
                u.links_stale.difference_update(missing)
            fans = [(c, fan) for c in wanted if (fan := u.links.get(c)) is not None and fan.rows]
            unread = [c for c, fan in fans if not fan.counted]
            if unread:  # the fact counts of both ends, read once per process
                fresh = dict(fans)
                self._counts(scope, [n for c in unread for n in (c, *(row[0] for row in fresh[c].rows))])
                for c in unread:
                    fresh[c].counted = True
            counts = u.counts  # scored under the lock, as writes change them
            out: dict[str, list[tuple[str, float]]] = {}
            at = now.timestamp()
            floor, sqrt = self.floor - 1e-9, math.sqrt
            for c, fan in fans:
                n_a = counts.get(c, 0.0)
                for other, n_ab, fb, last_ts, lift in fan.rows:
                    n_b = counts.get(other, 0.0)
                    prod = n_a * n_b
                    if prod > 0 and lift < floor:  # undecayed, it could not reach the floor: skip
                        ochiai = n_ab / sqrt(prod)
                        if (ochiai if ochiai < 1.0 else 1.0) + lift < floor:
                            continue
                    age = max(0.0, (at - last_ts) / 86_400.0)
                    s = strength_of(n_ab, n_a, n_b, age, fb, self.half_life_days)
                    if followable(n_ab, fb, s, floor=self.floor, min_count=self.min_count):
                        out.setdefault(c, []).append((other, s))
        return out


def _by_end(payloads: Sequence[dict[str, Any]], only: Sequence[str] | None = None) -> dict[str, list[_Link]]:
    """The links read (their payloads) as rows under each of their two ends; with ``only``,
    under those ends alone, each of them present even with no link."""
    out: dict[str, list[_Link]] = {c: [] for c in only} if only is not None else {}
    for p in payloads:
        row = (
            str(p["a"]),
            str(p["b"]),
            float(p.get("count", 0.0)),
            float(p.get("fb", 0.0)),
            float(p.get("last_ts", 0.0)),
        )
        for end in {row[0], row[1]}:
            if only is None:
                out.setdefault(end, []).append(row)
            elif end in out:
                out[end].append(row)
    return out


@dataclass
class _Fan:
    """One concept's links that may be followed (seen ``min_count`` times, or vouched for by
    feedback), as the read path scores them: per link the other end, the pair's count,
    feedback and last time, and what the feedback adds to the strength."""

    rows: list[tuple[str, float, float, float, float]]
    counted: bool = False  # the ends' fact counts were read

    @classmethod
    def of(cls, concept: str, links: Sequence[_Link], min_count: int) -> _Fan:
        return cls(
            [
                (b if a == concept else a, n_ab, fb, last, 0.5 * max(-1.0, min(1.0, fb)))
                for a, b, n_ab, fb, last in links
                if n_ab >= min_count or fb > 0
            ]
        )
