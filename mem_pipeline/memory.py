"""The ``Memory`` facade: checks what the caller passes, resolves the scope, and hands the work
to the stage that does it: the write path (:mod:`mem_pipeline.write`), the read path
(:mod:`mem_pipeline.read`) and upkeep (:mod:`mem_pipeline.upkeep`). It holds no stage logic."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import _inputs as check
from ._parts import Parts
from .config import MemoryConfig, default_data_path
from .embed import Embedder, EmbeddingCache, LocalEmbedder, OpenAIEmbedder
from .errors import InvalidInputError, NotFoundError
from .links import ConceptLinks
from .llm import LLMClient
from .models import (
    AddResult,
    FactPage,
    HistoryEvent,
    Kind,
    Message,
    Scope,
    StoredFact,
    utcnow,
    validate_metadata,
)
from .read import Reader
from .recall import Recall
from .store import QdrantStore
from .upkeep import prune as _prune
from .upkeep import recovery
from .upkeep.reindex import reindex as _reindex
from .upkeep.repair import repair as _repair
from .write import Writer, apply
from .write.categories import CategoryModel
from .write.extract import Extractor, LLMExtractor
from .write.feedback import feedback as _feedback
from .write.memorable import MemorableFilter
from .write.offline import OfflineExtractor
from .write.pending import list_pending, retry_pending
from .write.reconcile import LLMReconciler, Reconciler
from .write.replaces import ReplaceModel

__all__ = ["Memory"]


def _with_kind(filters: Mapping[str, Any] | None, kind: Any) -> Mapping[str, Any] | None:
    if kind is None:
        return filters
    if kind not in ("fact", "turn"):
        raise InvalidInputError(f"kind must be 'fact' or 'turn', got {kind!r:.40}")
    return {**(filters or {}), "kind": kind}


def _score(value: Any) -> float | None:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(f"min_score must be a number from 0 to 1, got {value!r:.40}")
    return float(value)


class Memory:
    """Long-term memory for one or many users, on embedded Qdrant by default.

    >>> with Memory(path=":memory:") as m:                         # doctest: +SKIP
    ...     m.add("I'm vegetarian and I love hiking.", user_id="ana")
    ...     print(m.search("what should I cook?", user_id="ana").to_prompt())

    Collaborators are injected (``embedder``, ``store``, ``extractor``, ``reconciler``,
    ``clock``); each defaults to the offline choice the configuration implies.
    """

    def __init__(
        self,
        path: str | Path | MemoryConfig | None = None,
        url: str | None = None,
        config: MemoryConfig | None = None,
        *,
        embedder: Embedder | None = None,
        store: QdrantStore | None = None,
        extractor: Extractor | None = None,
        reconciler: Reconciler | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if isinstance(path, MemoryConfig):  # Memory(MemoryConfig(...)): the config, passed first
            if config is not None:
                raise TypeError("Memory() got two configs: pass one MemoryConfig, as config=")
            path, config = None, path
        overrides: dict[str, Any] = {}
        if path is not None:
            overrides["path"] = str(path)
        if url is not None:
            overrides["url"] = url
        if config is None:
            config = MemoryConfig.from_env(**overrides)
        elif overrides:
            config = config.model_copy(update=overrides)
        if embedder is None:
            embedder = (
                OpenAIEmbedder(
                    config.embedding_model, api_key=config.llm_api_key, base_url=config.llm_base_url
                )
                if config.embedder == "openai"
                else LocalEmbedder(threads=config.embedding_threads)
            )
        self.embedder = embedder
        embed = EmbeddingCache(embedder)
        self.store = store if store is not None else self._open_store(config, embedder)
        lock = threading.RLock()  # serialises the store's reads and writes, in this process
        links = ConceptLinks(
            self.store,
            embed,
            half_life_days=config.link_half_life_days,
            floor=config.link_floor,
            min_count=config.link_min_count,
            match_threshold=config.concept_match_threshold,
            delay=config.link_write_delay,
            lock=lock,
        )
        self.parts = Parts(config=config, store=self.store, embed=embed, links=links, clock=clock, lock=lock)
        self.parts.repair = lambda scope, op: recovery.repair_user(self.parts, scope, op)
        labels = None  # the learned categories, for the extractor this Memory builds
        if extractor is None and config.category_model:
            labels = CategoryModel.shipped(embed, embedder.model_id)
        judge = None  # the learned second opinion on what the rules keep (``write.memorable``)
        if extractor is None and config.memorable_filter:
            judge = MemorableFilter(embed, embedder.model_id)
        if extractor is None and config.llm_configured:
            llm = LLMClient.from_config(config)
            extractor = LLMExtractor(
                llm,
                context_tokens=config.llm_context_tokens,
                output_tokens=config.extract_output_tokens,
                overlap=config.extract_overlap,
                backfill=OfflineExtractor(judge=judge) if config.extract_backfill else None,
                categories=labels,
            )
            reconciler = reconciler if reconciler is not None else LLMReconciler(llm)
        if extractor is None:
            extractor = OfflineExtractor(judge=judge, categories=labels)
        self.extractor: Extractor = extractor
        self.reconciler = reconciler
        replaces = ReplaceModel.shipped(embed, embedder.model_id) if config.replace_model else None
        self._writer = Writer(self.parts, self.extractor, reconciler, replaces)
        self._reader = Reader(self.parts)
        self._closed = False
        if not config.url and config.path != ":memory:":
            # an embedded store is this process's alone (file lock): nothing else is writing, so
            # a write left unfinished is one a crash interrupted
            try:
                self.recover()
            except BaseException:
                self.close()  # a Memory that failed to open holds nothing
                raise

    @property
    def config(self) -> MemoryConfig:
        """The configuration every stage reads; a new one (``config.model_copy(update=...)``)
        may be set on an open Memory, e.g. to compare settings on the same store."""
        return self.parts.config

    @config.setter
    def config(self, value: MemoryConfig) -> None:
        self.parts.config = value

    @staticmethod
    def _open_store(config: MemoryConfig, embedder: Embedder) -> QdrantStore:
        path = None if config.url else config.path or str(default_data_path())
        return QdrantStore.open(
            path=path,
            url=config.url,
            api_key=config.qdrant_api_key,
            embedder_id=embedder.model_id,
            dimensions=embedder.dimensions,
            prefix=config.collection_prefix,
            engine=config.engine,
            payload_cache=config.payload_cache,
        )

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        with self.parts.lock:
            first, self._closed = not self._closed, True
        if first:  # outside the store's lock: closing the links joins their writer, which takes it
            self.parts.links.close()  # the counts and links still waiting to be written
            self.parts.links.embed_names()  # the new concepts' name vectors still to compute
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        return self.parts.now()

    # -- write path ---------------------------------------------------------------------------
    def add(
        self,
        messages: str | Sequence[Mapping[str, Any] | Message],
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        concepts: Iterable[str] | None = None,
        infer: bool | None = None,
        timestamp: datetime | str | float | None = None,
        _pending_id: str | None = None,
    ) -> AddResult:
        """Remember what the user said.

        ``infer=False`` stores each user message verbatim as one fact (caller ``concepts``
        attached; without them, keyword phrases of the text), merging only exact repeats.
        ``infer=None``/``True`` runs the configured extractor (the LLM when configured, else
        the offline extractor), grounds its facts, and reconciles each with the stored ones.
        ``timestamp`` is when the turns happened (default: now).
        """
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        if infer is not None and not isinstance(infer, bool):
            raise InvalidInputError(f"infer must be True, False or None, got {infer!r:.40}")
        msgs = check.check_messages(messages, self.config)
        meta = validate_metadata(metadata)
        extra = check.check_concepts(concepts)
        when = self.now() if timestamp is None else check.as_datetime(timestamp)
        return self._writer.add(scope, msgs, meta, extra, infer, when, _pending_id)

    def update(
        self,
        id: str,
        text: str,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> StoredFact:
        """Replace a fact's text (same id); the old text stays in ``history``."""
        text = check.check_text(text)
        if len(text) > self.config.max_message_chars:
            raise InvalidInputError("text is longer than max_message_chars")
        with self.parts.lock:
            fact = self.get(id, user_id=user_id, tenant=tenant, agent_id=agent_id, run_id=run_id)
            with self.parts.journaled(fact.scope, "update"):
                apply.rewrite(self.parts, fact.scope, fact, text, [], self.now(), reason="update()")
            return self.get(id, user_id=user_id, tenant=tenant, agent_id=agent_id, run_id=run_id)

    def delete(
        self,
        id: str,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """Delete one fact of this scope (its history keeps a DELETE event)."""
        with self.parts.lock:
            fact = self.get(id, user_id=user_id, tenant=tenant, agent_id=agent_id, run_id=run_id)
            with self.parts.journaled(fact.scope, "delete"):
                apply.delete(self.parts, fact.scope, [fact], "delete()")

    def forget(self, *, user_id: str, tenant: str = "default") -> int:
        """Remove everything of one user in one tenant: facts, history, pending, links.

        Returns how many facts were removed.
        """
        scope = Scope.of(user_id, tenant)
        with self.parts.lock:
            n = len(list(self.store.scroll_facts(scope, include_invalid=True, whole_user=True)))
            with self.parts.journaled(scope, "forget"):
                # its counts, links and history rows waiting to be written: dropped
                self.parts.links.discard(scope, forgetting=True)
                self.store.delete_user(scope)
                self.parts.links.invalidate(scope)  # the per-process concept caches of the user too
        return n

    def feedback(
        self,
        recall_or_ids: Recall | Sequence[str],
        helped: bool | float,
        *,
        user_id: str,
        tenant: str = "default",
        query: str | None = None,
    ) -> dict[str, int]:
        """Say whether recalled facts helped (``True``/``False`` or a float in [-1, 1]).

        Each fact's valence moves by ``0.2 * helped`` (bounded to [-1, 1]); the links from the
        query's concepts to each fact's concepts move by ``0.5 * helped`` (each link at most once
        per call, bounded; a weakened link never goes below zero strength). Give a
        :class:`Recall` (its query concepts are used) or fact ids with ``query=``.
        """
        scope = Scope.of(user_id, tenant)
        if not isinstance(helped, (bool, int, float)):
            raise InvalidInputError(f"helped must be a bool or a float in [-1, 1], not {helped!r:.40}")
        amount = (1.0 if helped else -1.0) if isinstance(helped, bool) else float(helped)
        if not -1.0 <= amount <= 1.0:
            raise InvalidInputError("helped must be a bool or a float in [-1, 1]")
        if isinstance(recall_or_ids, Recall):
            ids = [h.id for h in [*recall_or_ids.hits, *recall_or_ids.associations]]
            qc = list(recall_or_ids.query_concepts)
        else:
            if isinstance(recall_or_ids, str):
                recall_or_ids = [recall_or_ids]
            if not isinstance(recall_or_ids, Iterable) or isinstance(recall_or_ids, (bytes, Mapping)):
                raise InvalidInputError("feedback takes a Recall or a list of fact ids")
            ids = [check.check_id(i) for i in recall_or_ids]
            q = check.check_query(query, self.config) if query else None
            qc = list(self.parts.links.match_query(scope, q)) if q else []
        return _feedback(self.parts, scope, ids, qc, amount)

    # -- pending turns ------------------------------------------------------------------------
    def pending(self, *, user_id: str, tenant: str = "default") -> list[dict[str, Any]]:
        """The turns of this user still waiting for extraction (with the last error)."""
        return list_pending(self.parts, Scope.of(user_id, tenant))

    def retry_pending(self, *, user_id: str | None = None, tenant: str = "default") -> list[AddResult]:
        """Process pending turns (one user's, or everyone's), oldest first.

        A turn that succeeds is removed from pending; one that fails again stays, with the new
        error and its attempt count, and the others are still tried.
        """
        scope = Scope.of(user_id, tenant) if user_id is not None else None

        def again(pid: str, rec: dict[str, Any]) -> AddResult:
            return self.add(
                rec["messages"],
                user_id=rec["user_id"],
                tenant=rec["tenant"],
                agent_id=rec.get("agent_id"),
                run_id=rec.get("run_id"),
                metadata=rec.get("metadata"),
                concepts=rec.get("concepts"),
                timestamp=rec.get("timestamp"),
                _pending_id=pid,
            )

        return retry_pending(self.parts, scope, again)

    # -- read path ----------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 5,
        filters: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        now: datetime | None = None,
        reinforce: bool = False,
        expand: bool | None = None,
        min_score: float | None = None,
    ) -> Recall:
        """The facts and turns most relevant to ``query`` in this scope, scored and explained.

        ``recall.hits``: at most ``limit``, best first; a turn whose fact is also a hit is
        folded under it (``hit.folded``). The question must be about something held: when no
        candidate's ``hit.parts.confidence`` (a calibrated probability that it is relevant)
        reaches ``min_score`` (default ``config.min_score``; 0 returns the best matches
        whatever they are), nothing is returned, so an unrelated question gets nothing; else
        hits down to ``config.hit_floor``. ``recall.associations``: with ``expand`` (default
        ``config.expand_links``), up to ``config.association_limit`` facts the question never
        named, reached through concept links, each with its path (``hit.via``); they never take
        a hit's place. A search does not strengthen what it finds; ``reinforce=True`` says the
        caller will use the hits (so does helpful ``feedback``)."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        text = check.check_query(query, self.config)
        at = self.now() if now is None else check.as_datetime(now, "now")
        return self._reader.search(
            scope,
            text,
            limit=check.check_limit(limit),
            at=at,
            filters=filters,
            include_invalid=include_invalid,
            reinforce=bool(reinforce),
            expand=expand,
            min_score=_score(min_score),
        )

    def get(
        self,
        id: str,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> StoredFact:
        """One fact of this scope; :class:`NotFoundError` if absent (or another scope's)."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        fid = check.check_id(id)
        with self.parts.lock:
            found = self.store.get_facts(scope, [fid])
        if not found:
            raise NotFoundError(f"no fact {fid} for user {scope.user_id!r} in tenant {scope.tenant!r}")
        return found[0]

    def get_all(
        self,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
        filters: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
    ) -> list[StoredFact]:
        """Every fact and turn of this scope, oldest first (superseded ones only when asked;
        ``kind="fact"`` or ``"turn"`` for one kind). For a scope with many, :meth:`page` reads
        them a page at a time."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        filters = _with_kind(filters, kind)
        with self.parts.lock:
            facts = list(self.store.scroll_facts(scope, include_invalid=include_invalid, filters=filters))
        facts.sort(key=lambda f: (f.created_at.timestamp(), f.id))
        return facts

    def page(
        self,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        include_invalid: bool = False,
        filters: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
    ) -> FactPage:
        """A page of this scope's facts, oldest first (the order of :meth:`get_all`).

        ``cursor`` is the ``next_cursor`` of the previous page (None: the first page). A fact
        added while paging appears on a later page if it is newer than the cursor; none is
        returned twice."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        limit = check.check_limit(limit)
        after = check.decode_cursor(cursor)
        filters = _with_kind(filters, kind)
        with self.parts.lock:
            keys = self.store.fact_order(scope, include_invalid=include_invalid, filters=filters)
            start = 0 if after is None else bisect.bisect_right(keys, after)
            chosen = keys[start : start + limit]
            by_id = {f.id: f for f in self.store.get_facts(scope, [fid for _, fid in chosen])}
        facts = [by_id[fid] for _, fid in chosen if fid in by_id]
        more = start + limit < len(keys)
        return FactPage(
            facts=facts,
            next_cursor=check.encode_cursor(chosen[-1]) if more and chosen else None,
            total=len(keys),
        )

    def users(self, *, tenant: str = "default", limit: int = 1000) -> list[str]:
        """The user ids of ``tenant`` that have facts or turns, most facts first (at most
        ``limit``): what an operator with a tenant-wide key picks a user from."""
        scope = Scope.of("-", tenant)  # validates the tenant
        with self.parts.lock:
            return self.store.user_ids(scope.tenant, limit=check.check_limit(limit))

    def history(self, id: str, *, user_id: str, tenant: str = "default") -> list[HistoryEvent]:
        """Every change to a fact, oldest first (kept after ``delete``; removed by ``forget``)."""
        scope = Scope.of(user_id, tenant)
        fid = check.check_id(id)
        with self.parts.lock:
            self.parts.links.flush(scope)  # its history rows waiting to be written, if any
            rows = self.store.get_events(scope, fid)
        return [
            HistoryEvent(
                fact_id=r["fact_id"],
                event=r["event"],
                old_text=r.get("old_text"),
                new_text=r.get("new_text"),
                at=datetime.fromtimestamp(r["at_ts"], tz=timezone.utc),
                detail=r.get("detail") or {},
            )
            for r in rows
        ]

    # -- upkeep -------------------------------------------------------------------------------
    def recover(self) -> int:
        """Complete the writes a crash interrupted; returns how many were repaired.

        A ``forget`` is redone. For any other write, the user's facts are the truth (each fact is
        one atomic point write): history events missing for them are added (marked
        ``recovered``), and concept counts and links are recomputed from them. Runs on open for
        an embedded store; with a Qdrant server call it when no other process is writing.
        """
        return recovery.recover(self.parts)

    def repair(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Find and drop points the engine can no longer read (stores an older version let be
        damaged), and make the users they touched consistent again; see
        :func:`mem_pipeline.upkeep.repair.repair`. ``dry_run`` only reports."""
        return _repair(self.parts, dry_run=dry_run)

    def compact(self) -> dict[str, float]:
        """Move what the embedded store holds in memory to memory-mapped files, so that the
        process's own memory stays small however many facts it holds; returns seconds per
        collection (``{}`` on a Qdrant server, which compacts itself). Concept counts and links
        still waiting to be written are written first. It stalls this process while it runs (21
        s at 30,000 facts, 6 min at 300,000, on 2 cores): run it when the store is quiet, as
        ``mem-pipeline compact`` does. Facts written after it are in memory until the next
        compaction."""
        self.parts.links.flush()
        with self.parts.lock:
            return self.store.compact()

    def reindex(self, *, user_id: str | None = None, tenant: str = "default", dry_run: bool = False) -> int:
        """Bring facts written by an older version up to date (lexical vectors, reply links,
        repeat keys) for one user or, with no ``user_id``, everyone; return how many facts were
        (with ``dry_run``: would be) changed. See :func:`mem_pipeline.upkeep.reindex.reindex`."""
        scope = Scope.of(user_id, tenant) if user_id is not None else None
        return _reindex(self.parts, scope, dry_run=dry_run)

    def prune(
        self,
        *,
        user_id: str,
        tenant: str = "default",
        min_strength: float = 0.05,
        dry_run: bool = True,
        now: datetime | None = None,
    ) -> list[StoredFact]:
        """Facts whose decayed strength (recency x reinforcement, no floor) fell below
        ``min_strength``. With ``dry_run=False`` they are deleted (history keeps DELETE events).
        Superseded facts are left alone: they are history, not memory.
        """
        scope = Scope.of(user_id, tenant)
        at = self.now() if now is None else check.as_datetime(now, "now")
        with self.parts.lock:
            stale = _prune.faded(self.parts, scope, at, min_strength)
            if stale and not dry_run:
                with self.parts.journaled(scope, "delete"):
                    apply.delete(self.parts, scope, stale, f"prune(min_strength={min_strength})")
        return stale
