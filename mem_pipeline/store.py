"""The Qdrant store: collection schema, payload indexes, scoped filters, upsert / search / delete.

Six collections share a prefix:

- ``{prefix}_facts``: one point per fact. Named vectors ``dense`` (cosine) and ``lexical``
  (sparse, ``Modifier.IDF``: Qdrant computes the IDF from its own statistics). The collection's
  metadata records the embedder id and dimension; opening it with another embedder fails.
- ``{prefix}_events``: the history, one point per change of a fact (no vectors).
- ``{prefix}_pending``: turns whose extraction failed, kept until processed (no vectors).
- ``{prefix}_links``: concept links (see ``concepts``), one point per directed pair (no vectors).
- ``{prefix}_concepts``: one point per concept of a user: name, fact count, name embedding.
- ``{prefix}_journal``: one point per write in progress (no vectors): a write spans several
  points and collections, so it is announced here first and cleared when complete; an entry
  left by a crash tells ``Memory.recover`` which user to repair.

Every method takes a :class:`~mem_pipeline.models.Scope` and filters on it; there is no
unscoped read or delete. Errors of the engines are translated into :class:`StoreError`.

Three engines answer the same calls: a Qdrant server (``url=``) and qdrant-client's local mode
through ``QdrantClient``, and qdrant-edge through :class:`~mem_pipeline._edge.EdgeClient`,
which speaks the same subset of that API. So this module is the one implementation of the
store for all three (``resolve_engine`` picks the embedded one).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import QdrantClient, models

from ._edge import EdgeClient, EdgeRecord, is_edge_store, is_local_store, secure_tree
from ._text import LEXICAL_VERSION, normalize_text, sparse_doc
from .errors import EmbedderMismatchError, InvalidInputError, StoreError, StoreLockedError
from .models import Category, Scope, StoredFact

__all__ = ["DEFAULT_ENGINE", "ENGINES", "Candidate", "QdrantStore", "resolve_engine"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
VectorLike = Sequence[float] | npt.NDArray[np.float32]
_SCROLL_PAGE = 4096  # qdrant-client local mode filters every point on each page: few, big pages

ENGINES = ("edge", "local")
#: The embedded engine of a new store, chosen by measurement (``python -m eval.bench``):
#: qdrant-edge is Qdrant's Rust engine in process; "local" is qdrant-client's pure-Python mode.
DEFAULT_ENGINE = "edge"


def resolve_engine(path: str | None, engine: str | None) -> str:
    """The embedded engine for ``path``: an existing store keeps its own; a new one gets
    ``engine`` or :data:`DEFAULT_ENGINE`. Asking for the other engine than the one a store
    was written with is an error (the two formats are not interchangeable)."""
    if engine is not None and engine not in ENGINES:
        raise InvalidInputError(f"engine must be one of {ENGINES}, got {engine!r}")
    found = None
    if path and path != ":memory:":
        found = "edge" if is_edge_store(path) else "local" if is_local_store(path) else None
    if found and engine and found != engine:
        raise StoreError(
            f"the store at {path} was written by the {found!r} engine; open it with "
            f"engine={found!r} (MEM_PIPELINE_ENGINE={found}) or choose another path"
        )
    return found or engine or DEFAULT_ENGINE


@dataclass
class Candidate:
    """A fact found by search, with the raw score of each signal that found it."""

    fact: StoredFact
    dense: float | None = None
    lexical: float | None = None


def _ts(dt: datetime | None) -> float | None:
    return None if dt is None else dt.timestamp()


def _dt(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(float(ts), tz=timezone.utc)


#: Facts written before ids were random had ``uuid5(_LEGACY_NAMESPACE, scope key + text)``
#: ids, which gave a fact's text away to anyone holding its id (see :func:`repeat_key`).
_LEGACY_NAMESPACE = uuid.UUID("5f0c7a52-3d4e-4f6b-9a51-6d2f1b0e8c11")


def repeat_key(scope: Scope, origin: str, text: str, embed_text: str, metadata: Mapping[str, Any]) -> str:
    """What makes two writes "the same fact", as a hash stored (and indexed) with the fact.

    An extracted fact is the same when its normalised text is; a raw turn is an event, so the
    same words said in two turns (other speaker or metadata) are two turns, while re-adding the
    very same turn is idempotent. Fact ids are random (an id tells nothing of the text); this
    key is how ``add`` finds an exact repeat, and an updated fact gets the key of its new text,
    so re-adding its old wording does not reinforce it."""
    key = text if origin != "raw" else json.dumps([embed_text, dict(metadata)], sort_keys=True)
    return hashlib.sha256(
        (scope.key() + "\x1e" + normalize_text(key)).encode("utf-8", "surrogatepass")
    ).hexdigest()


def legacy_id(scope: Scope, origin: str, text: str, embed_text: str, metadata: Mapping[str, Any]) -> str:
    """The id an older version gave this fact (a store it wrote keeps those ids)."""
    key = text if origin != "raw" else json.dumps([embed_text, dict(metadata)], sort_keys=True)
    return str(uuid.uuid5(_LEGACY_NAMESPACE, scope.key() + "\x1e" + normalize_text(key)))


def fact_to_payload(f: StoredFact, embed_text: str, index_text: str) -> dict[str, Any]:
    p: dict[str, Any] = {
        **f.scope.payload(),
        "key_hash": repeat_key(f.scope, f.origin, f.text, embed_text, f.metadata),
        "text": f.text,
        "embed_text": embed_text,
        "index_text": index_text,
        "category": f.category.value,
        "concepts": list(f.concepts),
        "metadata": f.metadata,
        "created_ts": _ts(f.created_at),
        "updated_ts": _ts(f.updated_at),
        "last_seen_ts": _ts(f.last_seen_at),
        "valid_from_ts": _ts(f.valid_from),
        "invalid_ts": _ts(f.invalid_at),
        "valid": f.invalid_at is None,
        "superseded_by": f.superseded_by,
        "confirmations": f.confirmations,
        "recalls": f.recalls,
        "valence": f.valence,
        "importance": f.importance,
        "origin": f.origin,
        "reply_to": f.reply_to,
        "ingest_ns": time.time_ns(),
        "schema": SCHEMA_VERSION,
        "lexical_version": LEXICAL_VERSION,
        "turn_links": TURN_LINKS_VERSION,
    }
    return p


@functools.lru_cache(maxsize=4096)
def _scope(tenant: str, user_id: str, agent_id: str | None, run_id: str | None) -> Scope:
    # scopes are immutable and repeat across a search's candidates: validate each once
    return Scope(tenant=tenant, user_id=user_id, agent_id=agent_id, run_id=run_id)


def payload_to_fact(point_id: Any, p: Mapping[str, Any]) -> StoredFact:
    created = _dt(p["created_ts"])
    assert created is not None
    return StoredFact(
        id=str(point_id),
        text=p["text"],
        category=Category(p.get("category", "other")),
        concepts=list(p.get("concepts") or []),
        scope=_scope(p["tenant"], p["user_id"], p.get("agent_id"), p.get("run_id")),
        metadata=dict(p.get("metadata") or {}),
        created_at=created,
        updated_at=_dt(p.get("updated_ts")) or created,
        last_seen_at=_dt(p.get("last_seen_ts")) or created,
        valid_from=_dt(p.get("valid_from_ts")) or created,
        invalid_at=_dt(p.get("invalid_ts")),
        superseded_by=p.get("superseded_by"),
        confirmations=int(p.get("confirmations", 1)),
        recalls=int(p.get("recalls", 0)),
        valence=float(p.get("valence", 0.0)),
        importance=None if p.get("importance") is None else float(p["importance"]),
        origin=p.get("origin", "raw"),
        reply_to=p.get("reply_to"),
    )


def scope_filter(scope: Scope, *extra: models.Condition) -> models.Filter:
    """Exact match on every scope field the scope sets (tenant and user_id always)."""
    must: list[models.Condition] = [
        models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in scope.payload().items()
    ]
    must.extend(extra)
    return models.Filter(must=must)


def user_filter(scope: Scope) -> models.Filter:
    """Everything of one user in one tenant, whatever the agent or run (for ``forget``)."""
    return models.Filter(
        must=[
            models.FieldCondition(key="tenant", match=models.MatchValue(value=scope.tenant)),
            models.FieldCondition(key="user_id", match=models.MatchValue(value=scope.user_id)),
        ]
    )


def _in_scope(p: Mapping[str, Any], scope: Scope) -> bool:
    return all(p.get(k) == v for k, v in scope.payload().items())


def metadata_conditions(filters: Mapping[str, Any] | None) -> list[models.Condition]:
    """``{"category": "plan", "concepts": ["x"], "session": 3}`` -> Qdrant conditions.

    ``category`` and ``concepts`` match the fact's own fields; any other key matches
    ``metadata.<key>``. A list value matches any of its items.
    """
    out: list[models.Condition] = []
    if filters is not None and not isinstance(filters, Mapping):
        raise InvalidInputError(f"filters must be a mapping, got {type(filters).__name__}")
    for key, value in (filters or {}).items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"filter keys must be non-empty strings, got {key!r}")
        field = key if key in ("category", "concepts") else f"metadata.{key}"
        if isinstance(value, (list, tuple, set)):
            vals = list(value)
            if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in vals):
                raise InvalidInputError(f"filter {key!r}: list items must be str or int")
            out.append(models.FieldCondition(key=field, match=models.MatchAny(any=vals)))
        elif isinstance(value, (str, int, bool)):
            out.append(models.FieldCondition(key=field, match=models.MatchValue(value=value)))
        else:
            raise InvalidInputError(f"filter {key!r}: value must be str, int, bool or a list")
    return out


#: raw turns written since reply links (``StoredFact.reply_to``) carry ``turn_links`` = this;
#: ``Memory.reindex`` links the turns of older stores
TURN_LINKS_VERSION = 1

# fact payload indexes that stores created before them lack (see ``QdrantStore._ensure``);
# faceting needs one: ``speakers`` lists a scope's speakers from it
_LATER_FACT_INDEXES = {
    "metadata.speaker": models.PayloadSchemaType.KEYWORD,
    "key_hash": models.PayloadSchemaType.KEYWORD,
}

_VALID = models.FieldCondition(key="valid", match=models.MatchValue(value=True))
# what a search reads of a fact: all but the texts that were embedded and indexed (the indexed
# text carries the neighbouring turns and is the largest field)
_HIT_PAYLOAD = models.PayloadSelectorExclude(exclude=["embed_text", "index_text"])
_BRIEF_PAYLOAD = models.PayloadSelectorInclude(
    include=[
        *("tenant", "user_id", "agent_id", "run_id", "valid", "concepts", "category"),
        *("created_ts", "last_seen_ts", "confirmations", "recalls", "valence", "importance"),
    ]
)


class QdrantStore:
    """Facts, history, pending turns and concept links in Qdrant (embedded or server)."""

    def __init__(
        self,
        client: QdrantClient | EdgeClient,
        *,
        embedder_id: str,
        dimensions: int,
        prefix: str = "mem_pipeline",
    ) -> None:
        self.client = client
        self.embedder_id = embedder_id
        self.dimensions = dimensions
        self.facts = f"{prefix}_facts"
        self.events = f"{prefix}_events"
        self.pending = f"{prefix}_pending"
        self.links = f"{prefix}_links"
        self.concepts = f"{prefix}_concepts"
        self.journal = f"{prefix}_journal"
        self._path: str | None = None
        with self._translate("opening the collections"):
            self._ensure()

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        *,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        embedder_id: str,
        dimensions: int,
        prefix: str = "mem_pipeline",
        engine: str | None = None,
    ) -> QdrantStore:
        """Open an embedded store at ``path`` (``":memory:"``: a throwaway one) or a server at
        ``url``. ``engine`` picks the embedded engine of a new store (see :func:`resolve_engine`)."""
        if path and url:
            raise InvalidInputError("give either path= (embedded) or url= (server), not both")
        client: QdrantClient | EdgeClient
        try:
            if url:
                client = QdrantClient(url=url, api_key=api_key)
            elif resolve_engine(path, engine) == "edge":
                assert path is not None
                client = EdgeClient(path)
            elif path == ":memory:":
                client = QdrantClient(location=":memory:")
            else:
                assert path is not None
                client = QdrantClient(path=path)
        except RuntimeError as e:
            if "already accessed" in str(e):
                raise StoreLockedError(
                    f"the embedded store at {path} is open in another process. Only one process "
                    "can use an embedded store: close the other one, use another path, or run a "
                    "Qdrant server and pass url= (QDRANT_URL)."
                ) from e
            raise StoreError(f"could not open the store: {e}") from e
        except (StoreError, InvalidInputError):
            raise
        except Exception as e:
            raise StoreError(f"could not open the store at {url or path}: {e}") from e
        try:
            store = cls(client, embedder_id=embedder_id, dimensions=dimensions, prefix=prefix)
        except BaseException:
            with contextlib.suppress(Exception):
                client.close()
            raise
        if path and path != ":memory:" and not url:
            store._path = path
            secure_tree(path)
        return store

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        try:
            yield
        except (StoreError, InvalidInputError):
            raise
        except Exception as e:
            raise StoreError(f"store failed while {what}: {e}") from e

    def _ensure(self) -> None:
        c = self.client
        meta = {
            "embedder": self.embedder_id,
            "dimensions": self.dimensions,
            "schema": SCHEMA_VERSION,
        }
        if c.collection_exists(self.facts):
            have = (
                c.collection_metadata(self.facts)
                if isinstance(c, EdgeClient)
                else c.get_collection(self.facts).config.metadata or {}
            )
            if have.get("embedder") != self.embedder_id or have.get("dimensions") != self.dimensions:
                raise EmbedderMismatchError(
                    f"collection {self.facts!r} holds vectors of embedder "
                    f"{have.get('embedder')!r} ({have.get('dimensions')} dims); this Memory uses "
                    f"{self.embedder_id!r} ({self.dimensions} dims). Use the same embedder, or "
                    "another path / collection_prefix for the new one."
                )
            # indexes added after a store's creation are built when it is next opened (a no-op
            # once they exist)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for field, schema in _LATER_FACT_INDEXES.items():
                    c.create_payload_index(self.facts, field, field_schema=schema)
        else:
            c.create_collection(
                self.facts,
                vectors_config={
                    "dense": models.VectorParams(size=self.dimensions, distance=models.Distance.COSINE)
                },
                sparse_vectors_config={"lexical": models.SparseVectorParams(modifier=models.Modifier.IDF)},
                metadata=meta,
            )
            self._index(
                self.facts,
                {
                    "user_id": models.PayloadSchemaType.KEYWORD,
                    "agent_id": models.PayloadSchemaType.KEYWORD,
                    "run_id": models.PayloadSchemaType.KEYWORD,
                    "category": models.PayloadSchemaType.KEYWORD,
                    "concepts": models.PayloadSchemaType.KEYWORD,
                    "valid": models.PayloadSchemaType.BOOL,
                    "created_ts": models.PayloadSchemaType.FLOAT,
                    "ingest_ns": models.PayloadSchemaType.INTEGER,  # order_by needs a range index
                    "key_hash": models.PayloadSchemaType.KEYWORD,
                    **_LATER_FACT_INDEXES,
                },
            )
        if not c.collection_exists(self.concepts):
            c.create_collection(
                self.concepts,
                vectors_config={
                    "name": models.VectorParams(size=self.dimensions, distance=models.Distance.COSINE)
                },
                metadata=meta,
            )
            self._index(
                self.concepts,
                {"user_id": models.PayloadSchemaType.KEYWORD, "name": models.PayloadSchemaType.KEYWORD},
            )
        for name, fields in (
            (
                self.events,
                {
                    "user_id": models.PayloadSchemaType.KEYWORD,
                    "fact_id": models.PayloadSchemaType.KEYWORD,
                },
            ),
            (self.pending, {"user_id": models.PayloadSchemaType.KEYWORD}),
            (self.journal, {"user_id": models.PayloadSchemaType.KEYWORD}),
            (
                self.links,
                {
                    "user_id": models.PayloadSchemaType.KEYWORD,
                    "source": models.PayloadSchemaType.KEYWORD,
                },
            ),
        ):
            if not c.collection_exists(name):
                c.create_collection(name, vectors_config={}, metadata={"schema": SCHEMA_VERSION})
                self._index(name, fields)

    def _index(self, collection: str, fields: Mapping[str, models.PayloadSchemaType]) -> None:
        """Payload indexes: they matter on a server (local mode ignores them, with a warning)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.client.create_payload_index(
                collection,
                "tenant",
                field_schema=models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            )
            for field, schema in fields.items():
                self.client.create_payload_index(collection, field, field_schema=schema)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self._path:
            secure_tree(self._path)

    # -- repair -------------------------------------------------------------------------------
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
            with self._translate("rebuilding a collection"):
                self.client.delete_collection(name)
                self._ensure()
                for i in range(0, len(points), 256):
                    self.client.upsert(name, points=points[i : i + 256], wait=True)
            report["rebuilt"].append(name)
        return report

    @property
    def engine(self) -> str:
        """``"edge"``, ``"local"`` (qdrant-client's embedded mode) or ``"server"``."""
        if isinstance(self.client, EdgeClient):
            return "edge"
        return "local" if type(self.client._client).__name__ == "QdrantLocal" else "server"

    # -- facts --------------------------------------------------------------------------------
    def upsert_facts(
        self,
        items: Sequence[tuple[StoredFact, VectorLike, str, str]],
    ) -> None:
        """Write facts: (fact, dense vector of ``embed_text``, ``embed_text``, ``index_text``).

        The sparse (lexical) vector is built here from ``index_text``.
        """
        points = []
        for fact, dense, embed_text, index_text in items:
            idx, vals = sparse_doc(index_text)
            if len(dense) != self.dimensions:
                raise EmbedderMismatchError(
                    f"vector of {len(dense)} dims for a collection of {self.dimensions}"
                )
            vec: dict[str, Any] = {"dense": [float(x) for x in dense]}
            if idx:
                vec["lexical"] = models.SparseVector(indices=idx, values=vals)
            points.append(
                models.PointStruct(
                    id=fact.id, vector=vec, payload=fact_to_payload(fact, embed_text, index_text)
                )
            )
        if points:
            with self._translate("writing facts"):
                self.client.upsert(self.facts, points=points, wait=True)

    def recent_raw(self, scope: Scope, session: Any, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` raw turns of this scope (and session, when given), newest first."""
        conds: list[models.Condition] = [
            models.FieldCondition(key="origin", match=models.MatchValue(value="raw")),
            _VALID,
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

    def set_lexical(self, fact_id: str, index_text: str, fields: Mapping[str, Any]) -> None:
        """Replace a fact's lexical vector and indexed text (turn context grew)."""
        self._write_lexical([(fact_id, index_text)], {"index_text": index_text, **fields})

    def _write_lexical(self, items: Sequence[tuple[str, str]], fields: Mapping[str, Any]) -> None:
        """Build the lexical vector of each (fact id, index text) with the current analysis; a
        text without content words has none. ``fields`` (and the analysis version) are set on
        every one of the facts."""
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
        with self._translate("updating lexical vectors"):
            if vectors:
                self.client.update_vectors(self.facts, points=vectors, wait=True)
            if emptied:
                gone = models.PointIdsList(points=list(emptied))
                self.client.delete_vectors(self.facts, vectors=["lexical"], points=gone, wait=True)
            self.client.set_payload(
                self.facts,
                payload={"lexical_version": LEXICAL_VERSION, **fields},
                points=[fid for fid, _ in items],
                wait=True,
            )

    def stale_lexical(self, scope: Scope | None) -> Iterator[list[str]]:
        """Pages of the ids of facts whose lexical vector was built by an older analysis
        (:data:`~mem_pipeline._text.LEXICAL_VERSION`), of this user (``scope``'s tenant and
        user, every agent and run) or, with ``None``, of every user."""
        current = models.FieldCondition(key="lexical_version", match=models.MatchValue(value=LEXICAL_VERSION))
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
        flt.must += [models.FieldCondition(key="origin", match=models.MatchValue(value="raw")), _VALID]
        turns = [{"id": str(r.id), **(r.payload or {})} for r in self._scroll(self.facts, flt)]
        turns.sort(key=lambda t: int(t.get("ingest_ns", 0)))
        return turns

    def set_turn_links(self, links: Sequence[tuple[str, str | None]]) -> None:
        """Record each (turn id, the id of the turn it answers or None) and mark it linked."""
        unlinked = [fid for fid, reply in links if reply is None]
        mark = {"turn_links": TURN_LINKS_VERSION}
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
            if (p := r.payload or {}).get("lexical_version") != LEXICAL_VERSION
        ]
        if items:
            self._write_lexical(items, {})
        return [fid for fid, _ in items]

    def set_fact_fields(self, fact_id: str, fields: Mapping[str, Any]) -> None:
        with self._translate("updating a fact"):
            self.client.set_payload(self.facts, payload=dict(fields), points=[fact_id], wait=True)

    def find_repeat(self, scope: Scope, key_hash: str, old_id: str) -> StoredFact | None:
        """The current fact of ``scope`` that a write with this :func:`repeat_key` repeats: one
        stored with the same key, or one an older version stored under ``old_id`` (its
        :func:`legacy_id`) before keys were recorded."""
        flt = scope_filter(scope, _VALID)
        flt.should = [
            models.FieldCondition(key="key_hash", match=models.MatchValue(value=key_hash)),
            models.HasIdCondition(has_id=[old_id]),
        ]
        with self._translate("looking for a repeat"):
            recs, _ = self.client.scroll(self.facts, scroll_filter=flt, limit=4, with_payload=_HIT_PAYLOAD)
        for r in recs:
            p = r.payload or {}
            if p.get("key_hash", key_hash) == key_hash:  # a legacy fact has no key: its id matched
                return payload_to_fact(r.id, p)
        return None

    def get_facts(self, scope: Scope, ids: Sequence[str]) -> list[StoredFact]:
        """The facts with these ids that belong to ``scope`` (others are silently absent)."""
        if not ids:
            return []
        with self._translate("reading facts"):
            recs = self.client.retrieve(self.facts, ids=list(ids), with_payload=_HIT_PAYLOAD)
        return [payload_to_fact(r.id, r.payload or {}) for r in recs if _in_scope(r.payload or {}, scope)]

    def fact_briefs(self, scope: Scope, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For the current facts of ``scope`` among ``ids``: only the fields that score a fact
        (concepts, category, times, counts) -- candidates are many, winners few, so the full
        facts are read for the winners only (:meth:`get_facts`)."""
        if not ids:
            return {}
        with self._translate("reading facts"):
            recs = self.client.retrieve(self.facts, ids=list(ids), with_payload=_BRIEF_PAYLOAD)
        return {
            str(r.id): dict(r.payload or {})
            for r in recs
            if _in_scope(r.payload or {}, scope) and (r.payload or {}).get("valid", True)
        }

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
            flt.must = [*list(flt.must or []), _VALID]  # type: ignore[list-item]
        flt.must = [*list(flt.must or []), *metadata_conditions(filters)]  # type: ignore[list-item]
        for rec in self._scroll(self.facts, flt):
            yield payload_to_fact(rec.id, rec.payload or {})

    def fact_order(
        self, scope: Scope, *, include_invalid: bool = False, filters: Mapping[str, Any] | None = None
    ) -> list[tuple[float, str]]:
        """(created time, id) of every fact of ``scope``, oldest first: what a page of facts is
        cut from (only the creation time is read of each fact)."""
        flt = scope_filter(scope, *metadata_conditions(filters), *([] if include_invalid else [_VALID]))
        sel = models.PayloadSelectorInclude(include=["created_ts"])
        keys = [
            (float((r.payload or {}).get("created_ts") or 0.0), str(r.id))
            for r in self._scroll(self.facts, flt, payload=sel)
        ]
        keys.sort()
        return keys

    def _scroll(
        self,
        collection: str,
        flt: models.Filter,
        *,
        payload: bool | models.PayloadSelectorInclude = True,
    ) -> Iterator[models.Record | EdgeRecord]:
        offset = None
        while True:
            with self._translate("scrolling"):
                recs, offset = self.client.scroll(
                    collection,
                    scroll_filter=flt,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=payload,
                    with_vectors=False,
                )
            yield from recs
            if offset is None:
                return

    def speakers(self, scope: Scope, limit: int = 1000) -> list[str]:
        """The distinct ``metadata["speaker"]`` values of this scope's facts (most frequent
        first, at most ``limit``): a facet over the speaker index, without reading facts."""
        with self._translate("listing speakers"):
            resp = self.client.facet(
                self.facts, key="metadata.speaker", facet_filter=scope_filter(scope), limit=limit
            )
        return [str(h.value) for h in resp.hits]

    def scores_of(
        self,
        scope: Scope,
        *,
        dense: VectorLike | None = None,
        dense_ids: Sequence[str] = (),
        sparse: tuple[list[int], list[float]] | None = None,
        sparse_ids: Sequence[str] = (),
    ) -> tuple[dict[str, float], dict[str, float]]:
        """The engine's score of ``dense`` for each of ``dense_ids`` (cosine) and of ``sparse``
        for each of ``sparse_ids`` (lexical; a fact sharing no term with it is left out), for
        facts of ``scope``: one round trip, each query restricted to its ids, no vectors cross
        over."""
        asks: list[tuple[str, Any, Sequence[str]]] = []
        if dense is not None and dense_ids:
            asks.append(("dense", np.asarray(dense, dtype=np.float64).tolist(), dense_ids))
        if sparse is not None and sparse[0] and sparse_ids:
            asks.append(("lexical", models.SparseVector(indices=sparse[0], values=sparse[1]), sparse_ids))
        out: dict[str, dict[str, float]] = {"dense": {}, "lexical": {}}
        if not asks:
            return out["dense"], out["lexical"]
        reqs = [
            models.QueryRequest(
                query=query,
                using=using,
                filter=scope_filter(scope, models.HasIdCondition(has_id=list(ids))),
                limit=len(ids),
                with_payload=False,
            )
            for using, query, ids in asks
        ]
        with self._translate("scoring facts"):
            responses: list[Any] = self.client.query_batch_points(self.facts, requests=reqs)
        for (using, _, _), resp in zip(asks, responses):
            out[using] = {str(p.id): float(p.score) for p in resp.points}
        return out["dense"], out["lexical"]

    def search(
        self,
        scope: Scope,
        *,
        dense: VectorLike | None,
        sparse: tuple[list[int], list[float]] | None,
        limit: int,
        filters: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
    ) -> list[Candidate]:
        """Dense and lexical search in one round trip; candidates carry each raw score."""
        conds = metadata_conditions(filters)
        if not include_invalid:
            conds.append(_VALID)
        flt = scope_filter(scope, *conds)
        requests: list[models.QueryRequest] = []
        kinds: list[str] = []
        if dense is not None:
            requests.append(
                models.QueryRequest(
                    query=np.asarray(dense, dtype=np.float64).tolist(),
                    using="dense",
                    filter=flt,
                    limit=limit,
                    with_payload=_HIT_PAYLOAD,
                )
            )
            kinds.append("dense")
        if sparse is not None and sparse[0]:
            requests.append(
                models.QueryRequest(
                    query=models.SparseVector(indices=sparse[0], values=sparse[1]),
                    using="lexical",
                    filter=flt,
                    limit=limit,
                    with_payload=_HIT_PAYLOAD,
                )
            )
            kinds.append("lexical")
        if not requests:
            return []
        with self._translate("searching"):
            responses: list[Any] = self.client.query_batch_points(self.facts, requests=requests)
        found: dict[str, Candidate] = {}
        for kind, resp in zip(kinds, responses):
            for p in resp.points:
                pid = str(p.id)
                cand = found.get(pid)
                if cand is None:
                    cand = found[pid] = Candidate(payload_to_fact(pid, p.payload or {}))
                setattr(cand, kind, float(p.score))
        return list(found.values())

    def delete_facts(self, ids: Sequence[str]) -> None:
        if ids:
            with self._translate("deleting facts"):
                self.client.delete(
                    self.facts, points_selector=models.PointIdsList(points=list(ids)), wait=True
                )

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
        flt.must = [*list(flt.must or []), _VALID]  # type: ignore[list-item]
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
                    limit=_SCROLL_PAGE,
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
