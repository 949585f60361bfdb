"""The memory browser's routes: the page shell and its static files at ``/ui``, and the HTML
fragments under ``/ui/api/`` that the shell's script fetches with the API key.

Identity is the JSON API's: ``/ui/api/`` is guarded like ``/v1/`` (a missing, wrong or revoked
key is a 401 before anything runs), and every fragment takes the same scope dependency, so a
user key sees its user and a tenant key names a user of its tenant (``?user_id=``). The shell
itself holds no data. Every ``/ui`` response carries a Content-Security-Policy with no inline
script (the script is a file), no inline style, no other origin, and no form submission.
"""

# no `from __future__ import annotations`: FastAPI resolves the endpoints' annotations at runtime
from collections.abc import MutableMapping
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, Path, Query
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from .._asgi import _ASGIApp, _Receive, _Send
from ..errors import InvalidInputError, NotFoundError
from ..keys import ApiKey
from ..memory import Memory
from ..models import Scope, StoredFact
from ._graph import concepts_page
from ._html import Html, h
from ._search import SearchForm, search_page
from ._views import (
    PAGE_SIZE,
    MemoryFilters,
    fact_page,
    forget_page,
    memories_page,
    notice,
    pending_page,
    user_options,
)

__all__ = ["CSP", "SecurityHeaders", "mount_ui"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
#: the shell's files, by the name they are served under (nothing else is read from the package)
_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


class SecurityHeaders:
    """Pure ASGI middleware: the browser's security headers on every ``/ui`` response (errors
    and refusals included), replacing any the app set."""

    def __init__(self, app: _ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: _Receive, send: _Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not (path == "/ui" or path.startswith("/ui/")):
            await self.app(scope, receive, send)
            return
        names = {k for k, _ in _HEADERS}

        async def send_with_headers(msg: MutableMapping[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                kept = [(k, v) for k, v in msg.get("headers", []) if k.lower() not in names]
                msg["headers"] = kept + _HEADERS
            await send(msg)

        await self.app(scope, receive, send_with_headers)


def _asset(name: str) -> bytes:
    return (resources.files(__package__) / "static" / name).read_bytes()


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpdateForm(_Body):
    text: str = Field(min_length=1)


class FeedbackForm(_Body):
    ids: str = Field(min_length=1, max_length=100)
    helped: Literal["true", "false"]
    query: str | None = Field(None, max_length=2000)


class ForgetForm(_Body):
    confirm: str = ""


class EmptyForm(_Body):
    pass


def _html(fragment: Html, go: str | None = None) -> HTMLResponse:
    headers = {"X-UI-Go": go} if go else None
    return HTMLResponse(str(fragment), headers=headers)


def mount_ui(app: FastAPI, memory: Memory, who: Any, principal: Any) -> None:
    """Serve the browser at ``/ui`` of ``app``: ``who`` and ``principal`` are the service's
    scope and key dependencies (``Annotated[Scope, Depends(...)]``, ``Annotated[ApiKey, ...]``),
    so the browser reaches exactly what the JSON API does with the same key."""
    app.add_middleware(SecurityHeaders)
    app.include_router(_router(memory, who, principal))


def _router(memory: Memory, Who: Any, Principal: Any) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    FactId = Annotated[str, Path(max_length=64)]
    Param = Annotated[str | None, Query(max_length=500)]

    def lock() -> Any:
        return memory.parts.lock

    @router.get("/ui")
    @router.get("/ui/")
    def shell() -> Response:
        return Response(_asset("index.html"), media_type="text/html; charset=utf-8")

    @router.get("/ui/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            raise NotFoundError("no such file")
        return Response(_asset(name), media_type=_STATIC[name])

    @router.get("/ui/api/users")
    def users(key: Principal) -> HTMLResponse:
        """The users a key can look at: its own, or those of its tenant (for the picker)."""
        assert isinstance(key, ApiKey)
        found = [key.user_id] if key.user_id is not None else memory.users(tenant=key.tenant)
        return _html(user_options(found))

    def memories_view(
        who: Scope, f: MemoryFilters, cursor: str | None, start: int, flash: Html | None
    ) -> Html:
        page = memory.page(
            user_id=who.user_id,
            tenant=who.tenant,
            limit=PAGE_SIZE,
            cursor=cursor,
            include_invalid=f.include_invalid,
            filters=f.store_filters() or None,
            kind=f.kind,  # type: ignore[arg-type]
        )
        with lock():
            speakers = memory.store.speakers(who, limit=200)
        return memories_page(page, f, start=start, speakers=speakers, flash=flash)

    @router.get("/ui/api/memories")
    def memories(
        who: Who,
        kind: Param = None,
        category: Param = None,
        concept: Param = None,
        speaker: Param = None,
        valid: Param = None,
        cursor: Param = None,
        start: Annotated[int, Query(ge=0, le=10**9)] = 0,
    ) -> HTMLResponse:
        f = MemoryFilters(kind, category, concept, speaker, valid)
        return _html(memories_view(who, f, cursor, start if cursor else 0, None))

    @router.get("/ui/api/search")
    def search(
        who: Who,
        q: Annotated[str | None, Query(max_length=2000)] = None,
        limit: Param = None,
        expand: Param = None,
        invalid: Param = None,
        weak: Param = None,
    ) -> HTMLResponse:
        form = SearchForm(q, limit, expand, invalid, weak)
        if not form.q:
            return _html(search_page(form, None, None))
        recall = memory.search(
            form.q,
            user_id=who.user_id,
            tenant=who.tenant,
            limit=form.limit,
            include_invalid=form.include_invalid,
            expand=form.expand,
            min_score=form.min_score,
        )
        return _html(search_page(form, recall, recall.to_prompt()))

    def fact_view(who: Scope, fact_id: str, flash: Html | None = None) -> Html:
        try:
            fact: StoredFact | None = memory.get(fact_id, user_id=who.user_id, tenant=who.tenant)
        except NotFoundError:
            fact = None
        events = memory.history(fact_id, user_id=who.user_id, tenant=who.tenant)
        if fact is None and not events:
            raise NotFoundError(f"no fact {fact_id} in this scope")
        turns: list[StoredFact] = []
        citing: list[StoredFact] = []
        if fact is not None:
            with lock():
                if fact.sources:
                    found = {t.id: t for t in memory.store.get_facts(who, list(fact.sources))}
                    turns = [found[t] for t in fact.sources if t in found]
                if fact.kind == "turn":
                    citing = memory.store.citing(who, [fact.id])
        return fact_page(fact, fact_id, events, turns, citing, flash=flash)

    @router.get("/ui/api/fact/{fact_id}")
    def fact(fact_id: FactId, who: Who) -> HTMLResponse:
        return _html(fact_view(who, fact_id))

    @router.post("/ui/api/fact/{fact_id}/update")
    def update(fact_id: FactId, body: UpdateForm, who: Who) -> HTMLResponse:
        f = memory.update(fact_id, body.text, user_id=who.user_id, tenant=who.tenant)
        return _html(
            fact_view(who, f.id, notice("Saved. The old text is in the history.")), go=f"#/fact/{f.id}"
        )

    @router.post("/ui/api/fact/{fact_id}/delete")
    def delete(fact_id: FactId, body: EmptyForm, who: Who) -> HTMLResponse:
        f = memory.get(fact_id, user_id=who.user_id, tenant=who.tenant)
        memory.delete(f.id, user_id=who.user_id, tenant=who.tenant)
        flash = notice(f"Deleted the {f.kind} “{f.text[:80]}”. Its history keeps a DELETE event.")
        return _html(memories_view(who, MemoryFilters(), None, 0, flash), go="#/memories")

    @router.post("/ui/api/feedback")
    def feedback(body: FeedbackForm, who: Who) -> HTMLResponse:
        moved = memory.feedback(
            [body.ids],
            body.helped == "true",
            user_id=who.user_id,
            tenant=who.tenant,
            query=body.query or None,
        )
        word = "helped" if body.helped == "true" else "did not help"
        return _html(
            h(
                '<p class="notice ok feedback-done">Noted: {word} ({links} concept links moved).</p>',
                word=word,
                links=moved.get("links", 0),
            )
        )

    @router.get("/ui/api/concepts")
    def concepts(who: Who, c: Param = None) -> HTMLResponse:
        with lock():
            counts, links = memory.parts.links.describe(who, memory.now())
        chosen = c.strip() if c and c.strip() else None
        facts: list[StoredFact] = []
        if chosen is not None:
            facts = memory.page(
                user_id=who.user_id, tenant=who.tenant, filters={"concepts": [chosen]}, limit=50
            ).facts
        return _html(concepts_page(counts, links, chosen, facts))

    @router.get("/ui/api/pending")
    def pending(who: Who) -> HTMLResponse:
        return _html(pending_page(memory.pending(user_id=who.user_id, tenant=who.tenant)))

    @router.post("/ui/api/pending/retry")
    def retry(body: EmptyForm, who: Who) -> HTMLResponse:
        before = len(memory.pending(user_id=who.user_id, tenant=who.tenant))
        done = memory.retry_pending(user_id=who.user_id, tenant=who.tenant)
        left = memory.pending(user_id=who.user_id, tenant=who.tenant)
        msg = f"Retried {before}: {len(done)} read, {len(left)} still pending."
        return _html(pending_page(left, flash=notice(msg, "ok" if not left else "warn")), go="#/pending")

    def counts_of(who: Scope) -> dict[str, int]:
        return {
            k: memory.page(user_id=who.user_id, tenant=who.tenant, kind=k, limit=1).total or 0  # type: ignore[arg-type]
            for k in ("fact", "turn")
        }

    @router.get("/ui/api/forget")
    def forget_form(who: Who) -> HTMLResponse:
        return _html(forget_page(who.user_id, counts_of(who)))

    @router.post("/ui/api/forget")
    def forget(body: ForgetForm, who: Who) -> HTMLResponse:
        if body.confirm != who.user_id:
            raise InvalidInputError("to forget this user, type its user id exactly")
        n = memory.forget(user_id=who.user_id, tenant=who.tenant)
        flash = notice(f"Forgot {who.user_id}: {n} facts and turns, their history and links.")
        return _html(memories_view(who, MemoryFilters(), None, 0, flash), go="#/memories")

    return router
