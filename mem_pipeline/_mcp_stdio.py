"""The stdio transport of ``mem-pipeline mcp``: the SDK's ``stdio_server`` behind a guard.

The ``mcp`` SDK (2.3.0) reads each stdin line with ``jsonrpc_message_adapter.validate_json``
(pydantic's JSON parser). A line it cannot parse (not JSON, a lone surrogate such as
``"\\ud800"``, nesting deeper than about 200 levels, a JSON value that is not a JSON-RPC message)
becomes an ``Exception`` on the read stream, which the dispatcher only logs at debug level: no
reply is written, and the client waits for its timeout. On the way out, one lone surrogate in
a reply makes the SDK's stdout writer raise, which ends the whole server.

So every stdin line is screened here before the SDK sees it (:func:`screen`): a line the SDK
could not parse, or one that holds content we refuse, is answered at once with a JSON-RPC error
(``-32700`` parse error, ``-32600`` invalid request, ``-32602`` invalid params), with the request
id when the line is recognisably a request whose id can be read, else ``null``; the SDK only ever
sees lines it parses, and the server goes on with the next line. Every message the server sends
is made encodable first (a lone surrogate becomes U+FFFD), and every line written is UTF-8.

Seams used: ``stdio_server(stdin, stdout)`` with our own streams, and the low-level server's
``run(read_stream, write_stream, ...)`` with a wrapped write stream; nothing of the SDK is patched.
Because explicit streams make ``stdio_server`` skip its descriptor claim, :func:`_claim_std_fds`
does the same here: while serving, fd 0 reads ``/dev/null`` and fd 1 goes to stderr, so a stray
``print`` (ours or a native library's) cannot corrupt the wire.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Final, NamedTuple, TextIO, cast

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from typing_extensions import Self

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "Screened", "screen", "serve_stdio"]

log = logging.getLogger(__name__)

MAX_LINE_BYTES: Final = 1 << 20
"""The largest message accepted, in bytes (``remember`` takes at most 32,000 characters)."""
MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects accepted; an MCP request needs fewer than ten."""

_SKIM_BYTES: Final = 64 * 1024  # how much of an oversized line is read for its id
_SURROGATE = re.compile("[\ud800-\udfff]")
# JSON tokens, tolerant of broken input: a string (its closing quote optional, so an unterminated
# one costs one linear match), a run of openers, a run of closers, ':' / ',', any other scalar.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]+|[\]}]+|[:,]|[^\s\[\]{}:,"]+')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")
_DEEP_RUN = re.compile(r"[\[{]{" + str(MAX_DEPTH + 1) + "}")
# Only an escape can put a surrogate in decoded UTF-8 text; most messages hold none.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


class Screened(NamedTuple):
    """What to do with one stdin line: pass ``text`` on to the SDK, or answer ``error`` instead
    (both ``None``: a blank line, ignored)."""

    text: str | None
    error: JSONRPCError | None = None


class _Outline(NamedTuple):
    """What can be told of a message without trusting it: the id of a request, and where it
    went wrong (the top-level key holding the refused content)."""

    request_id: int | str | None
    top_key: str | None = None


def screen(raw: bytes, *, truncated: bool = False) -> Screened:
    """Screen one stdin line (``truncated``: only the first bytes of a line over the limit)."""
    if truncated:
        head = raw[:_SKIM_BYTES].decode("utf-8", "replace")
        return _refuse(_skim(head), INVALID_REQUEST, f"message larger than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        outline = _skim(raw.decode("utf-8", "replace"))
        return _refuse(outline, PARSE_ERROR, f"message is not valid UTF-8 (byte {e.start})")
    if not text.strip():
        return Screened(None)
    # Depth first, so that no parser recurses into absurd nesting.
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(text):
        outline = _skim(text)
        where = outline.top_key or "message"
        return _refuse_content(outline, f"{where}: nested deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        return _refuse(_skim(text), PARSE_ERROR, f"not valid JSON: {e}")
    problem = _find_problem(obj) if _SURROGATE_ESCAPE.search(text) else None
    if problem is not None:
        path, what = problem
        top = path[0] if path and isinstance(path[0], str) else None
        return _refuse_content(_Outline(_request_id(obj), top), f"{_where(path)}: {what}")
    if isinstance(obj, dict) and "method" in obj and "id" in obj and _valid_id(obj["id"]) is None:
        # the SDK would take it for a notification, and answer nothing
        return _refuse(_Outline(None), INVALID_REQUEST, "id: must be a string or an integer")
    try:  # the SDK's own parser: what passes here passes there
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as e:
        outline = _Outline(_request_id(obj))
        return _refuse(outline, INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {_first(e)}")
    return Screened(text)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _refuse(outline: _Outline, code: int, message: str) -> Screened:
    error = ErrorData(code=code, message=message)
    return Screened(None, JSONRPCError(jsonrpc="2.0", id=outline.request_id, error=error))


def _refuse_content(outline: _Outline, message: str) -> Screened:
    """Refused content: invalid params when it sits in a request's params, else invalid request."""
    in_params = outline.request_id is not None and outline.top_key == "params"
    return _refuse(outline, INVALID_PARAMS if in_params else INVALID_REQUEST, message)


def _valid_id(value: Any) -> int | str | None:
    if isinstance(value, str) and not _SURROGATE.search(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _request_id(obj: Any) -> int | str | None:
    """The id of a message that is recognisably a request (it has a method), else None."""
    if isinstance(obj, dict) and "method" in obj:
        return _valid_id(obj.get("id"))
    return None


def _too_deep(text: str) -> bool:
    """Whether the arrays and objects of ``text`` nest deeper than MAX_DEPTH: on its skeleton of
    brackets (strings removed), each pass removes the innermost pairs, in C, at most MAX_DEPTH
    times. Unbalanced brackets stop it: not JSON, which the parser reports."""
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        if _DEEP_RUN.search(skeleton):  # the usual attack, found in one pass
            return True
        skeleton, n = _INNERMOST.subn("", skeleton)
        if not skeleton or n == 0:
            return False
    return _INNERMOST.search(skeleton) is not None


def _skim(text: str) -> _Outline:
    """The outline of a message that cannot be parsed (broken, truncated or too deep), read from
    its tokens in one linear pass: the top-level ``id`` when the top-level object also has a
    ``method``, and the top-level key under which the nesting first goes deeper than MAX_DEPTH."""
    depth = 0
    key: str | None = None  # the current top-level key
    pending: Any = None  # a string at depth 1 that may be a key
    expect_value = False
    found_id: Any = None
    has_method = False
    deep_key: str | None = None
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t[0] in "[{":
            if depth + len(t) > MAX_DEPTH and deep_key is None and depth >= 1:
                deep_key = key
            depth += len(t)
            expect_value = False
        elif t[0] in "]}":
            depth -= len(t)
            expect_value = False
        elif t == ":":
            if depth == 1 and isinstance(pending, str):
                key, expect_value = pending, True
            pending = None
        elif t == ",":
            pending, expect_value = None, False
        elif depth == 1:
            if expect_value:
                if key == "id" and found_id is None:
                    found_id = _scalar(t)
                has_method = has_method or key == "method"
                expect_value = False
            else:
                pending = _scalar(t)
    return _Outline(_valid_id(found_id) if has_method else None, deep_key)


def _scalar(token: str) -> Any:
    try:
        return json.loads(token)
    except (ValueError, RecursionError):
        return None


def _find_problem(obj: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The first lone surrogate (in a key or a string) of a parsed message, as (path, what);
    None if there is none."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(obj, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            m = _SURROGATE.search(value)
            if m:
                return path, _surrogate_message(value, m)
        elif isinstance(value, (dict, list)):
            if isinstance(value, list):
                stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
                continue
            entries = []
            for k, v in value.items():
                m = _SURROGATE.search(k)
                if m:
                    return path, "a key " + _surrogate_message(k, m)
                entries.append((v, (*path, k)))
            stack.extend(reversed(entries))
    return None


def _surrogate_message(s: str, m: re.Match[str]) -> str:
    return (
        f"holds a lone surrogate (U+{ord(m.group()):04X}) at index {m.start()}, which is not valid"
        " Unicode; send text as UTF-8 (a surrogate escape must be half of a pair)"
    )


def _where(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            seg = p if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) else json.dumps(p)
            out += f".{seg}" if out else seg
    out = out or "message"
    return out if len(out) <= 120 else out[:100] + "..."


def _first(e: ValidationError) -> str:
    errors = e.errors(include_url=False, include_input=False)
    if not errors:
        return "invalid"
    err = errors[0]
    loc = ".".join(str(x) for x in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


# -- the wire -------------------------------------------------------------------------------------


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (which UTF-8 cannot carry) becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


class _Wire:
    """The protocol's output: whole lines, one writer at a time (the SDK's writer task and our
    answers from the reader thread), always valid UTF-8."""

    def __init__(self, sink: BinaryIO) -> None:
        self._sink = sink
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        data = _utf8(text)
        with self._lock:
            self._sink.write(data)
            self._sink.flush()


class _WireText:
    """What the SDK writes to as stdout (through ``anyio.wrap_file``: ``write``, ``flush``; it
    writes one JSON line per call)."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire

    def write(self, s: str) -> int:
        self._wire.write(s)
        return len(s)

    def flush(self) -> None:  # each write is flushed already
        pass


class _ScreenedLines:
    """What the SDK reads as stdin (through ``anyio.wrap_file``: ``readline``): only lines it can
    parse. Every other line is answered here, on the wire, and skipped."""

    def __init__(self, source: BinaryIO, wire: _Wire) -> None:
        self._source = source
        self._wire = wire

    def readline(self) -> str:
        while True:
            raw = self._source.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return ""
            truncated = len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n")
            if truncated:
                self._skip_rest_of_line()
            verdict = screen(raw, truncated=truncated)
            if verdict.text is not None:
                return verdict.text
            if verdict.error is not None:
                log.warning(
                    "refused a message (JSON-RPC %d, id %r): %s",
                    verdict.error.error.code,
                    verdict.error.id,
                    verdict.error.error.message,
                )
                try:
                    self._wire.write(verdict.error.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
                except OSError:  # the client is gone: end as at EOF
                    return ""

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self._source.readline(_SKIM_BYTES)
            if not chunk or chunk.endswith(b"\n"):
                return


class _EncodableMessages:
    """The server's write stream, with each message made encodable as UTF-8 JSON before the
    SDK serialises it (its stdio writer raises on a lone surrogate, which ends the server)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        message = encodable(item)
        if message is not None:
            await self._inner.send(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def encodable(item: SessionMessage) -> SessionMessage | None:
    """``item``, or a copy whose lone surrogates are U+FFFD. Should that fail, a reply becomes
    an internal error for its id, and any other message is dropped (logged)."""
    try:
        item.message.model_dump_json(by_alias=True, exclude_unset=True)
        return item
    except (PydanticSerializationError, UnicodeError, ValueError):
        pass
    try:
        data = _scrub(item.message.model_dump(by_alias=True, exclude_unset=True))
        message = jsonrpc_message_adapter.validate_python(data, by_name=False)
        message.model_dump_json(by_alias=True, exclude_unset=True)
    except (PydanticSerializationError, ValidationError, UnicodeError, ValueError):
        log.exception("an outgoing message could not be encoded as UTF-8 JSON")
        if not isinstance(item.message, (JSONRPCResponse, JSONRPCError)):
            return None
        err = ErrorData(code=INTERNAL_ERROR, message="the reply could not be encoded as UTF-8 JSON")
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=item.message.id, error=err), item.metadata)
    log.warning("replaced lone surrogates (not valid Unicode) in an outgoing message by U+FFFD")
    return SessionMessage(message=message, metadata=item.metadata)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


@contextmanager
def _claim_std_fds() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire as private duplicates of fd 0 and 1; meanwhile fd 0 reads /dev/null and fd 1
    writes to stderr. Both are restored on exit."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    # wire_in is never closed: a worker thread may still be blocked reading it (as in the SDK).
    source = os.fdopen(wire_in, "rb", closefd=False)
    sink = os.fdopen(wire_out, "wb")
    try:
        yield source, sink
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        sink.close()


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` (a low-level MCP server) over stdin/stdout, screened."""
    with _claim_std_fds() as (source, sink):
        wire = _Wire(sink)
        stdin = anyio.wrap_file(cast(TextIO, _ScreenedLines(source, wire)))
        stdout = anyio.wrap_file(cast(TextIO, _WireText(wire)))
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):
            await server.run(
                read_stream, _EncodableMessages(write_stream), server.create_initialization_options()
            )
