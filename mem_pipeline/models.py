"""Data models: what goes in (messages, scope), what is stored (facts, history), what comes out."""

from __future__ import annotations

import enum
import re
import secrets
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import InvalidInputError, ScopeError

__all__ = [
    "AddEvent",
    "AddResult",
    "Category",
    "ExtractedFact",
    "FactPage",
    "HistoryEvent",
    "Kind",
    "Message",
    "Scope",
    "ScoreParts",
    "StoredFact",
    "Via",
    "iso",
    "new_fact_id",
    "session_key",
    "validate_metadata",
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


def session_key(session: Any) -> str | int | None:
    """A turn's ``metadata["session"]`` as turns are grouped by (anything but a string or an
    int: no session)."""
    return session if isinstance(session, (str, int)) and not isinstance(session, bool) else None


_last_id = (0, 0)
_id_lock = threading.Lock()


def new_fact_id() -> str:
    """A new fact id: random, and ordered by creation time (the layout of a UUIDv7: 48 bits of
    Unix milliseconds, a 12-bit sequence for ids made in the same millisecond, 62 random
    bits). It tells nothing of the fact's text (its creation time is public anyway), and facts
    created at the same ``created_at`` still list in the order they were written."""
    global _last_id
    with _id_lock:
        ms, seq = time.time_ns() // 1_000_000, 0
        if ms <= _last_id[0]:
            ms, seq = _last_id[0], _last_id[1] + 1
            if seq > 0xFFF:
                ms, seq = ms + 1, 0
        _last_id = (ms, seq)
    rand = secrets.randbits(62)
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand
    return str(uuid.UUID(int=value))


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(when: datetime) -> str:
    """The one form every output gives a time in: ISO 8601 in UTC with a ``Z``
    (``2026-03-01T12:00:00Z``, microseconds when there are any), as pydantic writes a UTC
    ``datetime`` in JSON, so the CLI, the HTTP service and the MCP server agree."""
    utc = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return utc.isoformat().replace("+00:00", "Z")


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
        except ValidationError as e:  # our own words, not pydantic's (no links, no input echo)
            why = "; ".join(str(err.get("msg", "")).removeprefix("Value error, ") for err in e.errors())
            raise ScopeError(why or "invalid scope") from None

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
    """A fact as an extractor proposes it, before grounding, dedupe and storage.

    ``source_turns`` are indexes into the ``add`` call's messages; ``subject`` is whom the fact
    is about (a speaker's name, "the user", or a relation of theirs: "sister Ana")."""

    text: str = Field(min_length=1)
    category: Category = Category.OTHER
    concepts: list[str] = Field(default_factory=list)
    source_turns: list[int] = Field(default_factory=list)
    subject: str | None = None
    #: the extractor that proposed it, when not the add's own ("offline": an LLM extractor's
    #: fallback rules took it from a turn the model took nothing from)
    origin: Literal["llm", "offline"] | None = None


Kind = Literal["fact", "turn"]


class StoredFact(BaseModel):
    """A fact or a turn as stored. Times are timezone-aware UTC.

    ``kind`` says which: a **turn** is what someone said, verbatim (``add(..., infer=False)``,
    and the turns an extracting ``add`` read); a **fact** is what an extractor made of turns,
    with ``sources``, the ids of the turns it came from. ``slot`` is the attribute a fact sets
    ("the user/residence"; see ``text.slots``), which a correction looks facts up by."""

    id: str
    kind: Kind = "fact"
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
    sources: list[str] = Field(default_factory=list)
    slot: str | None = None
    #: a fact that only answers the assistant's question about the user's statement just before
    #: ("Any particular brand?" / "walkers or nothing"): the id of that statement's fact, whose
    #: fate it shares (superseded with it, set aside with it; ``write.followups.answers_about``)
    about: str | None = None
    #: a turn of an extracting ``add`` in which the extractor found no fact (small talk it
    #: let through, a passing remark): kept for search, but it alone never makes a question
    #: count as about what the memory holds (``read``'s relevance gate)
    bare: bool = False

    @property
    def is_valid(self) -> bool:
        """Not superseded (``invalid_at`` is None); the JSON outputs call it ``is_valid`` too."""
        return self.invalid_at is None

    def brief(self) -> dict[str, Any]:
        """The JSON shape of a fact or turn in every output (CLI ``--json``, HTTP, MCP): the
        field names of this class, ``is_valid`` included, times as :func:`iso`."""
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "category": self.category.value,
            "concepts": self.concepts,
            "metadata": self.metadata,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "valid_from": iso(self.valid_from),
            "invalid_at": iso(self.invalid_at) if self.invalid_at else None,
            "is_valid": self.is_valid,
            "superseded_by": self.superseded_by,
            "confirmations": self.confirmations,
            "recalls": self.recalls,
            "valence": self.valence,
            "sources": self.sources,
        }


EventName = Literal["ADD", "REINFORCE", "UPDATE", "SUPERSEDE", "DELETE", "NOOP", "REJECT"]


class FactPage(BaseModel):
    """One page of a scope's facts, oldest first (``Memory.page``). ``next_cursor`` is None on
    the last page; pass it back as ``cursor`` for the next one."""

    facts: list[StoredFact]
    next_cursor: str | None = None
    #: how many facts the whole listing holds (every page, with the same filters)
    total: int | None = None


class AddEvent(BaseModel):
    """What ``add`` did with one fact or turn."""

    event: EventName
    id: str | None
    kind: Kind = "fact"
    text: str
    category: Category | None = None
    previous_id: str | None = None
    reason: str | None = None


class AddResult(BaseModel):
    """The outcome of ``Memory.add``: one event per fact (per turn with ``infer=False``), the
    turns an extracting add kept (``turns``), and what it cost."""

    events: list[AddEvent] = Field(default_factory=list)
    turns: list[AddEvent] = Field(default_factory=list)
    extractor: str = "raw"
    #: LLM extraction windows (calls before retries), and facts whose cited lines did not
    #: support them and were grounded to the line that does
    windows: int = 0
    regrounded: int = 0
    #: facts its cited turns alone did not support, kept because the same speaker's turns
    #: next to them complete it (those turns are added to its sources; ``write.ground.widen``)
    widened: int = 0
    #: facts the offline rules took from user turns the LLM took no fact from
    #: (``MemoryConfig.extract_backfill``)
    backfilled: int = 0
    #: the LLM's facts replaced by the rules' statement of the same turn, which says the change
    #: ("now", "no longer", "correction") the model's wording left out
    replaced: int = 0
    #: the LLM's facts that told a move of the conversation ("Gina asked Jon about the
    #: flooring", "Caroline agreed with Melanie's plans"), not kept
    acts: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.events if e.id is not None and e.event != "REJECT"]

    @property
    def turn_ids(self) -> list[str]:
        """The ids of the turns this add stored (or found already stored)."""
        return [e.id for e in self.turns if e.id is not None]

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
    #: how likely the hit is relevant at all, comparable across queries: a calibrated
    #: probability from the cosine and the share of the query's words the text holds
    #: (``read.rank.confidence``); ``search(min_score=...)`` drops hits below a floor
    confidence: float = 1.0


class Via(BaseModel):
    """How an association hit was reached: from ``query_concept`` along ``path`` (weights per step)."""

    query_concept: str
    path: list[str]
    weights: list[float]


#: Limits on caller metadata (``validate_metadata``). The engine reads payloads with a
#: recursion limit of 128 nested containers (its write-ahead log included): one fact whose
#: metadata nested deeper made the whole store unopenable. 32 levels is far more than any
#: real metadata needs and far below that limit.
METADATA_MAX_DEPTH = 32
METADATA_MAX_KEYS = 1_000
METADATA_MAX_BYTES = 64_000
METADATA_MAX_KEY_CHARS = 256
#: Integers the engine stores exactly (a signed 64-bit integer; larger ones became floats).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"{where}: not valid Unicode (lone surrogate at {e.start})") from None


def validate_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check caller metadata before anything is written; return a plain JSON copy.

    A JSON object with string keys, nested at most :data:`METADATA_MAX_DEPTH` levels (lists
    and objects), at most :data:`METADATA_MAX_KEYS` keys in all, keys of at most
    :data:`METADATA_MAX_KEY_CHARS` characters, at most :data:`METADATA_MAX_BYTES` once
    serialised; numbers finite, integers within a signed 64-bit range, text valid Unicode (no
    lone surrogates). Tuples become lists. Anything else is an :class:`InvalidInputError`
    naming the path of the offending value.
    """
    import json

    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a mapping, got {type(metadata).__name__}")
    keys = 0

    def walk(value: Any, path: str, depth: int) -> Any:
        nonlocal keys
        if isinstance(value, (Mapping, list, tuple)) and depth >= METADATA_MAX_DEPTH:
            raise InvalidInputError(
                f"metadata is nested deeper than {METADATA_MAX_DEPTH} levels (at {path[:80]})"
            )
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise InvalidInputError(f"metadata keys must be strings, got {k!r:.40} at {path[:80]}")
                if len(k) > METADATA_MAX_KEY_CHARS:
                    raise InvalidInputError(f"metadata key longer than {METADATA_MAX_KEY_CHARS} characters")
                _check_text(k, f"a key of {path[:80]}")
                keys += 1
                if keys > METADATA_MAX_KEYS:
                    raise InvalidInputError(f"metadata has more than {METADATA_MAX_KEYS} keys")
                out[k] = walk(v, f"{path}.{k[:40]}", depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            return [walk(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not _INT_MIN <= value <= _INT_MAX:
                raise InvalidInputError(
                    f"{path[:80]}: integers must fit in 64 bits (pass larger numbers as text)"
                )
            return int(value)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise InvalidInputError(f"{path[:80]}: numbers must be finite")
            return float(value)
        if isinstance(value, str):
            _check_text(value, path[:80])
            return value
        raise InvalidInputError(
            f"{path[:80]}: {type(value).__name__} is not JSON (use str, number, bool, None, list or mapping)"
        )

    result: dict[str, Any] = walk(metadata, "metadata", 0)
    if len(json.dumps(result, ensure_ascii=False).encode("utf-8")) > METADATA_MAX_BYTES:
        raise InvalidInputError(f"metadata is larger than {METADATA_MAX_BYTES // 1000} KB once serialised")
    return result


# -- LLM output schemas (each named by the prompt that must produce it) -------------------------


class LLMFact(BaseModel):
    """One fact as the extraction prompt (``prompts/extract_facts.md``) returns it, with the
    numbers of the ``lines`` it comes from and whom it is ``about``. (A schema that put the
    line number first made the 1.5B model copy each line verbatim, greetings included.)"""

    text: str = Field(min_length=3, max_length=1000)
    about: str | None = Field(default=None, max_length=200)
    category: Category = Category.OTHER
    concepts: list[str] = Field(default_factory=list, max_length=12)
    lines: list[int] = Field(default_factory=list, max_length=50)


class ExtractionOutput(BaseModel):
    """Schema of ``prompts/extract_facts.md``."""

    facts: list[LLMFact] = Field(default_factory=list, max_length=50)


class ReconcileItem(BaseModel):
    """One decision of ``prompts/reconcile.md``: for new fact ``fact``, ``action`` on the listed
    stored fact ``target`` (its small integer)."""

    fact: int
    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    target: int | None = None
    text: str | None = Field(default=None, max_length=1000)
    reason: str = Field(default="", max_length=300)


class ReconcileBatch(BaseModel):
    """Schema of ``prompts/reconcile.md``: one decision per new fact."""

    decisions: list[ReconcileItem] = Field(default_factory=list, max_length=50)
