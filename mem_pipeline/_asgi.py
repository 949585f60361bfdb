"""The HTTP service's boundary: error bodies in our own words, and two pure ASGI middlewares
that refuse a request before any endpoint (or body parser) sees it: the body size limit and the
request guard (one key header, strict UTF-8, no repeated identity, the key checked first)."""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse

from .errors import (
    EmbedderError,
    ExtractionPendingError,
    InvalidInputError,
    LLMError,
    MemPipelineError,
    NotFoundError,
    StoreError,
)
from .keys import KeyStore

__all__ = [
    "HTTP_MESSAGES",
    "HTTP_NAMES",
    "UNAUTHORIZED",
    "BodyLimit",
    "RequestGuard",
    "error_extra",
    "error_response",
    "public_message",
    "status_of",
]

log = logging.getLogger(__name__)

_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGIApp = Callable[[MutableMapping[str, Any], _Receive, _Send], Awaitable[None]]


# -- errors -----------------------------------------------------------------------------------
_STATUS: list[tuple[type[MemPipelineError], int]] = [
    (NotFoundError, 404),
    (InvalidInputError, 422),
    (ExtractionPendingError, 202),
    (LLMError, 502),
    (StoreError, 503),
    (EmbedderError, 503),
]
HTTP_MESSAGES = {
    400: "malformed request body (it must be JSON)",
    404: "no such route",
    405: "method not allowed on this route",
}
HTTP_NAMES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "TooLarge",
}


def error_response(
    status: int, kind: str, message: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {"type": kind, "message": message, **extra}
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def status_of(e: MemPipelineError) -> int:
    return next((code for cls, code in _STATUS if isinstance(e, cls)), 500)


def public_message(e: MemPipelineError) -> str:
    """What a client is told. Errors about its own input carry our message; failures of the
    store, the embedder, the LLM or the configuration are logged in full and answered with a
    sentence that names no path, library or internal detail."""
    if isinstance(e, ExtractionPendingError):
        return f"extraction failed; the turns were kept as pending {e.pending_id} and will be retried"
    if isinstance(e, (InvalidInputError, NotFoundError)):
        return str(e)
    log.error("%s: %s", type(e).__name__, e)
    if isinstance(e, LLMError):
        return "the LLM endpoint failed (see the server log)"
    if isinstance(e, (StoreError, EmbedderError)):
        return "the store is unavailable (see the server log)"
    return "internal error (see the server log)"


def error_extra(e: MemPipelineError) -> dict[str, Any]:
    return {"pending_id": e.pending_id} if isinstance(e, ExtractionPendingError) else {}


# -- request size -----------------------------------------------------------------------------
class BodyLimit:
    """Pure ASGI middleware: a body over ``max_bytes`` gets a 413 before the app sees it.

    The body is read (at most ``max_bytes`` kept) and replayed to the app. An oversized body is
    drained so the client reads a clean 413 instead of a reset connection, unless it announces
    itself (Content-Length) as more than 16 x the limit, which is refused at once."""

    def __init__(self, app: _ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, send: _Send) -> None:
        resp = error_response(413, "TooLarge", f"request body is larger than {self.max_bytes} bytes")
        await send({"type": "http.response.start", "status": 413, "headers": resp.raw_headers})
        await send({"type": "http.response.body", "body": resp.body})

    async def __call__(self, scope: MutableMapping[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                announced = int(length)
            except ValueError:
                announced = -1
            if announced < 0 or announced > 16 * self.max_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # disconnect: nothing to answer
                return
            body = msg.get("body", b"")
            size += len(body)
            if size <= self.max_bytes:
                chunks.append(body)
            if not msg.get("more_body", False):
                break
        if size > self.max_bytes:
            await self._too_large(send)
            return
        replayed = False

        async def replay() -> _Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


# -- request shape and identity, before anything is parsed -----------------------------------
_IDENTITY_PARAMS = ("user_id", "tenant")


def _query_pairs(raw: bytes) -> list[tuple[str, str]] | None:
    """The query string's (name, value) pairs decoded as strict UTF-8; None if any is not."""
    out = []
    for part in raw.split(b"&"):
        if not part:
            continue
        name, _, value = part.partition(b"=")
        try:
            out.append(
                (
                    urllib.parse.unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8"),
                    urllib.parse.unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8"),
                )
            )
        except UnicodeDecodeError:
            return None
    return out


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of the one ``Authorization: Bearer`` header, else None."""
    values = [v for k, v in headers if k.lower() == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, token = values[0].decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class RequestGuard:
    """Pure ASGI middleware: refuse what must never reach an endpoint, before the body is read.

    - more than one ``Authorization`` header (400: which one would be the identity?);
    - a query string that is not valid UTF-8 (400: ``jos%E9`` and ``jos%E8`` must not both
      decode to the same ``jos\ufffd`` user), or that repeats ``user_id`` or ``tenant`` (400);
    - under ``/v1/`` and ``/ui/api/``, a missing, wrong or revoked key (401), so that a
      malformed body never answers before the key is checked.
    """

    def __init__(self, app: _ASGIApp, keys: KeyStore, protected: tuple[str, ...] = ("/v1/",)) -> None:
        self.app = app
        self.keys = keys
        self.protected = protected

    async def __call__(self, scope: MutableMapping[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        problem: tuple[int, str, str] | None = None
        pairs = _query_pairs(scope.get("query_string") or b"")
        raw_path = scope.get("raw_path")
        if sum(1 for k, _ in headers if k.lower() == b"authorization") > 1:
            problem = (400, "BadRequest", "send one Authorization header, not several")
        elif pairs is None:
            problem = (400, "BadRequest", "the query string is not valid UTF-8")
        elif isinstance(raw_path, bytes) and not _utf8_path(raw_path):
            problem = (400, "BadRequest", "the path is not valid UTF-8")
        else:
            names = [k for k, _ in pairs]
            repeated = [n for n in _IDENTITY_PARAMS if names.count(n) > 1]
            if repeated:
                problem = (400, "BadRequest", f"the {repeated[0]} parameter is given more than once")
            elif str(scope.get("path", "")).startswith(self.protected):
                token = bearer_token(headers)
                try:
                    known = token is not None and self.keys.verify(token) is not None
                except MemPipelineError as e:  # the key file cannot be read: say so, not where
                    log.error("API keys: %s", e)
                    problem = (503, "StoreError", "the API key store is unavailable (see the server log)")
                else:
                    if not known:
                        problem = (401, "Unauthorized", UNAUTHORIZED)
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, kind, message = problem
        extra = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        resp = error_response(status, kind, message, headers=extra)
        await send({"type": "http.response.start", "status": status, "headers": resp.raw_headers})
        await send({"type": "http.response.body", "body": resp.body})


def _utf8_path(raw: bytes) -> bool:
    try:
        urllib.parse.unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


UNAUTHORIZED = "missing, wrong or revoked API key (Authorization: Bearer <key>)"
