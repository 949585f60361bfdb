"""Payloads: how a fact is written into a point and read back, what a search candidate
carries, and the key that makes two writes the same fact."""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import models

from ..models import Category, Scope, StoredFact
from ..text import lexical
from ..text.lexical import normalize_text
from ._collections import SCHEMA_VERSION

__all__ = [
    "HIT_PAYLOAD",
    "TURN_LINKS_VERSION",
    "Candidate",
    "VectorLike",
    "fact_to_payload",
    "json_copy",
    "kind_of",
    "legacy_id",
    "payload_to_fact",
    "repeat_key",
]

VectorLike = Sequence[float] | npt.NDArray[np.float32]

#: raw turns written since reply links (``StoredFact.reply_to``) carry ``turn_links`` = this;
#: ``Memory.reindex`` links the turns of older stores
TURN_LINKS_VERSION = 1


@dataclass(slots=True)
class Candidate:
    """A fact or turn found by search: its id, the payload the search read (every field but
    the embedded and indexed texts), and the raw score of each signal that found it. Ranking
    reads the payload directly; the full :class:`StoredFact` is built (once) only when asked,
    for what is returned."""

    id: str
    payload: dict[str, Any]
    dense: float | None = None
    lexical: float | None = None
    _fact: StoredFact | None = None

    @classmethod
    def of(cls, fact: StoredFact, dense: float | None = None, lexical: float | None = None) -> Candidate:
        """A candidate for a fact in hand (as a search would have read it)."""
        return cls(fact.id, fact_to_payload(fact, fact.text, fact.text), dense, lexical, fact)

    @property
    def fact(self) -> StoredFact:
        if self._fact is None:
            self._fact = payload_to_fact(self.id, self.payload)
        return self._fact

    @property
    def text(self) -> str:
        return str(self.payload.get("text", ""))

    @property
    def kind(self) -> str:
        return kind_of(self.payload)

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.payload.get("metadata")
        return meta if isinstance(meta, dict) else {}


def kind_of(p: Mapping[str, Any]) -> str:
    """A point's kind: ``fact`` or ``turn`` (points written before kinds: a raw turn is a turn)."""
    kind = p.get("kind")
    if kind in ("fact", "turn"):
        return str(kind)
    return "turn" if p.get("origin", "raw") == "raw" else "fact"


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
        "kind": f.kind,
        "sources": list(f.sources),
        "slot": f.slot,
        "bare": f.bare,
        "about": f.about,
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
        "lexical_version": lexical.LEXICAL_VERSION,
        "turn_links": TURN_LINKS_VERSION,
    }
    return p


@functools.lru_cache(maxsize=4096)
def _scope(tenant: str, user_id: str, agent_id: str | None, run_id: str | None) -> Scope:
    # scopes are immutable and repeat across a search's candidates: validate each once
    return Scope(tenant=tenant, user_id=user_id, agent_id=agent_id, run_id=run_id)


def json_copy(value: Any) -> Any:
    """A copy of a JSON value, nested containers included: payloads read from the payload
    cache are shared, what is handed out must not be."""
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else json_copy(v) for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def payload_to_fact(point_id: Any, p: Mapping[str, Any]) -> StoredFact:
    created = _dt(p["created_ts"])
    assert created is not None
    return StoredFact(
        id=str(point_id),
        kind=kind_of(p),  # type: ignore[arg-type]
        sources=list(p.get("sources") or []),
        slot=p.get("slot"),
        bare=bool(p.get("bare", False)),
        about=p.get("about"),
        text=p["text"],
        category=Category(p.get("category", "other")),
        concepts=list(p.get("concepts") or []),
        scope=_scope(p["tenant"], p["user_id"], p.get("agent_id"), p.get("run_id")),
        metadata=json_copy(p.get("metadata") or {}),
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


# what the writer reads of a fact it may repeat or correct: all but the texts that were
# embedded and indexed (the indexed text carries the neighbouring turns and is the largest field)
HIT_PAYLOAD = models.PayloadSelectorExclude(exclude=["embed_text", "index_text"])
