"""Checks of what a caller passes to :class:`~mem_pipeline.Memory`: messages, texts, concepts,
limits, ids, times and page cursors. Each returns the value in the shape the stages use, or
raises :class:`~mem_pipeline.errors.InvalidInputError` saying what is wrong; nothing is written
before these pass."""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .config import MemoryConfig
from .errors import InvalidInputError
from .models import Message
from .text.phrases import normalize_concept

__all__ = [
    "MAX_CONCEPTS",
    "MIN_ID_PREFIX",
    "abbreviations",
    "as_datetime",
    "check_concepts",
    "check_id",
    "check_limit",
    "check_messages",
    "check_query",
    "check_text",
    "decode_cursor",
    "encode_cursor",
    "match_id_prefix",
    "utf8",
]

MAX_CONCEPTS = 32


def utf8(text: str, what: str) -> str:
    """Refuse strings that cannot be stored or embedded (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"{what} is not valid Unicode (lone surrogate at {e.start})") from e
    return text


def _message(i: int, m: Any) -> Message:
    if isinstance(m, Message):
        return m
    if not isinstance(m, Mapping):
        raise InvalidInputError(
            f"message {i} must be a mapping with role and content, got {type(m).__name__}"
        )
    content = m.get("content")
    if not isinstance(content, str):
        raise InvalidInputError(f"message {i}: content must be a string, got {type(content).__name__}")
    role = m.get("role", "user")
    if role not in ("user", "assistant", "system"):
        raise InvalidInputError(f"message {i}: role must be user, assistant or system")
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInputError(f"message {i}: name must be a string")
    return Message(role=role, content=content, name=name)


def check_messages(messages: Any, config: MemoryConfig) -> list[Message]:
    """A string (one user turn), a mapping or a list of ``{"role", "content", "name"?}``; each
    turn non-empty, valid Unicode, without NUL, within ``max_message_chars``; the call within
    ``max_add_turns`` and ``max_add_chars``."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, (Mapping, Message)):
        messages = [messages]
    if not isinstance(messages, Sequence) or isinstance(messages, (bytes, bytearray)):
        raise InvalidInputError("messages must be a string or a list of {'role', 'content'} mappings")
    if not messages:
        raise InvalidInputError("messages is empty: nothing to remember")
    if len(messages) > config.max_add_turns:
        raise InvalidInputError(
            f"{len(messages)} turns in one add; the limit is {config.max_add_turns} "
            "(MemoryConfig.max_add_turns): split them over several calls. Nothing was stored."
        )
    out = []
    for i, m in enumerate(messages):
        msg = _message(i, m)
        if not msg.content.strip():
            raise InvalidInputError(f"message {i} is empty or whitespace")
        if "\x00" in msg.content:
            raise InvalidInputError(f"message {i} contains a NUL character")
        utf8(msg.content, f"message {i}")
        utf8(msg.name or "", f"message {i} name")
        if len(msg.content) > config.max_message_chars:
            raise InvalidInputError(
                f"message {i} has {len(msg.content)} characters; the limit is "
                f"{config.max_message_chars} (MemoryConfig.max_message_chars). Split it "
                "into turns: nothing was stored."
            )
        out.append(msg)
    total = sum(len(m.content) for m in out)
    if total > config.max_add_chars:
        raise InvalidInputError(
            f"{total} characters in one add; the limit is {config.max_add_chars} "
            "(MemoryConfig.max_add_chars): split them over several calls. Nothing was stored."
        )
    return out


def check_concepts(concepts: Iterable[str] | None) -> list[str]:
    """Caller concepts, normalised (``normalize_concept``), without repeats, at most
    :data:`MAX_CONCEPTS`."""
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
        n = normalize_concept(utf8(c, "a concept"))
        if n and n not in out:
            out.append(n)
    if len(out) > MAX_CONCEPTS:
        raise InvalidInputError(f"at most {MAX_CONCEPTS} concepts per fact, got {len(out)}")
    return out


def check_text(text: Any, what: str = "text") -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError(f"{what} is empty or whitespace")
    return utf8(text, what)


def check_query(query: Any, config: MemoryConfig, what: str = "query") -> str:
    """A search query: a non-empty string within ``max_message_chars``, the limit of one
    message of ``add`` (a longer query cannot be about anything a turn said, and costs seconds
    to embed and match)."""
    text = check_text(query, what)
    if len(text) > config.max_message_chars:
        raise InvalidInputError(
            f"the {what} has {len(text)} characters; the limit is {config.max_message_chars} "
            "(MemoryConfig.max_message_chars, as for one message of add)"
        )
    return text


def check_limit(limit: Any) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidInputError(f"limit must be an integer from 1 to 1000, got {limit!r}")
    return limit


def check_id(id: Any) -> str:
    """A fact id (a UUID string), normalised."""
    if not isinstance(id, str):
        raise InvalidInputError(f"a fact id is a UUID string, got {type(id).__name__}")
    try:
        return str(uuid.UUID(id))
    except ValueError as e:
        raise InvalidInputError(f"{id!r:.60} is not a fact id (a UUID)") from e


#: The shortest id prefix accepted for a fact id (git's default abbreviation is 7; ours are
#: time-ordered, so their first characters are shared more often).
MIN_ID_PREFIX = 8
_PREFIX_RE = re.compile(r"^[0-9a-f-]+$")


def match_id_prefix(given: Any, ids: Iterable[str]) -> str | None:
    """The one id of ``ids`` that ``given`` names: a whole fact id (returned normalised, found or
    not), or a prefix of :data:`MIN_ID_PREFIX` or more characters that exactly one id starts
    with, as git takes short hashes. None when no id starts with it; an ambiguous or malformed
    prefix is an :class:`InvalidInputError` (the ambiguous one names the candidates)."""
    if not isinstance(given, str):
        raise InvalidInputError(f"a fact id is a string, got {type(given).__name__}")
    text = given.strip().lower()
    try:
        return str(uuid.UUID(text))
    except ValueError:
        pass
    if len(text) < MIN_ID_PREFIX or not _PREFIX_RE.match(text) or len(text) > 36:
        raise InvalidInputError(
            f"{given!r:.60} is not a fact id: give the whole id or at least {MIN_ID_PREFIX} of its "
            "first characters (as list, add and search print them)"
        )
    found = sorted(i for i in ids if i.startswith(text))
    if len(found) > 1:
        shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
        raise InvalidInputError(
            f"{given!r} is ambiguous: {len(found)} ids start with it ({shown}); give more characters"
        )
    return found[0] if found else None


def abbreviations(ids: Iterable[str]) -> dict[str, str]:
    """Each id's shortest prefix of at least :data:`MIN_ID_PREFIX` characters that no other of
    ``ids`` shares (what ``match_id_prefix`` takes back while no new id shares it)."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for i, fid in enumerate(ordered):
        shared = 0
        for other in ordered[max(0, i - 1) : i] + ordered[i + 1 : i + 2]:
            n = next((k for k, (a, b) in enumerate(zip(fid, other)) if a != b), min(len(fid), len(other)))
            shared = max(shared, n)
        size = max(MIN_ID_PREFIX, shared + 1)
        out[fid] = fid[: size + 1] if fid[size - 1 : size] == "-" else fid[:size]
    return out


def as_datetime(value: Any, what: str = "timestamp") -> datetime:
    """A timezone-aware time from a datetime (naive: UTC), an ISO 8601 string or epoch seconds."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, ValueError, OSError) as e:
            raise InvalidInputError(f"{what} {value!r} is not a representable time") from e
    if isinstance(value, str):
        try:
            return as_datetime(datetime.fromisoformat(value.replace("Z", "+00:00")), what)
        except ValueError as e:
            raise InvalidInputError(f"{what} {value!r:.60} is not an ISO 8601 time") from e
    raise InvalidInputError(f"{what} must be a datetime, an ISO string or epoch seconds")


def encode_cursor(key: tuple[float, str]) -> str:
    """A page cursor: the (created time, id) of the last fact of a page, opaque to callers."""
    return base64.urlsafe_b64encode(json.dumps([key[0], key[1]]).encode()).decode().rstrip("=")


def decode_cursor(cursor: Any) -> tuple[float, str] | None:
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
