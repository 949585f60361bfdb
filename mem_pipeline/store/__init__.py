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
import logging
import os
import threading
import weakref

from qdrant_client import QdrantClient

from ..errors import InvalidInputError, StoreError, StoreLockedError
from ..models import Scope
from ._collections import SCHEMA_VERSION, metadata_conditions, scope_filter, user_filter
from ._concepts import NO_VECTOR_YET, PICKED, ConceptStore
from ._edge import EdgeClient, is_edge_store, is_local_store, secure_tree
from ._facts import FactStore
from ._journal import JournalStore
from ._payload import TURN_LINKS_VERSION, Candidate, VectorLike, fact_to_payload, legacy_id, repeat_key
from ._repair import RepairStore

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "NO_VECTOR_YET",
    "PICKED",
    "SCHEMA_VERSION",
    "TURN_LINKS_VERSION",
    "Candidate",
    "QdrantStore",
    "Scope",
    "VectorLike",
    "fact_to_payload",
    "legacy_id",
    "metadata_conditions",
    "repeat_key",
    "resolve_engine",
    "scope_filter",
    "user_filter",
]

log = logging.getLogger(__name__)

#: Embedded stores open in this process, by real path: a second open of the same path says so
#: (the engines' own locks would call this process "another process").
_OPEN: weakref.WeakValueDictionary[str, QdrantStore] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.Lock()

LOCKED_HINT = (
    "Only one process can use an embedded store: close the other one, use another path, or share "
    "the store through `mem-pipeline serve` or a Qdrant server (url=, QDRANT_URL, --url)."
)

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


class QdrantStore(FactStore, JournalStore, ConceptStore, RepairStore):
    """Facts, history, pending turns and concept links in Qdrant (embedded or server): one
    object, its parts one concern a module (``_facts``, ``_journal``, ``_repair``, on the
    schema and filters of ``_collections``; the concept layer's lookups in ``_concepts``)."""

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
        payload_cache: int = 20_000,
    ) -> QdrantStore:
        """Open an embedded store at ``path`` (``":memory:"``: a throwaway one) or a server at
        ``url``. ``engine`` picks the embedded engine of a new store (see :func:`resolve_engine`).
        ``payload_cache``: how many facts' fields to keep in memory (``_briefs``); a server,
        which other processes may write, keeps none."""
        if path and url:
            raise InvalidInputError("give either path= (embedded) or url= (server), not both")
        real = os.path.realpath(path) if path and path != ":memory:" and not url else None
        with _OPEN_LOCK:
            if real is not None and real in _OPEN:
                raise StoreLockedError(
                    f"the embedded store at {path} is already open in this process: another Memory "
                    "holds it. Use that Memory, or close it first (memory.close(), or open it as "
                    "`with Memory(...) as memory:` so that it closes itself)."
                )
            store = cls._open(path, url, api_key, embedder_id, dimensions, prefix, engine, payload_cache)
            if real is not None:
                _OPEN[real] = store
        return store

    @classmethod
    def _open(
        cls,
        path: str | None,
        url: str | None,
        api_key: str | None,
        embedder_id: str,
        dimensions: int,
        prefix: str,
        engine: str | None,
        payload_cache: int,
    ) -> QdrantStore:
        if path and path != ":memory:" and not url:
            try:
                os.makedirs(path, mode=0o700, exist_ok=True)
            except OSError as e:
                if os.path.isfile(path):
                    raise StoreError(f"cannot use {path} as the store directory: it is a file") from e
                raise StoreError(f"cannot create the store directory {path}: {e.strerror or e}") from e
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
                    f"the embedded store at {path} is open in another process. {LOCKED_HINT}"
                ) from e
            raise StoreError(f"could not open the store: {e}") from e
        except (StoreError, InvalidInputError):
            raise
        except Exception as e:
            raise StoreError(f"could not open the store at {url or path}: {e}") from e
        try:
            store = cls(
                client,
                embedder_id=embedder_id,
                dimensions=dimensions,
                prefix=prefix,
                payload_cache=0 if url else payload_cache,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                client.close()
            raise
        if path and path != ":memory:" and not url:
            store._path = path
            secure_tree(path)
        return store

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self._path:
            secure_tree(self._path)
            with _OPEN_LOCK:
                real = os.path.realpath(self._path)
                if _OPEN.get(real) is self:
                    del _OPEN[real]

    def compact(self) -> dict[str, float]:
        """Rewrite the embedded engine's collections into on-disk segments, seconds per
        collection (``EdgeClient.compact``); a Qdrant server or qdrant-client's embedded mode
        manage their own segments: nothing to do, ``{}``."""
        return self.client.compact() if isinstance(self.client, EdgeClient) else {}

    @property
    def engine(self) -> str:
        """``"edge"``, ``"local"`` (qdrant-client's embedded mode) or ``"server"``."""
        if isinstance(self.client, EdgeClient):
            return "edge"
        return "local" if type(self.client._client).__name__ == "QdrantLocal" else "server"
