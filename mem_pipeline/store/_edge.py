"""The embedded engine on ``qdrant-edge-py``: Qdrant's Rust storage engine, in process.

:class:`EdgeClient` answers the part of the ``qdrant_client.QdrantClient`` API that
:class:`~mem_pipeline.store.QdrantStore` calls, with the same ``qdrant_client.models`` objects
in and out, so the store (and everything above it) is one implementation for both embedded
engines and for a Qdrant server. Each collection is one edge shard in its own directory::

    {path}/edge/{collection}/      the shard (segments, WAL, payload indexes)
    {path}/edge/collections.json   collection metadata (embedder id, dimensions, schema)
    {path}/edge/.lock              held while open: one process per store

Differences from a server that this class absorbs:

- a shard needs at least one vector; collections without vectors get an unused sparse one;
- collection metadata is not stored by the engine, so it lives in ``collections.json``;
- a second open of a shard fails deep in the WAL ("WouldBlock"); the lock file turns that into
  :class:`~mem_pipeline.errors.StoreLockedError` before any shard is touched;
- ids come back as ``uuid.UUID``; they are returned as strings, like the server does;
- ``":memory:"`` is a temporary directory removed on :meth:`close` (edge has no RAM-only mode);
- a boolean in a filter reaches the engine as an integer (0.9.0 converts ``MatchValue(True)``
  to ``1``), which never matches a stored ``true``. So every boolean of a payload is mirrored
  as 0/1 under ``__bool`` (same nesting), a filter on a boolean is rewritten onto the mirror,
  and the mirror is removed from what is read back. A key set to something else loses its
  mirror; ``collections.json`` records which keys ever held booleans, so that setting any other
  key costs one engine write, not two.

Writes go to the shard's write-ahead log before the call returns, so an acknowledged write
survives the process being killed. Segments stay plain (no HNSW): every read is filtered to
one user, which the payload indexes answer; an optimised 100k-fact store (HNSW built, 48 s)
recalled no faster in ``eval.bench``'s setting.

**Compaction.** Writes land in segments the engine keeps in the process's memory (vectors,
the lexical index, payload indexes, ids), so private memory grows with the store. ``compact``
(:meth:`EdgeClient.compact`, ``Memory.compact``) rewrites each collection into segments kept in
memory-mapped files (``ON_DISK``: the page cache holds them, shared and reclaimable) with its
payload indexes on disk too; segments written after it are in memory again until the next
one. The engine only rewrites a segment that holds vectors, so the points of a payload-only
collection (links, history, journal) are first given a one-entry mark in their placeholder
sparse vector (never read back: ``out_vector`` drops it). The engine's ``optimize()`` holds
the interpreter lock while it runs, so a compaction stalls the process: it is maintenance, run
when the store is quiet, never on the write path.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe
from qdrant_client import models

from ..errors import StoreError, StoreLockedError
from ._edge_types import (
    BOOL_MIRROR,
    NO_VECTOR,
    ON_DISK,
    SCHEMA,
    EdgeCount,
    EdgeRecord,
    EdgeResponse,
    EdgeScored,
    Shard,
    bools,
    disk_index,
    engine_call,
    ids_of,
    payload_selector,
    qe_filter,
    record,
    scored_ids,
    strip_payload,
    vector,
    vector_selector,
    vectors,
    with_bools,
)
from ._wal import WalRepair, repair_wal

__all__ = ["EdgeClient", "EdgeRecord", "is_edge_store", "is_local_store", "secure_tree"]

log = logging.getLogger(__name__)

#: the top-level keys of this project's payloads that have held booleans (``valid`` of a fact,
#: caller ``metadata``, an event's ``detail``), for a collection created before the edge client
#: recorded them (``_bool_keys``)
_LEGACY_BOOL_KEYS = ("valid", "metadata", "detail")


def is_edge_store(path: str | Path) -> bool:
    """Whether ``path`` holds a store of the edge engine."""
    return (Path(path) / "edge" / "collections.json").exists()


def is_local_store(path: str | Path) -> bool:
    """Whether ``path`` holds a store of qdrant-client's local mode."""
    p = Path(path)
    return (p / "meta.json").exists() or (p / "collection").is_dir()


def secure_tree(root: str | Path) -> None:
    """Make a store private to its owner, whatever the umask: the directory and every
    directory in it 0700, every file 0600. Fact text sits in plain text in the engine's files;
    the engine creates files with the process umask (often 0644), so this runs when a store is
    opened and closed, and the 0700 directory keeps files created in between unreadable to
    others."""
    top = Path(root)
    with contextlib.suppress(OSError):
        top.chmod(0o700)
    for dirpath, dirnames, filenames in os.walk(top):
        for d in dirnames:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, d), 0o700)
        for f in filenames:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, f), 0o600)


class EdgeClient:
    """The subset of ``QdrantClient`` the store uses, on qdrant-edge shards under ``path``."""

    def __init__(self, path: str, *, search_threads: int | None = 1) -> None:
        self._temp = path == ":memory:"
        self.root = Path(tempfile.mkdtemp(prefix="mem_pipeline_edge_") if self._temp else path) / "edge"
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._temp:  # removed on close(), or when the client is collected / at exit
            weakref.finalize(self, shutil.rmtree, str(self.root.parent), ignore_errors=True)
        self._search_threads = search_threads
        self._lockfile: IO[str] | None = open(self.root / ".lock", "a")  # noqa: SIM115 - held open
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            self._lockfile.close()
            self._lockfile = None
            raise StoreLockedError(
                f"the embedded store at {path} is open in another process. Only one process "
                "can use an embedded store: close the other one, use another path, or share the "
                "store through `mem-pipeline serve` or a Qdrant server (url=, QDRANT_URL, --url)."
            ) from e
        self._meta_path = self.root / "collections.json"
        self._shards: dict[str, Shard] = {}
        self._bools: dict[str, set[str]] = {}  # see _bool_keys
        self._guard = threading.Lock()
        # the tick of each collection's latest write (``writes``); ``next`` on a count is atomic
        self._tick = itertools.count(1)
        self._writes: dict[str, int] = {}
        #: WAL repairs made while opening (see ``_wal``): what was trimmed, where the copy is
        self.repairs: list[WalRepair] = []
        try:
            self._meta: dict[str, dict[str, Any]] = (
                json.loads(self._meta_path.read_text()) if self._meta_path.exists() else {}
            )
            for name in self._meta:
                self._shards[name] = self._load(name)
        except BaseException:
            self.close()
            raise
        secure_tree(self.root.parent)

    def _load(self, name: str) -> Shard:
        """Load a shard; if its write-ahead log cannot be read because an entry nests too
        deep (written before metadata was validated), trim that entry and load again."""
        path = self.root / name
        try:
            with engine_call(f"opening {name}"):
                return Shard(qe.EdgeShard.load(str(path), self._config(self._meta[name])), name)
        except Exception as e:
            if "WAL" not in str(e) or not (path / "wal").is_dir():
                raise
            report = repair_wal(path / "wal")
            if not report.entries_trimmed:
                raise
            log.warning(
                "collection %s: %d WAL entries nested too deep to read were trimmed (%d values); "
                "the original log is kept at %s",
                name,
                report.entries_trimmed,
                report.values_trimmed,
                report.backup,
            )
            self.repairs.append(report)
        with engine_call(f"opening {name}"):
            return Shard(qe.EdgeShard.load(str(path), self._config(self._meta[name])), name)

    # -- collections --------------------------------------------------------------------------
    def _config(self, spec: Mapping[str, Any]) -> qe.EdgeConfig:
        # what a compacted segment keeps where (``ON_DISK``): a plain index (no HNSW graph: reads
        # are filtered to one user), every structure memory-mapped. Segments taking writes are
        # in memory whatever this says.
        dense = {
            n: qe.EdgeVectorParams(size=int(size), distance=qe.Distance.Cosine, memory=ON_DISK)
            for n, size in spec.get("dense", {}).items()
        }
        sparse = {
            n: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=ON_DISK)
            for n in spec.get("sparse", [])
        }
        if not dense and not sparse:
            sparse = {NO_VECTOR: qe.EdgeSparseVectorParams(memory=ON_DISK)}
        # payloads cached: with the default (cold, read from disk per request) reading the
        # payloads of 40 hits cost 1.0 ms of a 1.1 ms query at 10k facts; cached, 0.4 ms
        return qe.EdgeConfig(
            vectors=dense or None,
            sparse_vectors=sparse or None,
            max_search_threads=self._search_threads,
            payload_memory=qe.Memory.Cached,
            id_tracker_memory=ON_DISK,
            # optimize() (compaction only) rewrites any segment holding vectors, however few
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
            hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000, memory=ON_DISK),
        )

    def _save_meta(self) -> None:
        tmp = self._meta_path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(self._meta, indent=1, sort_keys=True))
        os.replace(tmp, self._meta_path)

    def writes(self, collection_name: str) -> int:
        """A number that changes with every write to the collection through this client (and
        this client is the only writer: the store's lock file). A cache of what was read from
        it is current while the number is the one it was kept with."""
        return self._writes.get(collection_name, 0)

    def _wrote(self, collection_name: str) -> None:
        self._writes[collection_name] = next(self._tick)

    def _shard(self, name: str) -> Shard:
        try:
            return self._shards[name]
        except KeyError:
            raise StoreError(f"collection {name!r} does not exist") from None

    def delete_collection(self, collection_name: str) -> bool:
        """Close a collection's shard and set its directory aside (``<name>.damaged-<time>``,
        never deleted here: a repair rebuilds the collection beside it)."""
        self._wrote(collection_name)
        with self._guard:
            shard = self._shards.pop(collection_name, None)
            if shard is None:
                return False
            with contextlib.suppress(Exception):
                shard.close()
            src = self.root / collection_name
            if src.exists():
                src.rename(src.with_name(f"{collection_name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}"))
            self._meta.pop(collection_name, None)
            self._bools.pop(collection_name, None)
            self._save_meta()
        return True

    def collection_exists(self, collection_name: str) -> bool:
        return collection_name in self._shards

    def collection_metadata(self, collection_name: str) -> dict[str, Any]:
        return dict(self._meta.get(collection_name, {}).get("metadata") or {})

    def create_collection(
        self,
        collection_name: str,
        vectors_config: Mapping[str, models.VectorParams] | None = None,
        sparse_vectors_config: Mapping[str, models.SparseVectorParams] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        for vp in (vectors_config or {}).values():
            if vp.distance != models.Distance.COSINE:
                raise StoreError("the edge engine is set up for cosine vectors only")
        self._wrote(collection_name)
        spec = {
            "dense": {n: vp.size for n, vp in (vectors_config or {}).items()},
            "sparse": sorted(sparse_vectors_config or {}),
            "metadata": dict(metadata or {}),
            "bool_keys": [],
        }
        with self._guard:
            shard_dir = self.root / collection_name
            if shard_dir.exists():  # a create interrupted before the metadata was written
                shutil.rmtree(shard_dir)
            with engine_call(f"creating {collection_name}"):
                shard = qe.EdgeShard.create(str(shard_dir), self._config(spec))
            self._shards[collection_name] = Shard(shard, collection_name)
            self._bools.pop(collection_name, None)
            self._meta[collection_name] = spec
            self._save_meta()
        return True

    def create_payload_index(
        self,
        collection_name: str,
        field_name: str,
        field_schema: models.PayloadSchemaType | models.KeywordIndexParams,
    ) -> None:
        schema: Any
        self._wrote(collection_name)
        if field_schema == models.PayloadSchemaType.BOOL:  # filters use the 0/1 mirror
            field_name, field_schema = f"{BOOL_MIRROR}.{field_name}", models.PayloadSchemaType.INTEGER
        if isinstance(field_schema, models.KeywordIndexParams):
            schema = disk_index(qe.PayloadSchemaType.Keyword, tenant=bool(field_schema.is_tenant))
        else:
            schema = disk_index(SCHEMA[field_schema])
        self._shard(collection_name).update(qe.UpdateOperation.create_field_index(field_name, schema))

    # -- maintenance --------------------------------------------------------------------------
    @staticmethod
    def _mark(shard: Shard, batch: int = 5000) -> None:
        """Give every point of a payload-only collection that lacks it the placeholder vector's
        mark, so that the engine's optimiser takes its segments (see the module docstring)."""
        unmarked = qe.Filter(must_not=[qe.HasVectorCondition(NO_VECTOR)])
        while True:
            recs, _ = shard.scroll(
                qe.ScrollRequest(limit=batch, filter=unmarked, with_payload=False, with_vector=False)
            )
            if not recs:
                return
            shard.update(
                qe.UpdateOperation.update_vectors(
                    [qe.PointVectors(r.id, {NO_VECTOR: qe.SparseVector([0], [1.0])}) for r in recs]
                )
            )

    def compact(self) -> dict[str, float]:
        """Rewrite every collection into segments kept on disk (see the module docstring):
        payload indexes made before they were created on disk are recreated so, then the
        engine's ``optimize()`` merges the segments. Seconds per collection. Blocks this
        process while it runs (the engine holds the interpreter lock)."""
        took: dict[str, float] = {}
        with self._guard:
            for name, shard in self._shards.items():
                self._wrote(name)
                t0 = time.perf_counter()
                spec = self._meta.get(name, {})
                if not spec.get("dense") and not spec.get("sparse"):
                    self._mark(shard)
                for field, info in shard.info().payload_schema.items():
                    params = info.params
                    if params is not None and getattr(params, "on_disk", None):
                        continue
                    tenant = bool(params is not None and getattr(params, "is_tenant", False))
                    index = disk_index(info.data_type, tenant)
                    shard.update(qe.UpdateOperation.create_field_index(field, index))
                shard.optimize()
                shard.flush()
                took[name] = time.perf_counter() - t0
        return took

    # -- writes -------------------------------------------------------------------------------
    def _bool_keys(self, collection_name: str) -> set[str]:
        """The top-level payload keys that have held a boolean (or a mapping holding one) in
        this collection: only those can have a mirror to clear when set to something else.
        A collection created before this record was kept gets the keys this project's payloads
        have ever held booleans in."""
        keys = self._bools.get(collection_name)
        if keys is None:
            rec = self._meta.get(collection_name, {}).get("bool_keys")
            keys = self._bools[collection_name] = set(_LEGACY_BOOL_KEYS if rec is None else rec)
        return keys

    def _note_bools(self, collection_name: str, keys: set[str]) -> None:
        """Record (before they are written) keys that are about to hold booleans."""
        known = self._bool_keys(collection_name)
        if keys - known or "bool_keys" not in self._meta.get(collection_name, {}):
            known |= keys
            with self._guard:
                self._meta.setdefault(collection_name, {})["bool_keys"] = sorted(known)
                self._save_meta()

    def upsert(self, collection_name: str, points: Sequence[models.PointStruct], wait: bool = True) -> None:
        self._wrote(collection_name)
        pts, keys = [], set()
        for p in points:
            payload = with_bools(p.payload)
            keys.update(payload.get(BOOL_MIRROR, ()))
            pts.append(qe.Point(id=str(p.id), vector=vectors(p.vector), payload=payload))
        if keys:
            self._note_bools(collection_name, keys)
        self._shard(collection_name).update(qe.UpdateOperation.upsert_points(pts))

    def set_payload(
        self, collection_name: str, payload: Mapping[str, Any], points: Sequence[str], wait: bool = True
    ) -> None:
        ids: list[qe.PointId] = [str(i) for i in points]
        self._wrote(collection_name)
        shard = self._shard(collection_name)
        mirror = bools(payload)
        if mirror:
            self._note_bools(collection_name, set(mirror))
        shard.update(qe.UpdateOperation.set_payload(ids, dict(payload)))
        had = self._bool_keys(collection_name)
        stale = [f"{BOOL_MIRROR}.{k}" for k in payload if k not in mirror and k in had]
        if stale:  # a key that held booleans before may hold none now
            shard.update(qe.UpdateOperation.delete_payload(ids, stale))
        if mirror:  # merged into the existing mirror, key by key
            shard.update(qe.UpdateOperation.set_payload(ids, mirror, key=BOOL_MIRROR))

    def update_vectors(
        self, collection_name: str, points: Sequence[models.PointVectors], wait: bool = True
    ) -> None:
        pvs = [qe.PointVectors(str(p.id), vectors(p.vector)) for p in points]
        self._wrote(collection_name)
        self._shard(collection_name).update(qe.UpdateOperation.update_vectors(pvs))

    def delete_vectors(
        self, collection_name: str, vectors: Sequence[str], points: models.PointIdsList, wait: bool = True
    ) -> None:
        op = qe.UpdateOperation.delete_vectors(list(ids_of(points)), list(vectors))
        self._wrote(collection_name)
        self._shard(collection_name).update(op)

    def delete(
        self,
        collection_name: str,
        points_selector: models.PointIdsList | models.FilterSelector,
        wait: bool = True,
    ) -> None:
        shard = self._shard(collection_name)
        self._wrote(collection_name)
        if isinstance(points_selector, models.FilterSelector):
            flt = qe_filter(points_selector.filter)
            assert flt is not None
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
        else:
            shard.update(qe.UpdateOperation.delete_points(list(ids_of(points_selector))))

    # -- reads --------------------------------------------------------------------------------
    def retrieve(
        self,
        collection_name: str,
        ids: Sequence[str],
        with_payload: bool | models.PayloadSelectorExclude | models.PayloadSelectorInclude = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[EdgeRecord]:
        recs = self._shard(collection_name).retrieve(
            [str(i) for i in ids], payload_selector(with_payload), vector_selector(with_vectors)
        )
        return [record(r) for r in recs]

    def scroll(
        self,
        collection_name: str,
        scroll_filter: models.Filter | None = None,
        limit: int = 10,
        order_by: models.OrderBy | None = None,
        offset: Any = None,
        with_payload: bool | models.PayloadSelectorInclude | models.PayloadSelectorExclude = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> tuple[list[EdgeRecord], str | None]:
        ob = None
        if order_by is not None:
            direction = qe.Direction.Desc if order_by.direction == models.Direction.DESC else qe.Direction.Asc
            ob = qe.OrderBy(order_by.key, direction)
        recs, nxt = self._shard(collection_name).scroll(
            qe.ScrollRequest(
                offset=None if offset is None else str(offset),
                limit=limit,
                filter=qe_filter(scroll_filter),
                with_payload=payload_selector(with_payload),
                with_vector=vector_selector(with_vectors),
                order_by=ob,
            )
        )
        return [record(r) for r in recs], (None if nxt is None else str(nxt))

    def query_batch_points(
        self, collection_name: str, requests: Sequence[models.QueryRequest]
    ) -> list[EdgeResponse]:
        # a batch asks its requests with the same filter and the same query vectors (each query
        # again as another's prefetch): each translated once
        filters: dict[int, Any] = {}
        queries: dict[tuple[int, str | None], Any] = {}

        def flt(f: models.Filter | None) -> Any:
            if f is None:
                return None
            if id(f) not in filters:
                filters[id(f)] = qe_filter(f)
            return filters[id(f)]

        def nearest(v: Any, using: str | None) -> Any:
            key = (id(v), using)
            if key not in queries:
                queries[key] = qe.Query.Nearest(vector(v), using=using)
            return queries[key]

        reqs = []
        for r in requests:
            if r.query is None:
                raise StoreError("the edge engine needs a query vector")
            prefetches = None
            if r.prefetch is not None:  # the query rescoring another's results
                pre = r.prefetch if isinstance(r.prefetch, list) else [r.prefetch]
                if any(p.query is None or p.prefetch is not None for p in pre):
                    raise StoreError("the edge engine takes one level of prefetch, each with a query vector")
                prefetches = [
                    qe.Prefetch(
                        limit=int(p.limit or 10),
                        query=nearest(p.query, p.using),
                        filter=flt(p.filter),
                    )
                    for p in pre
                ]
            reqs.append(
                qe.QueryRequest(
                    limit=int(r.limit or 10),
                    query=nearest(r.query, r.using),
                    prefetches=prefetches,
                    filter=flt(r.filter),
                    with_payload=payload_selector(r.with_payload),
                    score_threshold=r.score_threshold,
                )
            )
        results = self._shard(collection_name).query_batch(qe.QueryBatchRequest(reqs))
        out = []
        for r, res in zip(requests, results):
            if r.with_payload is False:  # ids and scores only: not a payload to convert
                out.append(EdgeResponse(scored_ids(res)))
            else:
                points = [EdgeScored(str(p.id), float(p.score), strip_payload(p.payload)) for p in res]
                out.append(EdgeResponse(points))
        return out

    def facet(
        self,
        collection_name: str,
        key: str,
        facet_filter: models.Filter | None = None,
        limit: int = 10,
        exact: bool = False,
    ) -> models.FacetResponse:
        req = qe.FacetRequest(key=key, limit=int(limit), exact=exact, filter=qe_filter(facet_filter))
        res = self._shard(collection_name).facet(req)
        hits = [models.FacetValueHit(value=h.value, count=int(h.count)) for h in res.hits]
        return models.FacetResponse(hits=hits)

    def count(
        self, collection_name: str, count_filter: models.Filter | None = None, exact: bool = True
    ) -> EdgeCount:
        n = self._shard(collection_name).count(qe.CountRequest(exact=exact, filter=qe_filter(count_filter)))
        return EdgeCount(n)

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        with self._guard:
            for shard in self._shards.values():
                with contextlib.suppress(Exception):
                    shard.flush()
                with contextlib.suppress(Exception):
                    shard.close()
            self._shards.clear()
            if self._lockfile is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(self._lockfile, fcntl.LOCK_UN)
                self._lockfile.close()
                self._lockfile = None
            if self._temp:
                shutil.rmtree(self.root.parent, ignore_errors=True)
            else:
                secure_tree(self.root.parent)
