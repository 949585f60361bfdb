"""HTML built by construction: every value is escaped unless it is already :class:`Html`.

Stored text is data. A template here is a format string written in this package; the values put
into it (fact text, concept names, metadata, error messages) are escaped with
``html.escape(quote=True)``, so ``<script>``, ``<img onerror=...>`` and quotes that would close
an attribute come out as text. Only :class:`Html` values, which these helpers make, pass as
they are. Links are built by :func:`route` (always a ``#/`` route of the browser, its parts
percent-encoded), never from stored text, so no stored ``javascript:`` can become a link.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Iterable
from datetime import datetime
from typing import Any

__all__ = ["Html", "attrs", "date", "esc", "h", "join", "route"]


class Html(str):
    """Markup that is safe to send as it is (made by :func:`h`, :func:`esc` or :func:`join`)."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """``value`` as HTML text: :class:`Html` unchanged, None as nothing, anything else escaped."""
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(html.escape(str(value), quote=True))


def h(template: str, /, **values: Any) -> Html:
    """Fill ``template`` (``str.format`` fields by name) with the escaped ``values``."""
    return Html(template.format(**{k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Html:
    """Concatenate, escaping each part that is not already :class:`Html`."""
    return Html(esc(sep).join(esc(p) for p in parts))


def attrs(**values: Any) -> Html:
    """`` name="value"`` pairs (escaped); None and False are left out, True is the bare name.
    A trailing underscore is dropped (``class_``), other underscores become dashes."""
    out = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        out.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return Html("".join(out))


def route(page: str, *path: str, **params: Any) -> str:
    """A link inside the browser app: ``#/page/path?params`` (each part percent-encoded, empty
    and None parameters left out). The result still has to be escaped where it is placed (the
    helpers above do that)."""
    parts = "/".join(urllib.parse.quote(str(p), safe="") for p in (page, *path))
    query = {k: str(v) for k, v in params.items() if v not in (None, "", False)}
    return f"#/{parts}" + (f"?{urllib.parse.urlencode(query)}" if query else "")


def date(value: datetime | None, *, time: bool = True) -> Html:
    """A ``<time>`` element in UTC (``—`` for None)."""
    if value is None:
        return Html('<span class="muted">—</span>')
    shown = value.strftime("%Y-%m-%d %H:%M") if time else value.strftime("%Y-%m-%d")
    return h('<time datetime="{iso}">{shown}</time>', iso=value.isoformat(), shown=shown)
