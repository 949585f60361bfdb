"""The ``Memory`` facade: validates input, wires the stages, writes the history.

It holds no scoring or extraction logic of its own: those live in ``decay``/``recall``,
``extract`` and ``reconcile``.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._text import (
    asks_name,
    asks_when,
    candidate_phrases,
    name_tokens,
    normalize_concept,
    sparse_query,
    third_person,
    without_names,
)
from .concepts import ConceptLinks, Expansion, boost_by_concepts, expand
from .config import MemoryConfig, default_data_path
from .decay import decayed_strength, recency, reinforcement
from .embed import Embedder, EmbeddingCache, LocalEmbedder, OpenAIEmbedder
from .errors import ExtractionPendingError, InvalidInputError, LLMError, NotFoundError
from .extract import Extractor, LLMExtractor, OfflineExtractor, ground, grounding_sources
from .llm import LLMClient
from .models import (
    AddEvent,
    AddResult,
    Category,
    ExtractedFact,
    FactPage,
    HistoryEvent,
    Message,
    Scope,
    ScoreParts,
    StoredFact,
    Via,
    new_fact_id,
    utcnow,
    validate_metadata,
)
from .recall import Hit, Recall, Source, hit_from_fact, rank, session_key
from .reconcile import Decision, LLMReconciler, Reconciler, offline_decision
from .store import TURN_LINKS_VERSION, QdrantStore, VectorLike, legacy_id, repeat_key

__all__ = ["Memory"]

log = logging.getLogger(__name__)

_MAX_CONCEPTS = 32


def _utf8(text: str, what: str) -> str:
    """Refuse strings that cannot be stored or embedded (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"{what} is not valid Unicode (lone surrogate at {e.start})") from e
    return text


def _brief(f: StoredFact) -> dict[str, Any]:
    """The fields association scoring reads, from a fact already in hand (the payload shape of
    ``QdrantStore.fact_briefs``)."""
    return {
        "concepts": f.concepts,
        "category": f.category.value,
        "created_ts": f.created_at.timestamp(),
        "last_seen_ts": f.last_seen_at.timestamp(),
        "confirmations": f.confirmations,
        "recalls": f.recalls,
        "valence": f.valence,
        "importance": f.importance,
    }


def _answers(prev: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Whether a raw turn with metadata ``meta`` answers the stored turn ``prev`` said just
    before it: ``prev`` asked a question ("?") and someone else said it."""
    asker = (prev.get("metadata") or {}).get("speaker")
    return "?" in str(prev.get("text", "")) and asker is not None and asker != meta.get("speaker")


def _encode_cursor(key: tuple[float, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps([key[0], key[1]]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: Any) -> tuple[float, str] | None:
    """The (created time, id) a page cursor stands for; None for no cursor."""
    if cursor is None:
        return None
    try:
        ts, fid = json.loads(base64.urlsafe_b64decode(str(cursor) + "=" * (-len(str(cursor)) % 4)))
        return float(ts), str(uuid.UUID(fid))
    except (ValueError, TypeError, UnicodeDecodeError):
        raise InvalidInputError(
            f"{str(cursor)[:40]!r} is not a page cursor (use next_cursor of a page)"
        ) from None


def _as_datetime(value: Any, what: str = "timestamp") -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, ValueError, OSError) as e:
            raise InvalidInputError(f"{what} {value!r} is not a representable time") from e
    if isinstance(value, str):
        try:
            return _as_datetime(datetime.fromisoformat(value.replace("Z", "+00:00")), what)
        except ValueError as e:
            raise InvalidInputError(f"{what} {value!r:.60} is not an ISO 8601 time") from e
    raise InvalidInputError(f"{what} must be a datetime, an ISO string or epoch seconds")


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
        path: str | Path | None = None,
        url: str | None = None,
        config: MemoryConfig | None = None,
        *,
        embedder: Embedder | None = None,
        store: QdrantStore | None = None,
        extractor: Extractor | None = None,
        reconciler: Reconciler | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        overrides: dict[str, Any] = {}
        if path is not None:
            overrides["path"] = str(path)
        if url is not None:
            overrides["url"] = url
        if config is None:
            config = MemoryConfig.from_env(**overrides)
        elif overrides:
            config = config.model_copy(update=overrides)
        self.config = config
        self._clock = clock
        self._lock = threading.RLock()
        self._pool: ThreadPoolExecutor | None = None
        if embedder is None:
            embedder = (
                OpenAIEmbedder(
                    config.embedding_model, api_key=config.llm_api_key, base_url=config.llm_base_url
                )
                if config.embedder == "openai"
                else LocalEmbedder(threads=config.embedding_threads)
            )
        self.embedder = embedder
        self._embed = EmbeddingCache(embedder)
        if store is None:
            store_path = None
            if not config.url:
                store_path = config.path or str(default_data_path())
                if store_path != ":memory:":
                    Path(store_path).mkdir(parents=True, exist_ok=True, mode=0o700)
            store = QdrantStore.open(
                path=store_path,
                url=config.url,
                api_key=config.qdrant_api_key,
                embedder_id=embedder.model_id,
                dimensions=embedder.dimensions,
                prefix=config.collection_prefix,
                engine=config.engine,
            )
        self.store = store
        self.reconciler = reconciler
        self._links = ConceptLinks(
            self.store,
            self._embed,
            half_life_days=config.link_half_life_days,
            floor=config.link_floor,
            min_count=config.link_min_count,
            match_threshold=config.concept_match_threshold,
        )
        if extractor is None:
            extractor = self._default_extractor()
        self.extractor = extractor
        if not config.url and config.path != ":memory:":
            # an embedded store is this process's alone (file lock): nothing else is writing, so
            # a write left unfinished is one a crash interrupted
            self.recover()

    def _default_extractor(self) -> Extractor:
        """The LLM extractor (and reconciler) when an endpoint or key is configured."""
        if self.config.llm_configured:
            llm = LLMClient.from_config(self.config)
            if self.reconciler is None:
                self.reconciler = LLMReconciler(llm)
            return LLMExtractor(llm)
        return OfflineExtractor()

    # -- lifecycle ----------------------------------------------------------------------------
    def _helper(self) -> ThreadPoolExecutor:
        """One worker thread for work that can overlap a recall (n-gram embedding)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem_pipeline")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        return self._clock()

    # -- interrupted writes -------------------------------------------------------------------
    @contextlib.contextmanager
    def _intent(self, scope: Scope, op: str) -> Iterator[None]:
        """Journal a write that spans several points: a fact, its history, concept counts and
        links are separate Qdrant writes, so a crash (or an error) between them would leave a
        fact without its ADD event or counts off by one. The entry is cleared when the write is
        complete; one left behind is repaired by :meth:`recover` (on open for embedded stores)."""
        jid = self.store.begin(scope, op)
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):  # repair now if we can, else on the next open
                self._repair(scope, op)
                self.store.end(jid)
            raise
        self.store.end(jid)

    def recover(self) -> int:
        """Complete the writes a crash interrupted; returns how many were repaired.

        A ``forget`` is redone. For any other write, the user's facts are the truth (each fact is
        one atomic point write): history events missing for them are added (marked
        ``recovered``), and concept counts and links are recomputed from them. Runs on open for
        an embedded store; with a Qdrant server call it when no other process is writing.
        """
        with self._lock:
            todo = self.store.unfinished()
            for jid, rec in todo:
                scope = Scope.of(rec["user_id"], rec["tenant"])
                log.warning("repairing an interrupted %s of user %r", rec.get("op"), scope.user_id)
                self._repair(scope, str(rec.get("op")))
                self.store.end(jid)
        return len(todo)

    def repair(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Find and drop points the engine can no longer read, and make the users they touched
        consistent again.

        A store written by an older version could hold a fact whose metadata nested too deep
        for the engine: its write-ahead log is trimmed when the store opens (reported here
        under ``wal_repairs``), and a fact whose stored payload cannot be read is found here
        and removed (its collection is rebuilt without it; the edge engine keeps the damaged
        copy beside it). The users whose facts were removed get DELETE events, and their
        concept counts and links are recomputed (as after a crash). ``dry_run`` only reports.
        """
        with self._lock:
            report = self.store.repair(dry_run=dry_run)
            lost = report["unreadable"]
            if dry_run or not lost:
                return report
            scopes = {s.key(): s for s in self.store.users(ids=lost.get(self.store.facts, []))}
            if set(lost) - {self.store.facts, self.store.events, self.store.journal}:
                scopes.update({s.key(): s for s in self.store.users()})  # counts or links lost
            for scope in scopes.values():
                self._repair(scope, "repair")
            self._links.invalidate()
            report["users_repaired"] = len(scopes)
            return report

    def _repair(self, scope: Scope, op: str) -> None:
        if op == "forget":
            self.store.delete_user(scope)
            self._links.invalidate(scope)
            return
        facts = list(self.store.scroll_facts(scope, include_invalid=True, whole_user=True))
        self._links.rebuild(scope, [f for f in facts if f.is_valid])
        history: dict[str, list[dict[str, Any]]] = {}
        for r in self.store.user_points(self.store.events, scope).values():
            history.setdefault(r["fact_id"], []).append(r)
        now = self.now()
        why = {"reason": "recovered after an interrupted write", "recovered": True}
        for f in facts:
            rows = sorted(history.pop(f.id, []), key=lambda r: (r.get("at_ts", 0.0), r.get("seq", 0)))
            kinds = [r["event"] for r in rows]
            new: list[dict[str, Any]] = []
            if "ADD" not in kinds:
                new.append(self._event(f.id, "ADD", None, f.text, now, **why))
                rows, kinds = [], []
            else:
                i = len(kinds) - 1 - kinds[::-1].index("ADD")
                rows, kinds = rows[i:], kinds[i:]
                texts = [r.get("new_text") for r in rows if r["event"] in ("ADD", "UPDATE")]
                if texts[-1] != f.text:
                    new.append(self._event(f.id, "UPDATE", texts[-1], f.text, now, **why))
            for _ in range(f.confirmations - 1 - kinds.count("REINFORCE")):
                new.append(self._event(f.id, "REINFORCE", f.text, f.text, now, **why))
            if not f.is_valid and "SUPERSEDE" not in kinds:
                new.append(
                    self._event(f.id, "SUPERSEDE", f.text, None, now, superseded_by=f.superseded_by, **why)
                )
            self.store.add_events(f.scope, new)
        for fid, rows in history.items():  # history of facts no longer stored: deleted
            rows.sort(key=lambda r: (r.get("at_ts", 0.0), r.get("seq", 0)))
            if rows[-1]["event"] != "DELETE":
                last = rows[-1]
                fscope = Scope.of(last["user_id"], last["tenant"], last.get("agent_id"), last.get("run_id"))
                gone = self._event(fid, "DELETE", last.get("new_text"), None, now, **why)
                self.store.add_events(fscope, [gone])

    # -- input checks -------------------------------------------------------------------------
    def _messages(self, messages: Any) -> list[Message]:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if isinstance(messages, (Mapping, Message)):
            messages = [messages]
        if not isinstance(messages, Sequence) or isinstance(messages, (bytes, bytearray)):
            raise InvalidInputError("messages must be a string or a list of {'role', 'content'} mappings")
        if not messages:
            raise InvalidInputError("messages is empty: nothing to remember")
        if len(messages) > self.config.max_add_turns:
            raise InvalidInputError(
                f"{len(messages)} turns in one add; the limit is {self.config.max_add_turns} "
                "(MemoryConfig.max_add_turns): split them over several calls. Nothing was stored."
            )
        out = []
        for i, m in enumerate(messages):
            if isinstance(m, Message):
                msg = m
            elif isinstance(m, Mapping):
                content = m.get("content")
                if not isinstance(content, str):
                    raise InvalidInputError(
                        f"message {i}: content must be a string, got {type(content).__name__}"
                    )
                role = m.get("role", "user")
                if role not in ("user", "assistant", "system"):
                    raise InvalidInputError(f"message {i}: role must be user, assistant or system")
                name = m.get("name")
                if name is not None and not isinstance(name, str):
                    raise InvalidInputError(f"message {i}: name must be a string")
                msg = Message(role=role, content=content, name=name)
            else:
                raise InvalidInputError(
                    f"message {i} must be a mapping with role and content, got {type(m).__name__}"
                )
            if not msg.content.strip():
                raise InvalidInputError(f"message {i} is empty or whitespace")
            if "\x00" in msg.content:
                raise InvalidInputError(f"message {i} contains a NUL character")
            _utf8(msg.content, f"message {i}")
            _utf8(msg.name or "", f"message {i} name")
            if len(msg.content) > self.config.max_message_chars:
                raise InvalidInputError(
                    f"message {i} has {len(msg.content)} characters; the limit is "
                    f"{self.config.max_message_chars} (MemoryConfig.max_message_chars). Split it "
                    "into turns: nothing was stored."
                )
            out.append(msg)
        total = sum(len(m.content) for m in out)
        if total > self.config.max_add_chars:
            raise InvalidInputError(
                f"{total} characters in one add; the limit is {self.config.max_add_chars} "
                "(MemoryConfig.max_add_chars): split them over several calls. Nothing was stored."
            )
        return out

    @staticmethod
    def _concepts(concepts: Iterable[str] | None) -> list[str]:
        if concepts is None:
            return []
        if isinstance(concepts, str):
            concepts = [concepts]
        if not isinstance(concepts, Iterable) or isinstance(concepts, (bytes, bytearray, Mapping)):
            raise InvalidInputError(f"concepts must be a list of strings, got {type(concepts).__name__}")
        out: list[str] = []
        for c in concepts:
            if not isinstance(c, str):
                raise InvalidInputError(f"concepts must be strings, got {type(c).__name__}")
            n = normalize_concept(_utf8(c, "a concept"))
            if n and n not in out:
                out.append(n)
        if len(out) > _MAX_CONCEPTS:
            raise InvalidInputError(f"at most {_MAX_CONCEPTS} concepts per fact, got {len(out)}")
        return out

    @staticmethod
    def _text(text: Any, what: str = "text") -> str:
        if not isinstance(text, str):
            raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidInputError(f"{what} is empty or whitespace")
        return _utf8(text, what)

    @staticmethod
    def _limit(limit: Any) -> int:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be an integer from 1 to 1000, got {limit!r}")
        return limit

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
        msgs = self._messages(messages)
        meta = validate_metadata(metadata)
        extra_concepts = self._concepts(concepts)
        when = self.now() if timestamp is None else _as_datetime(timestamp)
        result = AddResult(extractor="raw" if infer is False else self.extractor.name)
        with self._lock:
            if infer is False:
                facts = [
                    ExtractedFact(
                        text=m.content,
                        category=Category.OTHER,
                        concepts=extra_concepts or candidate_phrases(m.content)[:8],
                        source_turns=[i],
                    )
                    for i, m in enumerate(msgs)
                    if m.role == "user"
                ]
            else:
                try:
                    extraction = self.extractor.extract(msgs, when)
                except LLMError as e:
                    if _pending_id is not None:
                        self.store.note_pending_failure(_pending_id, f"{type(e).__name__}: {e}")
                        raise ExtractionPendingError(f"still failing: {e}", pending_id=_pending_id) from e
                    pid = self._keep_pending(scope, msgs, meta, extra_concepts, when, e)
                    raise ExtractionPendingError(
                        f"extraction failed ({e}); the turns were kept as pending {pid}: "
                        "Memory.retry_pending() (mem-pipeline retry-pending) processes them later",
                        pending_id=pid,
                    ) from e
                result.llm_calls += extraction.llm_calls
                result.prompt_tokens += extraction.prompt_tokens
                result.completion_tokens += extraction.completion_tokens
                facts = self._grounded(extraction.facts, msgs, result)
                for f in facts:
                    f.concepts = [
                        c
                        for c in dict.fromkeys([normalize_concept(c) for c in f.concepts] + extra_concepts)
                        if c
                    ]
            if not facts:
                return result
            texts = [self._embed_text(f, msgs, infer is False) for f in facts]
            # one embedding call per add: the facts, and the names of concepts new to this user
            # (the concept layer then finds their vectors in the cache)
            names = self._links.unknown(scope, [c for f in facts for c in f.concepts])
            vectors = self._embed.embed([*texts, *names])[: len(texts)]
            recent: dict[Any, list[dict[str, Any]]] = {}  # this call's view of the latest turns
            with self._intent(scope, "add"):
                for fact, text, vec in zip(facts, texts, vectors):
                    speaker = msgs[fact.source_turns[0]].name if fact.source_turns else None
                    fmeta = dict(meta)
                    if speaker and "speaker" not in fmeta:
                        fmeta["speaker"] = speaker
                    if infer is False:
                        decision = Decision("ADD", reason="raw turn")
                    else:
                        decision = self._decide(scope, fact, vec, result)
                    origin = (
                        "raw" if infer is False else ("llm" if self.extractor.name == "llm" else "offline")
                    )
                    # a raw user turn that answers the assistant's question just before it in
                    # this call: the question lends its words to the turn's lexical entry
                    i = fact.source_turns[0] if fact.source_turns else 0
                    prior = msgs[i - 1] if infer is False and i > 0 else None
                    asks = prior is not None and prior.role == "assistant" and "?" in prior.content
                    asked = prior.content if prior is not None and asks else None
                    result.events.extend(
                        self._apply(scope, fact, text, vec, decision, fmeta, when, origin, recent, asked)
                    )
        return result

    def _decide(self, scope: Scope, fact: ExtractedFact, vec: VectorLike, result: AddResult) -> Decision:
        """Reconcile one fact; LLM cost is added to ``result``. If the LLM reconciler fails
        after its retries, the offline rule decides (the fact is never dropped)."""
        neighbours = self._neighbours(scope, vec)
        kw: dict[str, Any] = {
            "dedupe_threshold": self.config.dedupe_threshold,
            "related_threshold": self.config.related_threshold,
        }
        rec = self.reconciler
        before = (
            getattr(rec, "calls", 0),
            getattr(rec, "prompt_tokens", 0),
            getattr(rec, "completion_tokens", 0),
        )
        try:
            decision = offline_decision(fact, neighbours, reconciler=rec, **kw)
        except LLMError as e:
            log.warning("LLM reconciliation failed, offline rule used: %s", e)
            d = offline_decision(fact, neighbours, **kw)
            decision = Decision(d.action, d.target, d.text, f"LLM failed ({e}); offline rule: {d.reason}")
        result.llm_calls += getattr(rec, "calls", 0) - before[0]
        result.prompt_tokens += getattr(rec, "prompt_tokens", 0) - before[1]
        result.completion_tokens += getattr(rec, "completion_tokens", 0) - before[2]
        return decision

    # -- pending turns ------------------------------------------------------------------------
    def _keep_pending(
        self,
        scope: Scope,
        msgs: Sequence[Message],
        meta: dict[str, Any],
        concepts: list[str],
        when: datetime,
        error: Exception,
    ) -> str:
        return self.store.add_pending(
            scope,
            {
                "messages": [m.model_dump() for m in msgs],
                "metadata": meta,
                "concepts": concepts,
                "timestamp": when.isoformat(),
                "error": f"{type(error).__name__}: {error}"[:2000],
                "created_ts": self.now().timestamp(),
                "attempts": 1,
            },
        )

    def pending(self, *, user_id: str, tenant: str = "default") -> list[dict[str, Any]]:
        """The turns of this user still waiting for extraction (with the last error)."""
        scope = Scope.of(user_id, tenant)
        with self._lock:
            return [{"id": pid, **rec} for pid, rec in self.store.list_pending(scope)]

    def retry_pending(self, *, user_id: str | None = None, tenant: str = "default") -> list[AddResult]:
        """Process pending turns (one user's, or everyone's), oldest first.

        A turn that succeeds is removed from pending; one that fails again stays, with the new
        error and its attempt count, and the others are still tried.
        """
        scope = Scope.of(user_id, tenant) if user_id is not None else None
        results = []
        with self._lock:
            rows = self.store.list_pending(scope)
            for pid, rec in rows:
                try:
                    res = self.add(
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
                except ExtractionPendingError:
                    continue
                self.store.delete_pending([pid])
                results.append(res)
        return results

    def _grounded(
        self, facts: list[ExtractedFact], msgs: Sequence[Message], result: AddResult
    ) -> list[ExtractedFact]:
        """Drop facts the user's own words do not support (each logged and counted)."""
        user_texts = grounding_sources(msgs)
        kept = []
        for f in facts:
            reason = ground(f.text, user_texts)
            if reason is None:
                kept.append(f)
            else:
                log.info("rejected ungrounded fact %r: %s", f.text, reason)
                result.events.append(
                    AddEvent(event="REJECT", id=None, text=f.text, category=f.category, reason=reason)
                )
        return kept

    @staticmethod
    def _embed_text(fact: ExtractedFact, msgs: Sequence[Message], raw: bool) -> str:
        """What is embedded and indexed: a raw turn as "speaker: text"; an inferred fact in
        the third person ("I" -> "the user"), so facts compare in one voice (see
        ``eval/dedupe_threshold.py``: paraphrase median cosine 0.70 -> 0.89)."""
        if raw:
            name = msgs[fact.source_turns[0]].name if fact.source_turns else None
            return f"{name}: {fact.text}" if name else fact.text
        return third_person(fact.text)

    def _neighbours(self, scope: Scope, vec: VectorLike) -> list[tuple[StoredFact, float]]:
        cands = self.store.search(scope, dense=vec, sparse=None, limit=5)
        pairs = [(c.fact, float(c.dense or 0.0)) for c in cands]
        pairs.sort(key=lambda p: p[1], reverse=True)
        return pairs

    def _apply(
        self,
        scope: Scope,
        fact: ExtractedFact,
        embed_text: str,
        vec: VectorLike,
        decision: Decision,
        meta: dict[str, Any],
        when: datetime,
        origin: str,
        recent: dict[Any, list[dict[str, Any]]] | None = None,
        asked: str | None = None,
    ) -> list[AddEvent]:
        now = self.now()
        if decision.action == "NOOP":
            return [
                AddEvent(
                    event="NOOP",
                    id=decision.target.id if decision.target else None,
                    text=fact.text,
                    category=fact.category,
                    reason=decision.reason,
                )
            ]
        if decision.action == "REINFORCE" and decision.target is not None:
            return [self._reinforce(scope, decision.target, fact, when, decision.reason)]
        if decision.action == "UPDATE" and decision.target is not None:
            new_text = decision.text or fact.text
            self._rewrite(scope, decision.target, new_text, fact.concepts, now, reason=decision.reason)
            return [
                AddEvent(
                    event="UPDATE",
                    id=decision.target.id,
                    text=new_text,
                    category=decision.target.category,
                    reason=decision.reason,
                )
            ]
        # ADD, possibly superseding a target; an exact repeat (``store.repeat_key``) reinforces
        same = (scope, origin, fact.text, embed_text, meta)
        existing = self.store.find_repeat(scope, repeat_key(*same), legacy_id(*same))
        if existing is not None:
            return [self._reinforce(scope, existing, fact, when, "exact repeat")]
        fid = new_fact_id()
        index_text, reply_to = embed_text, None
        if origin == "raw":
            index_text, reply_to = self._place_turn(scope, fid, fact.text, embed_text, meta, recent, asked)
        stored = StoredFact(
            id=fid,
            text=fact.text,
            category=fact.category,
            concepts=fact.concepts[:_MAX_CONCEPTS],
            scope=scope,
            metadata=meta,
            created_at=when,
            updated_at=now,
            last_seen_at=when,
            valid_from=when,
            origin=origin,  # type: ignore[arg-type]
            reply_to=reply_to,
        )
        self.store.upsert_facts([(stored, vec, embed_text, index_text)])
        self._links.update(scope, [], stored.concepts, when, fact_id=stored.id)
        events: list[dict[str, Any]] = [self._event(fid, "ADD", None, fact.text, now, reason=decision.reason)]
        out = [AddEvent(event="ADD", id=fid, text=fact.text, category=fact.category, reason=decision.reason)]
        if decision.action == "SUPERSEDE" and decision.target is not None:
            old = decision.target
            self._links.update(scope, old.concepts, [], when, fact_id=old.id)  # current facts only
            self.store.set_fact_fields(
                old.id,
                {
                    "valid": False,
                    "invalid_ts": when.timestamp(),
                    "superseded_by": fid,
                    "updated_ts": now.timestamp(),
                },
            )
            events.append(
                self._event(
                    old.id,
                    "SUPERSEDE",
                    old.text,
                    fact.text,
                    now,
                    superseded_by=fid,
                    reason=decision.reason,
                )
            )
            out = [
                AddEvent(
                    event="SUPERSEDE",
                    id=fid,
                    text=fact.text,
                    category=fact.category,
                    previous_id=old.id,
                    reason=decision.reason,
                )
            ]
        self.store.add_events(scope, events)
        return out

    def _place_turn(
        self,
        scope: Scope,
        fid: str,
        text: str,
        own: str,
        meta: Mapping[str, Any],
        recent: dict[Any, list[dict[str, Any]]] | None = None,
        asked: str | None = None,
    ) -> tuple[str, str | None]:
        """Where a new raw turn sits among the turns before it: its lexical index text, and the
        turn it answers (``StoredFact.reply_to``).

        **Context.** Neighbouring raw turns lend their words to each other's lexical entry: the
        new turn's entry gets the text of the previous ``context_window`` turns; each of those
        gets the new turn's text appended (until it has ``context_window`` followers). Only the
        lexical (sparse) vector and ``index_text`` change: the dense vector stays the turn's
        own, so semantic similarity is never diluted by neighbours. Lent lines are marked
        (:func:`~mem_pipeline._text.as_context`) and count half as much as the turn's own words,
        so a turn that says a thing outranks the turns that merely sit next to it (LoCoMo
        tuning split R@5 .745 -> .761 at the same window).

        **The assistant's question.** Assistant turns are not stored, but a user turn that
        answers the assistant's question of the same ``add`` call (``asked``: "What's your
        dog called?" / "Pepper.") gets the question's words as lent context too (with a
        ``context_window``), so "what is my dog's name?" finds "Pepper.".

        **Reply.** When the turn just before (same scope and session) asked a question ("?")
        and someone else said it, this turn is taken as its answer: "What's your favourite
        dish from the show?" / "Coconut milk ice cream, no contest." Search lends the answer
        part of the question's relevance (``MemoryConfig.reply_boost``), since the question
        holds the words a later query uses and the answer holds what it wants.

        ``recent`` is one ``add`` call's view of the latest turns per session: the store is
        read for the first turn of a session only, later turns of the same call see the
        turns this call wrote (the call holds the lock, so nothing else writes meanwhile).
        """
        from ._text import as_context

        w = self.config.context_window
        session = session_key(meta.get("session"))
        if recent is not None and session in recent:
            before = recent[session]
        else:
            before = self.store.recent_raw(scope, session, max(w, 1))
        before = [p for p in before if p["id"] != fid]
        reply_to = before[0]["id"] if before and _answers(before[0], meta) else None
        lent_to = before[:w]
        for prev in lent_to:
            if int(prev.get("ctx_after", 0)) >= w:
                continue
            ctx = prev.get("index_text", prev["text"]) + "\n" + as_context(own)
            after = int(prev.get("ctx_after", 0)) + 1
            self.store.set_lexical(prev["id"], ctx, {"ctx_after": after})
            prev["index_text"], prev["ctx_after"] = ctx, after
        lent = [as_context(p.get("embed_text") or p["text"]) for p in reversed(lent_to)]
        if asked and w:
            lent.append(as_context(asked))
        index_text = "\n".join([*lent, own])
        if recent is not None:
            mine = {
                "id": fid,
                "text": text,
                "embed_text": own,
                "index_text": index_text,
                "ctx_after": 0,
                "metadata": dict(meta),
            }
            recent[session] = [mine, *before][: max(w, 1)]
        return index_text, reply_to

    def _reinforce(
        self, scope: Scope, target: StoredFact, fact: ExtractedFact, when: datetime, reason: str
    ) -> AddEvent:
        now = self.now()
        concepts = list(dict.fromkeys([*target.concepts, *fact.concepts]))[:_MAX_CONCEPTS]
        last_seen = max(target.last_seen_at, when)
        self.store.set_fact_fields(
            target.id,
            {
                "confirmations": target.confirmations + 1,
                "last_seen_ts": last_seen.timestamp(),
                "updated_ts": now.timestamp(),
                "concepts": concepts,
            },
        )
        self._links.update(scope, target.concepts, concepts, when, fact_id=target.id)
        self.store.add_events(
            scope,
            [
                self._event(
                    target.id,
                    "REINFORCE",
                    target.text,
                    fact.text,
                    now,
                    reason=reason,
                    confirmations=target.confirmations + 1,
                )
            ],
        )
        return AddEvent(
            event="REINFORCE", id=target.id, text=fact.text, category=target.category, reason=reason
        )

    def _rewrite(
        self,
        scope: Scope,
        target: StoredFact,
        text: str,
        concepts: Sequence[str],
        now: datetime,
        *,
        reason: str = "",
        event: str = "UPDATE",
    ) -> None:
        index_text = text if target.origin == "raw" else third_person(text)
        vec = self._embed.embed_one(index_text)
        updated = target.model_copy(
            update={
                "text": text,
                "updated_at": now,
                "concepts": list(dict.fromkeys([*target.concepts, *concepts]))[:_MAX_CONCEPTS],
            }
        )
        self.store.upsert_facts([(updated, vec, index_text, index_text)])
        self._links.update(scope, target.concepts, updated.concepts, now, fact_id=target.id)
        self.store.add_events(scope, [self._event(target.id, event, target.text, text, now, reason=reason)])

    @staticmethod
    def _event(
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
        reinforce: bool | None = None,
        expand: bool | None = None,
    ) -> Recall:
        """The facts most relevant to ``query`` in this scope, scored and explained.

        Direct hits (at most ``limit``) come first; with ``expand`` (default
        ``config.expand_links``) up to ``config.association_limit`` association hits follow,
        each with the concept path that reached it (``hit.via``)."""
        from ._text import date_ranges
        from .recall import fill_scores

        scope = Scope.of(user_id, tenant, agent_id, run_id)
        query = self._text(query, "query")
        limit = self._limit(limit)
        cfg = self.config
        at = self.now() if now is None else _as_datetime(now, "now")
        asking_name = bool(cfg.name_boost) and asks_name(query)
        dense_text, named, people = self._dense_query(scope, query, asking_name)
        vec = self._embed.embed_one(dense_text)
        sparse = sparse_query(query) if cfg.use_sparse else None
        # the query's concepts feed the concept boost and the expansion; with both off,
        # matching them (which may embed query n-grams) would be work for nothing
        expanding = cfg.expand_links if expand is None else expand
        use_concepts = bool(cfg.concept_boost or expanding)
        with self._lock:
            found, rest = self._links.query_terms(scope, query) if use_concepts else ({}, [])
            # embedding the n-grams left to match by name runs beside the search and ranking
            # below (the model releases the GIL; on 2 cores this hides most of its cost)
            grams = self._helper().submit(self._embed.embed, rest) if rest else None
            cands = self.store.search(
                scope,
                dense=vec,
                sparse=sparse,
                limit=max(limit * 4, cfg.candidate_pool),
                filters=filters,
                include_invalid=include_invalid,
            )
            # a turn found by one search alone gets its true score from the other, so that
            # min-max scales both signals over the same candidates (see ``fill_scores``)
            no_dense = [c.fact.id for c in cands if c.dense is None]
            no_lexical = [c.fact.id for c in cands if c.lexical is None] if sparse else []
            if no_dense or no_lexical:
                dense_of, lexical_of = self.store.scores_of(
                    scope, dense=vec, dense_ids=no_dense, sparse=sparse, sparse_ids=no_lexical
                )
                fill_scores(cands, dense=dense_of, lexical=lexical_of)
            ranked = rank(
                cands,
                now=at,
                half_lives=cfg.half_lives_days,
                dense_weight=cfg.dense_weight,
                decay_floor=cfg.decay_floor,
                use_decay=cfg.use_decay,
                named_speakers=named,
                speaker_boost=cfg.speaker_boost,
                dates=date_ranges(query, at) if cfg.date_boost else (),
                date_boost=cfg.date_boost,
                session_boost=cfg.session_boost,
                reply_boost=cfg.reply_boost,
                when_boost=cfg.when_boost if cfg.when_boost and asks_when(query) else 0.0,
                name_boost=cfg.name_boost if asking_name else 0.0,
                people=people,
            )
            qc = (
                self._links.name_matches(scope, found, grams.result() if grams else None)
                if use_concepts
                else {}
            )
            if qc and cfg.concept_boost:
                spec = self._links.specificity(scope, list(qc))
                ranked = boost_by_concepts(ranked, {c: w * spec[c] for c, w in qc.items()}, cfg.concept_boost)
            hits = ranked[:limit]
            if hits and (cfg.reinforce_on_recall if reinforce is None else reinforce):
                by_id = {c.fact.id: c.fact for c in cands}
                for h in hits:
                    self.store.set_fact_fields(h.id, {"recalls": by_id[h.id].recalls + 1})
            return self._associate(scope, query, hits, at, expand, qc, {c.fact.id: c.fact for c in cands})

    def _dense_query(
        self, scope: Scope, query: str, need_speakers: bool = False
    ) -> tuple[str, frozenset[str], frozenset[str]]:
        """What the dense search embeds, the speakers (lowercased) the query names, and all the
        scope's speakers (lowercased; read when the speaker signal is on or ``need_speakers``).

        With the speaker signal on, the query's words are matched against the scope's
        speakers (``QdrantStore.speakers``, a facet over an index: no facts are read); a named
        speaker's turns get the speaker boost in ``rank``, and with
        ``config.dense_without_speakers`` the names are left out of the text the dense search
        embeds (``_text.without_names``): the boost matches the person, the vector what is
        asked about. A name in the vector makes short turns that only say it ("Thanks,
        Caroline!") look like the answer."""
        cfg = self.config
        if not (cfg.speaker_boost or need_speakers):
            return query, frozenset(), frozenset()
        with self._lock:  # a store read, like every other (the embedding after it runs unlocked)
            speakers = self.store.speakers(scope)
        people = frozenset(sp.lower() for sp in speakers)
        qnames = name_tokens(query)
        named = [sp for sp in speakers if sp.lower() in qnames] if cfg.speaker_boost else []
        if not named:
            return query, frozenset(), people
        text = without_names(query, named) if cfg.dense_without_speakers else query
        return text, frozenset(sp.lower() for sp in named), people

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
        fid = self._id(id)
        with self._lock:
            found = self.store.get_facts(scope, [fid])
        if not found:
            raise NotFoundError(f"no fact {fid} for user {scope.user_id!r} in tenant {scope.tenant!r}")
        return found[0]

    @staticmethod
    def _id(id: Any) -> str:
        if not isinstance(id, str):
            raise InvalidInputError(f"a fact id is a UUID string, got {type(id).__name__}")
        try:
            return str(uuid.UUID(id))
        except ValueError as e:
            raise InvalidInputError(f"{id!r:.60} is not a fact id (a UUID)") from e

    def get_all(
        self,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
        filters: Mapping[str, Any] | None = None,
    ) -> list[StoredFact]:
        """Every fact of this scope, oldest first (superseded ones only when asked). For a
        scope with many facts, :meth:`page` reads them a page at a time."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        with self._lock:
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
    ) -> FactPage:
        """A page of this scope's facts, oldest first (the order of :meth:`get_all`).

        ``cursor`` is the ``next_cursor`` of the previous page (None: the first page). A fact
        added while paging appears on a later page if it is newer than the cursor; none is
        returned twice."""
        scope = Scope.of(user_id, tenant, agent_id, run_id)
        limit = self._limit(limit)
        after = _decode_cursor(cursor)
        with self._lock:
            keys = self.store.fact_order(scope, include_invalid=include_invalid, filters=filters)
            start = bisect.bisect_right(keys, after) if after is not None else 0
            chosen = keys[start : start + limit]
            by_id = {f.id: f for f in self.store.get_facts(scope, [fid for _, fid in chosen])}
        facts = [by_id[fid] for _, fid in chosen if fid in by_id]
        more = start + limit < len(keys)
        return FactPage(facts=facts, next_cursor=_encode_cursor(chosen[-1]) if more and chosen else None)

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
        text = self._text(text)
        if len(text) > self.config.max_message_chars:
            raise InvalidInputError("text is longer than max_message_chars")
        with self._lock:
            fact = self.get(id, user_id=user_id, tenant=tenant, agent_id=agent_id, run_id=run_id)
            with self._intent(fact.scope, "update"):
                self._rewrite(fact.scope, fact, text, [], self.now(), reason="update()")
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
        with self._lock:
            fact = self.get(id, user_id=user_id, tenant=tenant, agent_id=agent_id, run_id=run_id)
            with self._intent(fact.scope, "delete"):
                self._delete_facts(fact.scope, [fact], "delete()")

    def _delete_facts(self, scope: Scope, facts: Sequence[StoredFact], reason: str) -> None:
        now = self.now()
        self.store.delete_facts([f.id for f in facts])
        for f in facts:
            if f.is_valid:  # a superseded fact's links were already removed
                self._links.update(scope, f.concepts, [], now, fact_id=f.id)
        self.store.add_events(
            scope, [self._event(f.id, "DELETE", f.text, None, now, reason=reason) for f in facts]
        )

    # -- associations and feedback -----------------------------------------------------------
    def _associate(
        self,
        scope: Scope,
        query: str,
        hits: list[Hit],
        at: datetime,
        expand_links: bool | None,
        qc: dict[str, float],
        seen: Mapping[str, StoredFact] | None = None,
    ) -> Recall:
        """Add the query's concepts, the concepts its links reach, and association hits (facts
        reached only through an expanded concept) after the direct hits. ``seen``: facts the
        search already read (not read again)."""
        cfg = self.config
        if not (cfg.expand_links if expand_links is None else expand_links) or not qc:
            return Recall(query=query, hits=hits, query_concepts=qc)
        exp = expand(
            qc,
            lambda cs: self._links.neighbours(scope, cs, at),
            max_hops=cfg.max_hops,
            fanout=cfg.link_fanout,
            max_expanded=cfg.max_expanded_concepts,
        )
        expanded = {c: round(e.weight, 4) for c, e in exp.items()}
        if cfg.association_limit == 0:
            return Recall(query=query, hits=hits, query_concepts=qc, expanded_concepts=expanded)
        direct = {h.id for h in hits}
        # a fact tagged with a query concept but missed by the text search is reached through
        # that concept itself (path of one); others through the links (path of two or three)
        reach = {c: Expansion(c, w, [c]) for c, w in qc.items()}
        reach.update(exp)
        # a concept on many facts (a speaker's name) says little about which one is meant: its
        # facts rank by weight x specificity, and only the most telling concepts are read
        spec = self._links.specificity(scope, list(reach))
        telling = sorted(reach, key=lambda c: -reach[c].weight * spec[c])[: 2 * cfg.association_limit]
        # score every candidate from a few payload fields; read the full facts of the winners
        scored: list[tuple[float, str, Expansion, float, float]] = []
        seen = seen or {}
        ids = self._links.fact_ids(scope, telling, 20 * cfg.association_limit)
        briefs = {fid: _brief(seen[fid]) for fid in ids if fid in seen and seen[fid].is_valid}
        briefs.update(self.store.fact_briefs(scope, [fid for fid in ids if fid not in seen]))
        for fid, p in briefs.items():
            if fid in direct:
                continue
            best = max(
                (reach[c] for c in p.get("concepts") or [] if c in telling),
                key=lambda e: e.weight * spec[e.concept],
            )
            category = str(p.get("category", "other"))
            last_seen = p.get("last_seen_ts") or p["created_ts"]
            d = (
                recency(
                    datetime.fromtimestamp(float(last_seen), tz=timezone.utc),
                    at,
                    half_life_days=cfg.half_life(category),
                    floor=cfg.decay_floor,
                )
                if cfg.use_decay
                else 1.0
            )
            rf = (
                reinforcement(
                    int(p.get("confirmations", 1)),
                    int(p.get("recalls", 0)),
                    valence=float(p.get("valence", 0.0)),
                    importance=None if p.get("importance") is None else float(p["importance"]),
                )
                if cfg.use_decay
                else 1.0
            )
            scored.append((best.weight * spec[best.concept] * d * rf, fid, best, d, rf))
        scored.sort(key=lambda t: (-t[0], t[1]))
        scored = scored[: cfg.association_limit]
        winners = {t[1]: seen[t[1]] for t in scored if t[1] in seen}
        winners.update(
            {f.id: f for f in self.store.get_facts(scope, [t[1] for t in scored if t[1] not in seen])}
        )
        assoc: list[Hit] = []
        for score, fid, best, d, rf in scored:
            if fid not in winners:  # removed between the two reads (another writer)
                continue
            parts = ScoreParts(association=best.weight, decay=d, reinforcement=rf)
            via = Via(query_concept=best.path[0], path=best.path, weights=best.weights)
            source: Source = "association" if len(best.path) > 1 else "concept"
            assoc.append(hit_from_fact(winners[fid], score, source, parts, via))
        return Recall(
            query=query,
            hits=[*hits, *assoc[: cfg.association_limit]],
            query_concepts=qc,
            expanded_concepts=expanded,
        )

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
            ids = [h.id for h in recall_or_ids.hits]
            qc = list(recall_or_ids.query_concepts)
        else:
            if isinstance(recall_or_ids, str):
                recall_or_ids = [recall_or_ids]
            if not isinstance(recall_or_ids, Iterable) or isinstance(recall_or_ids, (bytes, Mapping)):
                raise InvalidInputError("feedback takes a Recall or a list of fact ids")
            ids = [self._id(i) for i in recall_or_ids]
            qc = list(self._links.match_query(scope, self._text(query, "query"))) if query else []
        with self._lock:
            facts = self.store.get_facts(scope, ids)  # other users' ids are simply absent
            now = self.now()
            for f in facts:
                self.store.set_fact_fields(f.id, {"valence": max(-1.0, min(1.0, f.valence + 0.2 * amount))})
            targets = {c for f in facts for c in f.concepts}
            moved = self._links.feedback(scope, qc, sorted(targets), amount, now) if qc else 0
        return {"facts": len(facts), "links": moved}

    def forget(self, *, user_id: str, tenant: str = "default") -> int:
        """Remove everything of one user in one tenant: facts, history, pending, links.

        Returns how many facts were removed.
        """
        scope = Scope.of(user_id, tenant)
        with self._lock:
            n = len(list(self.store.scroll_facts(scope, include_invalid=True, whole_user=True)))
            with self._intent(scope, "forget"):
                self.store.delete_user(scope)
                self._links.invalidate(scope)  # the per-process concept caches of the user too
        return n

    def history(self, id: str, *, user_id: str, tenant: str = "default") -> list[HistoryEvent]:
        """Every change to a fact, oldest first (kept after ``delete``; removed by ``forget``)."""
        scope = Scope.of(user_id, tenant)
        fid = self._id(id)
        with self._lock:
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

    def reindex(self, *, user_id: str | None = None, tenant: str = "default", dry_run: bool = False) -> int:
        """Bring facts written by an older version up to date; return how many facts were
        (with ``dry_run``: would be) changed.

        - Lexical vectors that an older version of the lexical analysis built (see
          :data:`~mem_pipeline._text.LEXICAL_VERSION`) are rebuilt from each fact's stored
          index text.
        - Raw turns written before reply links get theirs (``StoredFact.reply_to``: the turn a
          turn answers), found from the order the turns were written, as ``add`` finds it.

        Facts of one user (``user_id`` in ``tenant``, every agent and run) or, with no
        ``user_id``, of every user in the store. Dense vectors are left alone: they are
        checked against the embedder when the store opens. Safe to interrupt and re-run: each
        fact is marked with the version as it is rebuilt, so a second run only does the rest.
        """
        scope = Scope.of(user_id, tenant) if user_id is not None else None
        done: set[str] = set()
        for page in self.store.stale_lexical(scope):
            if dry_run:
                done.update(page)
            else:
                with self._lock:
                    done.update(self.store.rebuild_lexical(page))
        for user in self.store.unlinked_turn_users(scope):
            with self._lock:
                links = self._reply_links(self.store.raw_turns(user))
                if not dry_run:
                    self.store.set_turn_links(links)
            done.update(fid for fid, _ in links)
        return len(done)

    @staticmethod
    def _reply_links(turns: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
        """For each of a user's raw turns (in the order written) not yet linked: the turn it
        answers, found as ``_place_turn`` finds it when a turn is added: the latest earlier
        turn its scope reads (the scope's agent and run when it sets them, any otherwise), of
        its session when it has one."""

        def reads(t: Mapping[str, Any], p: Mapping[str, Any], session: str | int | None) -> bool:
            return all(t.get(k) is None or p.get(k) == t.get(k) for k in ("agent_id", "run_id")) and (
                session is None or (p.get("metadata") or {}).get("session") == session
            )

        links: list[tuple[str, str | None]] = []
        for i, t in enumerate(turns):
            if t.get("turn_links") == TURN_LINKS_VERSION:
                continue
            meta = t.get("metadata") or {}
            session = session_key(meta.get("session"))
            prev = next((turns[j] for j in range(i - 1, -1, -1) if reads(t, turns[j], session)), None)
            links.append((t["id"], prev["id"] if prev is not None and _answers(prev, meta) else None))
        return links

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
        at = self.now() if now is None else _as_datetime(now, "now")
        with self._lock:
            stale = [
                f
                for f in self.store.scroll_facts(scope)
                if decayed_strength(
                    f.last_seen_at,
                    at,
                    half_life_days=self.config.half_life(f.category.value),
                    confirmations=f.confirmations,
                    recalls=f.recalls,
                    valence=f.valence,
                    importance=f.importance,
                )
                < min_strength
            ]
            if stale and not dry_run:
                with self._intent(scope, "delete"):
                    self._delete_facts(scope, stale, f"prune(min_strength={min_strength})")
        return stale
