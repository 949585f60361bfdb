"""Data models: what goes in (messages, scope), what is stored (facts, history), what comes out."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import ScopeError

__all__ = [
    "AddEvent",
    "AddResult",
    "Category",
    "ExtractedFact",
    "HistoryEvent",
    "Message",
    "Scope",
    "ScoreParts",
    "StoredFact",
    "Via",
]

_SCOPE_RE = re.compile(r"^[^\x00-\x1f\x7f\ud800-\udfff]{1,256}$")  # no control chars, no lone surrogates


class Category(str, enum.Enum):
    """The fixed categories of a fact. Each has its own decay half-life (see ``decay``).

    - ``preference``: likes, dislikes, habits of taste ("prefers aisle seats").
    - ``biography``: stable facts about the person (home town, age, languages).
    - ``relationship``: people in their life and how they relate ("sister Ana").
    - ``work``: job, employer, projects, tools at work.
    - ``plan``: intentions, goals, appointments, things to do.
    - ``health``: conditions, allergies, diet for medical reasons, fitness.
    - ``event``: something that happened at a time ("ran a marathon in May").
    - ``skill``: what they know or are learning.
    - ``other``: durable but none of the above.
    """

    PREFERENCE = "preference"
    BIOGRAPHY = "biography"
    RELATIONSHIP = "relationship"
    WORK = "work"
    PLAN = "plan"
    HEALTH = "health"
    EVENT = "event"
    SKILL = "skill"
    OTHER = "other"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Scope(BaseModel):
    """Who a fact belongs to. ``tenant`` and ``user_id`` are required on every call."""

    model_config = ConfigDict(frozen=True)

    tenant: str = "default"
    user_id: str
    agent_id: str | None = None
    run_id: str | None = None

    @field_validator("tenant", "user_id", "agent_id", "run_id", mode="before")
    @classmethod
    def _check(cls, v: Any, info: Any) -> Any:
        if v is None and info.field_name in ("agent_id", "run_id"):
            return None
        if not isinstance(v, str) or not _SCOPE_RE.match(v) or not v.strip():
            raise ValueError(
                f"{info.field_name} must be a non-empty string of at most 256 characters "
                f"without control characters, got {v!r:.80}"
            )
        return v

    @classmethod
    def of(
        cls,
        user_id: Any,
        tenant: Any = "default",
        agent_id: Any = None,
        run_id: Any = None,
    ) -> Scope:
        """Build a scope, raising :class:`ScopeError` (not a pydantic error) when invalid."""
        if user_id is None:
            raise ScopeError("user_id is required: every read and write is scoped to one user")
        try:
            return cls(tenant=tenant, user_id=user_id, agent_id=agent_id, run_id=run_id)
        except ValueError as e:
            raise ScopeError(str(e)) from e

    def payload(self) -> dict[str, str]:
        out = {"tenant": self.tenant, "user_id": self.user_id}
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out

    def key(self) -> str:
        return "\x1f".join([self.tenant, self.user_id, self.agent_id or "", self.run_id or ""])


class Message(BaseModel):
    """One conversation turn. ``name`` is the speaker's name when known."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant", "system"]
    content: str
    name: str | None = None


class ExtractedFact(BaseModel):
    """A fact as an extractor proposes it, before grounding, dedupe and storage."""

    text: str = Field(min_length=1)
    category: Category = Category.OTHER
    concepts: list[str] = Field(default_factory=list)
    source_turns: list[int] = Field(default_factory=list)


class StoredFact(BaseModel):
    """A fact as stored. Times are timezone-aware UTC."""

    id: str
    text: str
    category: Category
    concepts: list[str]
    scope: Scope
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    last_seen_at: datetime
    valid_from: datetime
    invalid_at: datetime | None = None
    superseded_by: str | None = None
    confirmations: int = 1
    recalls: int = 0
    valence: float = 0.0
    importance: float | None = None
    origin: Literal["raw", "offline", "llm", "manual"] = "raw"
    #: a raw turn that answers a question: the id of the turn that asked it (the previous turn
    #: of the session, said by someone else, with a "?"); see ``Memory._place_turn``
    reply_to: str | None = None

    @property
    def is_valid(self) -> bool:
        return self.invalid_at is None


EventName = Literal["ADD", "REINFORCE", "UPDATE", "SUPERSEDE", "DELETE", "NOOP", "REJECT"]


class AddEvent(BaseModel):
    """What ``add`` did with one fact."""

    event: EventName
    id: str | None
    text: str
    category: Category | None = None
    previous_id: str | None = None
    reason: str | None = None


class AddResult(BaseModel):
    """The outcome of ``Memory.add``: one event per fact, and what it cost."""

    events: list[AddEvent] = Field(default_factory=list)
    extractor: str = "raw"
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.events if e.id is not None and e.event != "REJECT"]

    @property
    def rejected(self) -> list[AddEvent]:
        return [e for e in self.events if e.event == "REJECT"]

    def count(self, event: str) -> int:
        return sum(1 for e in self.events if e.event == event)


class HistoryEvent(BaseModel):
    """One change to a fact."""

    fact_id: str
    event: EventName
    old_text: str | None
    new_text: str | None
    at: datetime
    detail: dict[str, Any] = Field(default_factory=dict)


class ScoreParts(BaseModel):
    """Why a hit ranked where it did. ``score`` = relevance x decay x reinforcement (+ association)."""

    similarity: float = 0.0
    lexical: float = 0.0
    relevance: float = 0.0
    decay: float = 1.0
    reinforcement: float = 1.0
    concept: float = 0.0
    association: float = 0.0
    #: relevance lent by the question this turn answers (``StoredFact.reply_to``), included in
    #: ``relevance``
    reply: float = 0.0


class Via(BaseModel):
    """How an association hit was reached: from ``query_concept`` along ``path`` (weights per step)."""

    query_concept: str
    path: list[str]
    weights: list[float]


def json_safe(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check metadata is a flat-ish JSON object with string keys; return a plain dict copy."""
    import json

    from .errors import InvalidInputError

    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a mapping, got {type(metadata).__name__}")
    out = dict(metadata)
    for k in out:
        if not isinstance(k, str):
            raise InvalidInputError(f"metadata keys must be strings, got {k!r:.40}")
    try:
        text = json.dumps(out, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {e}") from e
    if len(text) > 64_000:
        raise InvalidInputError("metadata is larger than 64 KB once serialised")
    result: dict[str, Any] = json.loads(text)
    return result


# -- LLM output schemas (each named by the prompt that must produce it) -------------------------


class LLMFact(BaseModel):
    """One fact as the extraction prompt (``prompts/extract_facts.md``) returns it."""

    text: str = Field(min_length=3, max_length=1000)
    category: Category
    concepts: list[str] = Field(default_factory=list, max_length=12)
    source_turns: list[int] = Field(default_factory=list)


class ExtractionOutput(BaseModel):
    """Schema of ``prompts/extract_facts.md``."""

    facts: list[LLMFact] = Field(default_factory=list, max_length=50)


class ReconcileOutput(BaseModel):
    """Schema of ``prompts/reconcile.md``. ``target`` is the small integer of a listed fact."""

    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    target: int | None = None
    text: str | None = Field(default=None, max_length=1000)
    reason: str = ""
