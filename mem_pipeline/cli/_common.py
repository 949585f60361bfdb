"""What the commands share: opening the store, naming facts by id or prefix, printing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from .._inputs import abbreviations, match_id_prefix
from ..config import MemoryConfig
from ..errors import NotFoundError
from ..memory import Memory
from ..models import Scope, StoredFact

__all__ = [
    "emit_json",
    "err",
    "fact_lines",
    "find_id",
    "open_memory",
    "say",
    "scope_of",
    "short_ids",
    "user_ids",
]


def open_memory(args: argparse.Namespace) -> Memory:
    """The Memory the command line names: ``--path`` / ``--url`` over the environment."""
    return Memory(config=MemoryConfig.from_env(path=args.path, url=getattr(args, "url", None)))


def scope_of(args: argparse.Namespace) -> Scope:
    return Scope.of(args.user, args.tenant)


def say(*lines: str) -> None:
    """Text for a person, on stdout."""
    for line in lines:
        print(line)


def emit_json(value: Any) -> None:
    """The one JSON document of a ``--json`` command, on stdout (nothing else goes there)."""
    print(json.dumps(value, ensure_ascii=False))


def user_ids(m: Memory, scope: Scope) -> list[str]:
    """Every id of the user's facts and turns, superseded ones included (only ids are read)."""
    return [fid for _, fid in m.store.fact_order(scope, include_invalid=True)]


def find_id(m: Memory, scope: Scope, given: str, *, deleted_ok: bool = False) -> str:
    """The full id ``given`` names for this user: a whole id, or a unique prefix of 8 or more
    characters. An id that names none of the user's facts is a :class:`NotFoundError` (exit 1),
    unless ``deleted_ok`` (a whole id of a deleted fact still has a history)."""
    whole = match_id_prefix(given, [])
    if whole is not None:
        if deleted_ok:
            return whole
        m.get(whole, user_id=scope.user_id, tenant=scope.tenant)  # NotFoundError if not this user's
        return whole
    found = match_id_prefix(given, user_ids(m, scope))
    if found is None:
        extra = " (the history of a deleted fact needs its whole id)" if deleted_ok else ""
        raise NotFoundError(
            f"no fact of user {scope.user_id!r} in tenant {scope.tenant!r} has an id starting "
            f"with {given!r}{extra}"
        )
    return found


def short_ids(m: Memory, scope: Scope, extra: Iterable[str] = ()) -> dict[str, str]:
    """The user's ids, each shortened to its shortest unique prefix (at least 8 characters)."""
    return abbreviations([*user_ids(m, scope), *extra])


def fact_lines(f: StoredFact, short: dict[str, str]) -> list[str]:
    """One fact in full, for ``get``: a field a line, named as in ``--json``."""
    rows: list[tuple[str, Any]] = [
        ("id", f.id),
        ("kind", f.kind),
        ("text", f.text),
        ("category", f.category.value),
        ("concepts", ", ".join(f.concepts) or "-"),
    ]
    brief = f.brief()
    rows += [(k, brief[k]) for k in ("created_at", "updated_at", "valid_from")]
    rows.append(("is_valid", "yes" if f.is_valid else f"no: superseded at {brief['invalid_at']}"))
    if f.superseded_by:
        rows.append(("superseded_by", short.get(f.superseded_by, f.superseded_by)))
    rows += [("confirmations", f.confirmations), ("recalls", f.recalls), ("valence", f"{f.valence:+.2f}")]
    if f.sources:
        rows.append(("sources", ", ".join(short.get(s, s) for s in f.sources)))
    if f.metadata:
        rows.append(("metadata", json.dumps(f.metadata, ensure_ascii=False)))
    return [f"{k:<14}{v}" for k, v in rows]


def err(message: str) -> None:
    """One line on stderr, whatever the message holds."""
    print(" ".join(message.split()), file=sys.stderr)
