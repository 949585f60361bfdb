"""Collections and filters: the schema of the six collections, their payload indexes, the
scoped filters every read and write goes through, and the base every part of the store shares.

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
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from qdrant_client import QdrantClient, models

from ..errors import EmbedderMismatchError, InvalidInputError, StoreError
from ..models import Scope
from ._briefs import BriefCache
from ._edge import EdgeClient, EdgeRecord

__all__ = [
    "SCHEMA_VERSION",
    "SCROLL_PAGE",
    "VALID",
    "StoreBase",
    "in_scope",
    "metadata_conditions",
    "scope_filter",
    "scoped",
    "user_filter",
]

SCHEMA_VERSION = 1
SCROLL_PAGE = 4096  # qdrant-client local mode filters every point on each page: few, big pages


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


def in_scope(p: Mapping[str, Any], scope: Scope) -> bool:
    return scoped(scope)(p)


def scoped(scope: Scope) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a payload is of ``scope``, as a test made once for many payloads."""
    want = tuple(scope.payload().items())
    return lambda p: all(p.get(k) == v for k, v in want)


def metadata_conditions(filters: Mapping[str, Any] | None) -> list[models.Condition]:
    """``{"category": "plan", "concepts": ["x"], "session": 3}`` -> Qdrant conditions.

    ``category``, ``concepts`` and ``kind`` match the fact's own fields; any other key matches
    ``metadata.<key>``. A list value matches any of its items.
    """
    out: list[models.Condition] = []
    if filters is not None and not isinstance(filters, Mapping):
        raise InvalidInputError(f"filters must be a mapping, got {type(filters).__name__}")
    for key, value in (filters or {}).items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"filter keys must be non-empty strings, got {key!r}")
        field = key if key in ("category", "concepts", "kind") else f"metadata.{key}"
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

# fact payload indexes that stores created before them lack (see ``QdrantStore._ensure``);
# faceting needs one: ``speakers`` lists a scope's speakers from it
_LATER_FACT_INDEXES = {
    "metadata.speaker": models.PayloadSchemaType.KEYWORD,
    "key_hash": models.PayloadSchemaType.KEYWORD,
    "kind": models.PayloadSchemaType.KEYWORD,
    "sources": models.PayloadSchemaType.KEYWORD,
    "slot": models.PayloadSchemaType.KEYWORD,
    "about": models.PayloadSchemaType.KEYWORD,
}

# concept and link indexes the concept layer's lookups need (``_concepts``), built when a store
# that predates them is opened
_LATER_CONCEPT_INDEXES = {
    "key": models.PayloadSchemaType.KEYWORD,
    "vec": models.PayloadSchemaType.INTEGER,
}
_LATER_LINK_INDEXES = {
    "a": models.PayloadSchemaType.KEYWORD,
    "b": models.PayloadSchemaType.KEYWORD,
    "count": models.PayloadSchemaType.FLOAT,
    "fb": models.PayloadSchemaType.FLOAT,
}

VALID = models.FieldCondition(key="valid", match=models.MatchValue(value=True))


class StoreBase:
    """What every part of the store shares: the client, the collection names, the translation
    of engine errors, paged scrolls, and the schema (created when missing)."""

    def __init__(
        self,
        client: QdrantClient | EdgeClient,
        *,
        embedder_id: str,
        dimensions: int,
        prefix: str = "mem_pipeline",
        payload_cache: int = 0,
    ) -> None:
        self.client = client
        #: the fields of recently read facts (see ``_briefs``); 0 keeps none
        self.briefs = BriefCache(payload_cache)
        self._speakers: dict[tuple[Scope, int], list[str]] = {}  # see ``FactStore.speakers``
        # the latest raw turns of a (scope, session), with the facts collection's write count
        # they are current at (``FactStore.recent_raw``); an embedded store only
        self._recent: OrderedDict[tuple[Scope, Any], tuple[int, int, list[dict[str, Any]]]] = OrderedDict()
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
            self._later(self.facts, _LATER_FACT_INDEXES)
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
                {
                    "user_id": models.PayloadSchemaType.KEYWORD,
                    "name": models.PayloadSchemaType.KEYWORD,
                    **_LATER_CONCEPT_INDEXES,
                },
            )
        else:
            self._later(self.concepts, _LATER_CONCEPT_INDEXES)
        if c.collection_exists(self.links):
            self._later(self.links, _LATER_LINK_INDEXES)
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
                    **_LATER_LINK_INDEXES,
                },
            ),
        ):
            if not c.collection_exists(name):
                c.create_collection(name, vectors_config={}, metadata={"schema": SCHEMA_VERSION})
                self._index(name, fields)

    def _later(self, collection: str, fields: Mapping[str, models.PayloadSchemaType]) -> None:
        """Indexes added after a store's creation (a no-op once they exist)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for field, schema in fields.items():
                self.client.create_payload_index(collection, field, field_schema=schema)

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
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=payload,
                    with_vectors=False,
                )
            yield from recs
            if offset is None:
                return
