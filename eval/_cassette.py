"""vcrpy cassettes of the LLM path, shared by the LLM tests (``tests/test_llm_cassettes.py``,
``tests/test_behaviour_llm.py``) and ``python -m eval.behaviour --cassette``.

A cassette matches a request on method, scheme, host, port, path and body, so replay needs the
base URL that was recorded (no key: authorization headers are never stored) and a request the
pipeline builds differently (a prompt, the model's name, the schema) finds no answer. With
``hashed`` the cassette keeps each request body as its SHA-256 only: small, and still an exact
match (:func:`tape` keeps no request headers either).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: request headers never written to a cassette
FILTER_HEADERS = ["authorization", "api-key", "x-api-key", "cookie", "openai-organization"]
#: response headers dropped before recording (identifying, or changing on every call)
_DROP_RESPONSE = ("set-cookie", "openai-organization", "x-request-id", "date", "server")
MATCH_ON = ["method", "scheme", "host", "port", "path", "body"]


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for h in list(headers):
        if h.lower() in _DROP_RESPONSE:
            del headers[h]
    return response


def hash_body(request: Any) -> Any:
    """A request whose body is replaced by its SHA-256. vcrpy applies this to the live request
    and to every recorded one as it loads them, so a body that is already a hash stays as it
    is, and replay still matches the exact body."""
    out = copy.deepcopy(request)
    body = request.body or b""
    raw = body if isinstance(body, bytes) else body.encode()
    if not raw.startswith(b"sha256:"):
        out.body = "sha256:" + hashlib.sha256(raw).hexdigest()
    return out


def compact(request: Any) -> Any:
    """:func:`hash_body`, and no request headers (none is matched on)."""
    out = hash_body(request)
    out.headers = {}
    return out


def make_vcr(library: Path, record_mode: str, *, hashed: bool = False, headers: bool = True) -> Any:
    """``hashed``: keep request bodies as hashes; ``headers=False`` (with ``hashed``): keep no
    request headers either."""
    import vcr

    before = (hash_body if headers else compact) if hashed else None
    return vcr.VCR(
        cassette_library_dir=str(library),
        record_mode=record_mode,
        filter_headers=FILTER_HEADERS,
        before_record_request=before,
        before_record_response=scrub_response,
        match_on=MATCH_ON,
        decode_compressed_response=True,
    )


@dataclass
class Tape:
    """What a run under :func:`tape` did: ``requests`` the pipeline sent, ``live`` of them that
    the cassette had no answer for (recorded in record mode, refused in replay), and the
    cassette's ``interactions`` and how many of them were ``played``."""

    path: Path
    record: bool
    requests: int = 0
    live: int = 0
    interactions: int = 0
    played: int = 0
    pruned: int = 0
    cassette: Any = None

    def save(self) -> None:
        """Write what was recorded so far (a long recording survives a crash)."""
        if self.record and self.cassette is not None:
            self.cassette._save()
            # vcrpy's serializer turns the bodies it writes into str in place; a request
            # recorded earlier in this run and asked again would then be answered with a str
            # body, which the HTTP client cannot read
            for _, response in self.cassette.data:
                body = response.get("body", {})
                if isinstance(body.get("string"), str):
                    body["string"] = body["string"].encode("utf-8")

    def problems(self) -> list[str]:
        """Why a replay does not stand for the recording (empty when it does)."""
        if self.record:
            return []
        out = []
        if self.live:
            out.append(f"{self.live} of {self.requests} LLM requests are not in {self.path}")
        if self.played < self.interactions:
            out.append(f"{self.interactions - self.played} recorded interactions were never requested")
        return out


@contextmanager
def tape(path: str | Path, *, record: bool = False, hashed: bool = True) -> Iterator[Tape]:
    """Run the block under the cassette at ``path``.

    Replay (the default, record mode ``none``): nothing reaches the network; a request the
    cassette has no answer for is counted in ``live`` and raises vcrpy's
    ``CannotOverwriteExistingCassetteException`` in the HTTP client (the LLM client lets it
    through); :meth:`Tape.problems` says what else went wrong (recorded requests never made).

    Record (mode ``new_episodes``): requests already recorded are replayed, new ones sent and
    recorded; at the end, recorded interactions this run never asked for are dropped,
    so the cassette holds exactly this run's requests.
    """
    path = Path(path)
    if not record and not path.exists():
        raise FileNotFoundError(f"no cassette at {path} (record it with --record)")
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = make_vcr(path.parent, "new_episodes" if record else "none", hashed=hashed, headers=not hashed)
    t = Tape(path=path, record=record)
    with rec.use_cassette(path.name) as cassette:
        t.cassette = cassette
        old = len(cassette.data)
        can_play = cassette.can_play_response_for

        def counting(request: Any) -> bool:
            ok = bool(can_play(request))
            t.requests += 1
            t.live += int(not ok)
            return ok

        cassette.can_play_response_for = counting
        try:
            yield t
        finally:
            t.played = sum(1 for i in range(old) if cassette.play_counts[i])
            t.interactions = old
            if record:
                keep = [d for i, d in enumerate(cassette.data) if i >= old or cassette.play_counts[i]]
                t.pruned = len(cassette.data) - len(keep)
                if t.pruned:
                    cassette.data[:] = keep
                    cassette.dirty = True
            t.cassette = None
