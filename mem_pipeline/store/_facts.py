"""Facts: writing facts and their vectors, the lexical index of a turn and its rebuilds, reading
facts back (by id, by scope, a page at a time), and the dense + lexical search."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import models

from ..errors import EmbedderMismatchError
from ..models import Scope, StoredFact
from ..text import lexical
from ..text.lexical import sparse_doc
from ._briefs import BRIEF_SELECTOR, brief_of, touches
from ._collections import VALID, StoreBase, in_scope, metadata_conditions, scope_filter, scoped, user_filter
from ._payload import (
    HIT_PAYLOAD,
    TURN_LINKS_VERSION,
    Candidate,
    VectorLike,
    fact_to_payload,
    payload_to_fact,
    repeat_key,
)

__all__ = ["FactStore"]


class FactStore(StoreBase):
    """Facts and raw turns in the ``facts`` collection."""

    def upsert_facts(
        self,
        items: Sequence[tuple[StoredFact, VectorLike | None, str, str]],
    ) -> None:
        """Write facts: (fact, dense vector of ``embed_text``, ``embed_text``, ``index_text``).

        The sparse (lexical) vector is built here from ``index_text``. A dense vector of None
        writes the point without one, to be given it by :meth:`set_dense` (a turn whose
        embedding waits for the write-behind).
        """
        points = []
        briefs = {}
        for fact, dense, embed_text, index_text in items:
            idx, vals = sparse_doc(index_text)
            vec: dict[str, Any] = {}
            if dense is not None:
                vec["dense"] = self._dense(dense)
            if idx:
                vec["lexical"] = models.SparseVector(indices=idx, values=vals)
            payload = fact_to_payload(fact, embed_text, index_text)
            points.append(models.PointStruct(id=fact.id, vector=vec, payload=payload))
            briefs[fact.id] = brief_of(payload)
        if points:
            for who in {(f.scope.tenant, f.scope.user_id) for f, _, _, _ in items}:
                self._written(*who)
            self.briefs.drop(briefs)
            with self._translate("writing facts"):
                self.client.upsert(self.facts, points=points, wait=True)
            self.briefs.put_many(briefs)

    def _dense(self, dense: VectorLike) -> list[float]:
        if len(dense) != self.dimensions:
            raise EmbedderMismatchError(f"vector of {len(dense)} dims for a collection of {self.dimensions}")
        out: list[float] = np.asarray(dense, dtype=np.float32).tolist()
        return out

    def set_dense(self, items: Sequence[tuple[str, VectorLike]]) -> None:
        """Give points written without a dense vector theirs: (id, vector). Those deleted
        since are skipped; the latest turns an add kept in memory (:meth:`keep_recent`) hold
        no vectors and stay current."""
        there = self._present([fid for fid, _ in items])
        points = [
            models.PointVectors(id=fid, vector={"dense": self._dense(v)}) for fid, v in items if fid in there
        ]
        if points:
            with self._keeping_recent(), self._translate("writing vectors"):
                self.client.update_vectors(self.facts, points=points, wait=True)

    def _present(self, ids: Sequence[str]) -> set[str]:
        """Which of these facts are still stored."""
        if not ids:
            return set()
        with self._translate("reading facts"):
            return {str(r.id) for r in self.client.retrieve(self.facts, ids=list(ids), with_payload=False)}

    @contextlib.contextmanager
    def _keeping_recent(self) -> Iterator[None]:
        """Around a write of derived data that the latest turns an add kept in memory
        (:meth:`keep_recent`) already hold: the views current before it stay current."""
        before = self._facts_writes()
        current = [k for k, (at, _, _) in self._recent.items() if at == before]
        yield
        after = self._facts_writes()
        if after is not None:
            for k in current:
                _, depth, rows = self._recent[k]
                self._recent[k] = (after, depth, rows)

    def without_dense(self, scope: Scope) -> list[tuple[str, str]]:
        """The points of one user (all agents and runs) that have no dense vector yet, each
        as (id, the text it is embedded as): a process that ended before its write-behind
        embedded them leaves them so."""
        flt = user_filter(scope)
        flt.must_not = [models.HasVectorCondition(has_vector="dense")]
        sel = models.PayloadSelectorInclude(include=["text", "embed_text"])
        return [
            (str(r.id), str((r.payload or {}).get("embed_text") or (r.payload or {}).get("text", "")))
            for r in self._scroll(self.facts, flt, payload=sel)
        ]

    def recent_raw(self, scope: Scope, session: Any, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` raw turns of this scope (and session, when given), newest first.

        On an embedded store (this process is its only writer), what the last add kept with
        :meth:`keep_recent` is returned while no write to the facts collection came after it:
        a chatbot adds the turns of a session one call at a time, and each call would read the
        turns the one before it wrote."""
        kept = self._kept_recent(scope, session, limit)
        if kept is not None:
            return kept
        conds: list[models.Condition] = [
            models.FieldCondition(key="origin", match=models.MatchValue(value="raw")),
            VALID,
        ]
        if session is not None:
            conds.append(
                models.FieldCondition(key="metadata.session", match=models.MatchValue(value=session))
            )
        with self._translate("reading recent turns"):
            recs, _ = self.client.scroll(
                self.facts,
                scroll_filter=scope_filter(scope, *conds),
                limit=limit,
                order_by=models.OrderBy(key="ingest_ns", direction=models.Direction.DESC),
                with_payload=True,
            )
        return [{"id": str(r.id), **(r.payload or {})} for r in recs]

    def _facts_writes(self) -> int | None:
        writes = getattr(self.client, "writes", None)
        return None if writes is None else int(writes(self.facts))

    def _kept_recent(self, scope: Scope, session: Any, limit: int) -> list[dict[str, Any]] | None:
        entry = self._recent.get((scope, session))
        if entry is None:
            return None
        at, depth, rows = entry
        if at != self._facts_writes() or limit > depth:
            del self._recent[(scope, session)]
            return None
        self._recent.move_to_end((scope, session))
        return [{**r, "metadata": dict(r.get("metadata") or {})} for r in rows[:limit]]

    #: how many (scope, session) views :meth:`keep_recent` keeps
    _recent_views = 1024

    def keep_recent(self, scope: Scope, session: Any, rows: Sequence[dict[str, Any]], depth: int) -> None:
        """Keep ``rows`` (newest first, as :meth:`recent_raw` gives them, with what an add
        wrote since) as the latest raw turns of ``(scope, session)``: all of them, or the
        latest ``depth`` when there are more. Current at the facts collection's present write
        count. Only on an embedded store: a server may have other writers this process never
        hears of."""
        at = self._facts_writes()
        if at is None:
            return
        self._recent[(scope, session)] = (at, depth, list(rows[:depth]))  # copied when read
        self._recent.move_to_end((scope, session))
        while len(self._recent) > self._recent_views:
            self._recent.popitem(last=False)

    def set_lexical(self, fact_id: str, index_text: str, fields: Mapping[str, Any]) -> None:
        """Replace a fact's lexical vector and indexed text (turn context grew)."""
        self.set_lexicals([(fact_id, index_text, fields)])

    def set_lexicals(
        self, items: Sequence[tuple[str, str, Mapping[str, Any]]], *, batched: bool = False
    ) -> None:
        """Replace facts' lexical vectors and indexed texts, with other fields of each: one
        engine write for all the vectors, one per fact for its fields.

        ``batched``: the grown contexts of turns, written after the add that grew them (the
        write-behind): those of turns deleted since are skipped, and the latest turns an add
        kept in memory (:meth:`keep_recent`), which hold these contexts already, stay current."""
        if batched:
            there = self._present([fid for fid, _, _ in items])
            items = [it for it in items if it[0] in there]
        own = {fid: {"index_text": text, **fields} for fid, text, fields in items}
        with self._keeping_recent() if batched else contextlib.nullcontext():
            self._write_lexical([(fid, text) for fid, text, _ in items], {}, own)

    def _write_lexical(
        self,
        items: Sequence[tuple[str, str]],
        fields: Mapping[str, Any],
        own: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Build the lexical vector of each (fact id, index text) with the current analysis; a
        text without content words has none. ``fields`` (and the analysis version) are set on
        every one of the facts, and ``own[id]`` on that fact."""
        if not items:
            return
        vectors, emptied = [], []
        for fid, text in items:
            idx, vals = sparse_doc(text)
            if idx:
                vectors.append(
                    models.PointVectors(
                        id=fid, vector={"lexical": models.SparseVector(indices=idx, values=vals)}
                    )
                )
            else:
                emptied.append(fid)
        if touches(fields) or any(touches(f) for f in (own or {}).values()):
            self.briefs.drop(fid for fid, _ in items)
        common = {"lexical_version": lexical.LEXICAL_VERSION, **fields}
        with self._translate("updating lexical vectors"):
            if vectors:
                self.client.update_vectors(self.facts, points=vectors, wait=True)
            if emptied:
                gone = models.PointIdsList(points=list(emptied))
                self.client.delete_vectors(self.facts, vectors=["lexical"], points=gone, wait=True)
            if own is None:
                ids: list[Any] = [fid for fid, _ in items]
                self.client.set_payload(self.facts, payload=common, points=ids, wait=True)
            else:
                for fid, _ in items:
                    payload = {**common, **own[fid]}
                    self.client.set_payload(self.facts, payload=payload, points=[fid], wait=True)

    def stale_lexical(self, scope: Scope | None) -> Iterator[list[str]]:
        """Pages of the ids of facts whose lexical vector was built by an older analysis
        (:data:`~mem_pipeline.text.lexical.LEXICAL_VERSION`), of this user (``scope``'s tenant and
        user, every agent and run) or, with ``None``, of every user."""
        current = models.FieldCondition(
            key="lexical_version", match=models.MatchValue(value=lexical.LEXICAL_VERSION)
        )
        flt = user_filter(scope) if scope is not None else models.Filter()
        flt.must_not = [current]
        page: list[str] = []
        for rec in self._scroll(self.facts, flt, payload=False):  # ids only
            page.append(str(rec.id))
            if len(page) >= 256:
                yield page
                page = []
        if page:
            yield page

    def unlinked_turn_users(self, scope: Scope | None) -> list[Scope]:
        """The users (tenant and user id) with raw turns written before reply links (no
        ``turn_links`` mark): ``scope``'s user only, or with ``None`` every user."""
        flt = user_filter(scope) if scope is not None else models.Filter(must=[])
        assert isinstance(flt.must, list)
        flt.must.append(models.FieldCondition(key="origin", match=models.MatchValue(value="raw")))
        flt.must_not = [
            models.FieldCondition(key="turn_links", match=models.MatchValue(value=TURN_LINKS_VERSION))
        ]
        recs = self._scroll(self.facts, flt)
        users = {(str(p["tenant"]), str(p["user_id"])) for r in recs if (p := r.payload)}
        return [Scope.of(user, tenant) for tenant, user in sorted(users)]

    def users(self, collection: str | None = None, ids: Sequence[str] | None = None) -> list[Scope]:
        """The (tenant, user) scopes with points in ``collection`` (default: facts); with
        ``ids``, of the history events of those fact ids."""
        if ids is not None:
            flt = models.Filter(
                must=[models.FieldCondition(key="fact_id", match=models.MatchAny(any=list(ids)))]
            )
            recs = self._scroll(
                self.events, flt, payload=models.PayloadSelectorInclude(include=["tenant", "user_id"])
            )
        else:
            sel = models.PayloadSelectorInclude(include=["tenant", "user_id"])
            recs = self._scroll(collection or self.facts, models.Filter(), payload=sel)
        users = {(str(p["tenant"]), str(p["user_id"])) for r in recs if (p := r.payload) and "user_id" in p}
        return [Scope.of(user, tenant) for tenant, user in sorted(users)]

    def raw_turns(self, scope: Scope) -> list[dict[str, Any]]:
        """Every current raw turn of one user (all agents and runs) in the order written:
        ``{"id", **payload}``."""
        flt = user_filter(scope)
        assert isinstance(flt.must, list)
        flt.must += [models.FieldCondition(key="origin", match=models.MatchValue(value="raw")), VALID]
        turns = [{"id": str(r.id), **(r.payload or {})} for r in self._scroll(self.facts, flt)]
        turns.sort(key=lambda t: int(t.get("ingest_ns", 0)))
        return turns

    def set_turn_links(self, links: Sequence[tuple[str, str | None]]) -> None:
        """Record each (turn id, the id of the turn it answers or None) and mark it linked."""
        unlinked = [fid for fid, reply in links if reply is None]
        mark = {"turn_links": TURN_LINKS_VERSION}
        self.briefs.drop(fid for fid, _ in links)
        with self._translate("linking turns"):
            if unlinked:
                self.client.set_payload(self.facts, payload={"reply_to": None, **mark}, points=[*unlinked])
            for fid, reply in links:
                if reply is not None:
                    self.client.set_payload(self.facts, payload={"reply_to": reply, **mark}, points=[fid])

    def rebuild_lexical(self, ids: Sequence[str]) -> list[str]:
        """Rebuild the lexical vectors of those of these facts that are still stale, from their
        index text as stored now (a writer may have extended it since the ids were listed);
        return the ids rebuilt."""
        if not ids:
            return []
        with self._translate("reading facts"):
            recs = self.client.retrieve(
                self.facts,
                ids=list(ids),
                with_payload=models.PayloadSelectorInclude(include=["index_text", "lexical_version"]),
            )
        items = [
            (str(r.id), str(p.get("index_text", "")))  # every fact is written with its index text
            for r in recs
            if (p := r.payload or {}).get("lexical_version") != lexical.LEXICAL_VERSION
        ]
        if items:
            self._write_lexical(items, {})
        return [fid for fid, _ in items]

    def set_fact_fields(self, fact_id: str, fields: Mapping[str, Any]) -> None:
        if touches(fields):
            self.briefs.drop([fact_id])
        with self._translate("updating a fact"):
            self.client.set_payload(self.facts, payload=dict(fields), points=[fact_id], wait=True)

    def find_repeat(self, scope: Scope, key_hash: str, old_id: str) -> StoredFact | None:
        """The current fact of ``scope`` that a write with this :func:`repeat_key` repeats: one
        stored with the same key, or one an older version stored under ``old_id`` (its
        :func:`legacy_id`) before keys were recorded.

        The key already holds the scope, so the engine is asked for the key alone (an index
        lookup; the scope's conditions would make it scan the scope) and the scope is checked
        here; the legacy id is one lookup by id."""
        key = models.FieldCondition(key="key_hash", match=models.MatchValue(value=key_hash))
        with self._translate("looking for a repeat"):
            recs, _ = self.client.scroll(
                self.facts, scroll_filter=models.Filter(must=[key, VALID]), limit=4, with_payload=HIT_PAYLOAD
            )
            if not recs:
                recs = self.client.retrieve(self.facts, ids=[old_id], with_payload=HIT_PAYLOAD)
        for r in recs:
            p = r.payload or {}
            # a legacy fact has no key: its id matched
            if p.get("key_hash", key_hash) == key_hash and p.get("valid") is True and in_scope(p, scope):
                return payload_to_fact(r.id, p)
        return None

    def in_slot(self, scope: Scope, slot: str, *, include_invalid: bool = False) -> list[StoredFact]:
        """The facts (not turns) of ``scope`` that set ``slot`` (``StoredFact.slot``): the current
        ones, and with ``include_invalid`` the superseded ones too."""
        conds = [
            models.FieldCondition(key="slot", match=models.MatchValue(value=slot)),
            models.FieldCondition(key="kind", match=models.MatchValue(value="fact")),
        ]
        flt = scope_filter(scope, *conds, *([] if include_invalid else [VALID]))
        with self._translate("reading a slot"):
            recs, _ = self.client.scroll(self.facts, scroll_filter=flt, limit=64, with_payload=HIT_PAYLOAD)
        return [payload_to_fact(r.id, r.payload or {}) for r in recs]

    def citing(self, scope: Scope, turn_ids: Sequence[str]) -> list[StoredFact]:
        """The facts of ``scope``'s user (any agent or run, valid or not) whose sources include
        one of ``turn_ids``."""
        if not turn_ids:
            return []
        flt = user_filter(scope)
        assert isinstance(flt.must, list)
        flt.must.append(models.FieldCondition(key="sources", match=models.MatchAny(any=list(turn_ids))))
        return [payload_to_fact(r.id, r.payload or {}) for r in self._scroll(self.facts, flt)]

    def answering(self, scope: Scope, fact_ids: Sequence[str]) -> list[StoredFact]:
        """The current facts of ``scope``'s user that only answer a question about one of
        ``fact_ids`` (``StoredFact.about``)."""
        if not fact_ids:
            return []
        flt = user_filter(scope)
        assert isinstance(flt.must, list)
        flt.must += [models.FieldCondition(key="about", match=models.MatchAny(any=list(fact_ids))), VALID]
        return [payload_to_fact(r.id, r.payload or {}) for r in self._scroll(self.facts, flt)]

    def get_facts(self, scope: Scope, ids: Sequence[str]) -> list[StoredFact]:
        """The facts with these ids that belong to ``scope`` (others are silently absent), in
        the order of ``ids``."""
        found = self.read_briefs(ids)
        return [
            payload_to_fact(fid, p)
            for fid in dict.fromkeys(ids)
            if (p := found.get(fid)) and in_scope(p, scope)
        ]

    def fact_briefs(self, scope: Scope, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached fields (``_briefs``) of the current facts of ``scope`` among ``ids``:
        what scores a fact, without building it (candidates are many, winners few)."""
        found = self.read_briefs(ids)
        ours = scoped(scope)
        return {fid: p for fid, p in found.items() if ours(p) and p.get("valid", True)}

    def read_briefs(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached fields of the facts with these ids (any scope; absent ids are left
        out): from the cache, and the facts it misses from the engine in one call. The dicts
        are shared with the cache: read them, never change them."""
        if not ids:
            return {}
        found, missing = self.briefs.get_many(ids)
        if missing:
            with self._translate("reading facts"):
                recs = self.client.retrieve(self.facts, ids=missing, with_payload=BRIEF_SELECTOR)
            read = {str(r.id): r.payload or {} for r in recs}
            self.briefs.put_many(read)
            found.update(read)
        return found

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The dense vectors of the facts and turns with these ids (absent ids are left out),
        in one call to the engine."""
        if not ids:
            return {}
        with self._translate("reading vectors"):
            recs = self.client.retrieve(self.facts, ids=list(ids), with_payload=False, with_vectors=["dense"])
        out = {}
        for r in recs:
            vec = r.vector.get("dense") if isinstance(r.vector, dict) else None
            if vec is not None:
                out[str(r.id)] = np.asarray(vec, dtype=np.float32)
        return out

    def scroll_facts(
        self,
        scope: Scope,
        *,
        include_invalid: bool = False,
        filters: Mapping[str, Any] | None = None,
        whole_user: bool = False,
    ) -> Iterator[StoredFact]:
        flt = user_filter(scope) if whole_user else scope_filter(scope)
        if not include_invalid:
            flt.must = [*list(flt.must or []), VALID]  # type: ignore[list-item]
        flt.must = [*list(flt.must or []), *metadata_conditions(filters)]  # type: ignore[list-item]
        for rec in self._scroll(self.facts, flt):
            yield payload_to_fact(rec.id, rec.payload or {})

    def fact_order(
        self, scope: Scope, *, include_invalid: bool = False, filters: Mapping[str, Any] | None = None
    ) -> list[tuple[float, str]]:
        """(created time, id) of every fact of ``scope``, oldest first: what a page of facts is
        cut from (only the creation time is read of each fact)."""
        flt = scope_filter(scope, *metadata_conditions(filters), *([] if include_invalid else [VALID]))
        sel = models.PayloadSelectorInclude(include=["created_ts"])
        keys = [
            (float((r.payload or {}).get("created_ts") or 0.0), str(r.id))
            for r in self._scroll(self.facts, flt, payload=sel)
        ]
        keys.sort()
        return keys

    def user_ids(self, tenant: str, limit: int = 1000) -> list[str]:
        """The distinct users of ``tenant`` with facts or turns (most points first, at most
        ``limit``): a facet over the user index, without reading facts."""
        flt = models.Filter(must=[models.FieldCondition(key="tenant", match=models.MatchValue(value=tenant))])
        with self._translate("listing users"):
            resp = self.client.facet(self.facts, key="user_id", facet_filter=flt, limit=limit)
        return [str(h.value) for h in resp.hits]

    def speakers(self, scope: Scope, limit: int = 1000) -> list[str]:
        """The distinct ``metadata["speaker"]`` values of this scope's facts (most frequent
        first, at most ``limit``): a facet over the speaker index, without reading facts; kept
        until the user's facts are next written (with a payload cache only)."""
        key = (scope, limit)
        if self.briefs.size and key in self._speakers:
            return self._speakers[key]
        with self._translate("listing speakers"):
            resp = self.client.facet(
                self.facts, key="metadata.speaker", facet_filter=scope_filter(scope), limit=limit
            )
        found = [str(h.value) for h in resp.hits]
        if self.briefs.size:
            if len(self._speakers) > 4096:
                self._speakers.clear()
            self._speakers[key] = found
        return found

    def _written(self, tenant: str | None = None, user_id: str | None = None) -> None:
        """Facts of this user (or, with None, of anyone) were written: drop what is kept of
        their speakers."""
        if tenant is None:
            self._speakers.clear()
            return
        for key in [k for k in self._speakers if k[0].tenant == tenant and k[0].user_id == user_id]:
            del self._speakers[key]

    def search(
        self,
        scope: Scope,
        *,
        dense: VectorLike | None,
        sparse: tuple[list[int], list[float]] | None,
        limit: int,
        filters: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        kind: str | None = None,
        fill: bool = False,
    ) -> list[Candidate]:
        """Dense and lexical search in one round trip for ids and scores; candidates carry each
        raw score and their fields from the payload cache (``read_briefs``: the engine is read
        for the facts the cache misses). With ``kind`` (``"fact"`` or ``"turn"``), of that kind
        only.

        With ``fill`` and both queries, a candidate found by one search alone also gets its
        score from the other, in the same round trip: each query is asked again over the other's
        results (a prefetch), which the engine scores exactly. So min-max (``decay.fuse``)
        scales both signals over the same candidates (LoCoMo R@10 .878 -> .880 when the lexical
        side was filled too; ``eval/README.md``). A lexical score is given only to a fact that
        shares a term with the query."""
        conds = metadata_conditions(filters)
        if not include_invalid:
            conds.append(VALID)
        if kind is not None:
            conds.append(models.FieldCondition(key="kind", match=models.MatchValue(value=kind)))
        flt = scope_filter(scope, *conds)
        dense_q = None if dense is None else np.asarray(dense, dtype=np.float64).tolist()
        sparse_q = None
        if sparse is not None and sparse[0]:
            sparse_q = models.SparseVector(indices=sparse[0], values=sparse[1])
        if fill and dense_q is not None and sparse_q is not None:
            return self._search_both(flt, dense_q, sparse_q, limit)
        asks: list[tuple[str, Any]] = []
        if dense_q is not None:
            asks.append(("dense", dense_q))
        if sparse_q is not None:
            asks.append(("lexical", sparse_q))
        if not asks:
            return []
        requests = [_request(query, using, flt, limit) for using, query in asks]
        with self._translate("searching"):
            responses: list[Any] = self.client.query_batch_points(self.facts, requests=requests)
        scores: dict[str, dict[str, float]] = {}  # id -> {signal: score}, in the order found
        for (using, _), resp in zip(asks, responses):
            for p in resp.points:
                scores.setdefault(str(p.id), {})[using] = float(p.score)
        briefs = self.read_briefs(list(scores))
        return [
            Candidate(pid, briefs[pid], s.get("dense"), s.get("lexical"))
            for pid, s in scores.items()
            if pid in briefs
        ]

    def _search_both(
        self, flt: models.Filter, dense: list[float], sparse: models.SparseVector, limit: int
    ) -> list[Candidate]:
        """:meth:`search` with ``fill``: the dense and the lexical top ``limit``, and each query
        again over the other's top (a prefetch), which gives every candidate both scores, in
        one round trip."""
        asks: list[tuple[str, Any, str, Any]] = [
            ("dense", dense, "lexical", sparse),
            ("lexical", sparse, "dense", dense),
        ]
        requests = [_request(query, using, flt, limit) for using, query, _, _ in asks] + [
            _request(
                query,
                using,
                None,
                limit,
                models.Prefetch.model_construct(query=other_query, using=other, filter=flt, limit=limit),
            )
            for using, query, other, other_query in asks
        ]
        with self._translate("searching"):
            top_dense, top_lexical, dense_of, lexical_of = self.client.query_batch_points(
                self.facts, requests=requests
            )
        scores: dict[str, list[float | None]] = {}  # id -> [dense, lexical], in the order found
        for p in top_dense.points:
            scores[str(p.id)] = [float(p.score), None]
        for p in top_lexical.points:
            scores.setdefault(str(p.id), [None, None])[1] = float(p.score)
        for p in dense_of.points:  # the lexical top's cosines
            got = scores.get(str(p.id))
            if got is not None and got[0] is None:
                got[0] = float(p.score)
        for p in lexical_of.points:  # the dense top's lexical scores, where they share a term
            got = scores.get(str(p.id))
            if got is not None and got[1] is None and p.score > 0:
                got[1] = float(p.score)
        briefs = self.read_briefs(list(scores))
        return [Candidate(pid, briefs[pid], d, lx) for pid, (d, lx) in scores.items() if pid in briefs]

    def delete_facts(self, ids: Sequence[str]) -> None:
        self.briefs.drop(ids)
        self._written()
        if ids:
            with self._translate("deleting facts"):
                self.client.delete(
                    self.facts, points_selector=models.PointIdsList(points=list(ids)), wait=True
                )

    def set_missing_keys(self, scope: Scope | None, *, dry_run: bool = False) -> list[str]:
        """Record the repeat key (:func:`~mem_pipeline.store.repeat_key`) of the facts an older
        version wrote without one (of ``scope``'s user, or of everyone); return their ids."""
        flt = user_filter(scope) if scope is not None else models.Filter()
        sel = models.PayloadSelectorInclude(
            include=[
                "key_hash",
                "origin",
                "text",
                "embed_text",
                "metadata",
                "tenant",
                "user_id",
                "agent_id",
                "run_id",
            ]
        )
        todo: list[tuple[str, str]] = []
        for r in self._scroll(self.facts, flt, payload=sel):
            p = r.payload or {}
            if p.get("key_hash"):
                continue
            who = Scope.of(p["user_id"], p["tenant"], p.get("agent_id"), p.get("run_id"))
            key = repeat_key(
                who,
                str(p.get("origin", "raw")),
                str(p["text"]),
                str(p.get("embed_text") or p["text"]),
                p.get("metadata") or {},
            )
            todo.append((str(r.id), key))
        if not dry_run:
            with self._translate("recording repeat keys"):
                for fid, key in todo:
                    self.client.set_payload(self.facts, payload={"key_hash": key}, points=[fid], wait=True)
        return [fid for fid, _ in todo]


def _request(
    query: Any, using: str, flt: models.Filter | None, limit: int, prefetch: models.Prefetch | None = None
) -> models.QueryRequest:
    """A search's query for ids and scores, built without validating it: its parts are ours
    and already of the right types, and validating a dense query checks each of its 384 floats
    (0.1 ms of a search's four)."""
    return models.QueryRequest.model_construct(
        query=query, using=using, filter=flt, prefetch=prefetch, limit=limit, with_payload=False
    )
