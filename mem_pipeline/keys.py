"""API keys for the HTTP service, hashed at rest in a small JSON file beside the store.

A key looks like ``mpk_<key id>_<secret>``. Only the key id, a random per-key salt and
``HMAC-SHA256(salt, secret)`` are written to the file; the full key is shown once, when it is
created. The secret has 256 bits of entropy, so a fast keyed hash is enough (no password KDF).

Each key binds a scope: a ``tenant`` and a ``user_id`` (the key acts as that one user), or a
``tenant`` alone (the request then names the user, always inside that tenant). Identity comes
from the key, never from a request field that could name another tenant.

The file is re-read when it changes on disk, so ``mem-pipeline keys revoke`` takes effect on a
running server without a restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .config import MemoryConfig, default_data_path
from .errors import InvalidInputError, StoreError
from .models import Scope, iso

__all__ = ["KEYS_FILENAME", "ApiKey", "KeyStore", "default_keys_path"]

KEYS_FILENAME = "api-keys.json"
_PREFIX = "mpk"


def _iso(text: str) -> str:
    """A stored time in the form every output uses (files written before it end in +00:00)."""
    try:
        return iso(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return text


@dataclass(frozen=True)
class ApiKey:
    """One key's record (never its secret)."""

    id: str
    tenant: str
    user_id: str | None
    created_at: str
    name: str | None = None
    revoked_at: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "user_id": self.user_id,
            "name": self.name,
            "created_at": _iso(self.created_at),
            "revoked_at": _iso(self.revoked_at) if self.revoked_at else None,
        }


def default_keys_path(config: MemoryConfig) -> Path:
    """``api-keys.json`` inside the embedded store's directory; for a Qdrant server or a
    ``:memory:`` store, in the user data directory."""
    base = config.path if config.path and config.path != ":memory:" and not config.url else None
    return Path(base or default_data_path()) / KEYS_FILENAME


def _digest(salt: bytes, secret: str) -> str:
    return hmac.new(salt, secret.encode("utf-8"), hashlib.sha256).hexdigest()


class KeyStore:
    """Create, revoke, list and verify API keys kept in one JSON file (mode 0600)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._rows: dict[str, dict[str, Any]] = {}

    # -- file ---------------------------------------------------------------------------------
    def _load(self) -> dict[str, dict[str, Any]]:
        """The rows by key id, re-read only when the file changed (size or mtime)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._rows = None, {}
            return self._rows
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                rows = {r["id"]: r for r in data.get("keys", [])}
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
                raise StoreError(f"cannot read the API key file {self.path}: {e}") from e
            self._stamp, self._rows = stamp, rows
        return self._rows

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[dict[str, dict[str, Any]]]:
        """Read-modify-write under an exclusive lock shared with every process (``flock`` on
        ``<file>.lock``) and this process's threads: two ``keys create`` racing a ``keys
        revoke`` each see the other's write. Yields the rows as on disk now."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._lock:
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._stamp = None  # another process may have written since our last read
                yield dict(self._load())
            finally:
                os.close(fd)  # closing the descriptor releases the lock

    def _save(self, rows: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": 1, "keys": list(rows.values())}, indent=2)
        fd, tmp = tempfile.mkstemp(prefix=".api-keys-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise StoreError(f"cannot write the API key file {self.path}: {e}") from e
        self._stamp = None  # re-read (and re-stamp) on the next access

    @staticmethod
    def _record(row: dict[str, Any]) -> ApiKey:
        return ApiKey(
            id=row["id"],
            tenant=row["tenant"],
            user_id=row.get("user_id"),
            created_at=row["created_at"],
            name=row.get("name"),
            revoked_at=row.get("revoked_at"),
        )

    # -- operations ---------------------------------------------------------------------------
    def create(
        self, *, tenant: str, user_id: str | None = None, name: str | None = None
    ) -> tuple[str, ApiKey]:
        """A new key for ``tenant`` (and ``user_id``, if given): returns (the key, its record).

        The key itself is not stored; show it to the person once."""
        scope = Scope.of(user_id if user_id is not None else "-", tenant)  # validates both
        kid = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        row = {
            "id": kid,
            "tenant": scope.tenant,
            "user_id": user_id,
            "name": name,
            "created_at": iso(datetime.now(timezone.utc).replace(microsecond=0)),
            "revoked_at": None,
            "salt": salt.hex(),
            "hash": _digest(salt, secret),
        }
        with self._exclusive() as rows:
            rows[kid] = row
            self._save(rows)
        return f"{_PREFIX}_{kid}_{secret}", self._record(row)

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by its id (or by the full key). Unknown id: :class:`InvalidInputError`."""
        kid = key_id.split("_")[1] if key_id.startswith(f"{_PREFIX}_") and key_id.count("_") >= 2 else key_id
        with self._exclusive() as rows:
            if kid not in rows:
                raise InvalidInputError(f"no API key with id {kid!r:.40}")
            row = dict(rows[kid])
            if row.get("revoked_at") is None:
                row["revoked_at"] = iso(datetime.now(timezone.utc).replace(microsecond=0))
                rows[kid] = row
                self._save(rows)
        return self._record(row)

    def list_keys(self) -> list[ApiKey]:
        with self._lock:
            rows = self._load()
            return [self._record(r) for r in rows.values()]

    def verify(self, key: str) -> ApiKey | None:
        """The record of a valid, unrevoked key; ``None`` for anything else (constant-time compare)."""
        parts = key.split("_", 2)
        if len(parts) != 3 or parts[0] != _PREFIX or not parts[1] or not parts[2]:
            return None
        with self._lock:
            row = self._load().get(parts[1])
        if row is None:
            return None
        try:
            ok = hmac.compare_digest(_digest(bytes.fromhex(row["salt"]), parts[2]), str(row["hash"]))
        except (ValueError, KeyError, TypeError):
            return None
        if not ok or row.get("revoked_at") is not None:
            return None
        return self._record(row)
