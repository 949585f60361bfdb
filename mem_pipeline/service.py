"""The HTTP service: one :class:`Memory` shared by many clients, behind API keys.

``create_app(memory, keys)`` builds a FastAPI app; ``mem-pipeline serve`` runs it with uvicorn.
The embedded store belongs to one process, so this service is how several processes share it.

Identity comes from the API key (``Authorization: Bearer <key>``), never from a request field:

* a key bound to a tenant and a user acts as that user; a ``user_id`` parameter, if given,
  must be the same user (else 403);
* a key bound to a tenant alone must name the user (``?user_id=``) and reaches only users of
  that tenant; a ``tenant`` parameter naming another tenant is refused (403).

A wrong, missing or revoked key is a 401. A fact id of another scope is a 404, the same answer
as an id that never existed. Request bodies are limited (256 KB by default, 413 beyond).
Errors of our tree become JSON ``{"error": {"type", "message"}}`` with their HTTP status:

=========================  ======
InvalidInputError, Scope   422
NotFoundError              404
ExtractionPendingError     202 (the turns were kept; ``pending_id`` in the body)
LLMError                   502
StoreError, EmbedderError  503
anything else              500
=========================  ======
"""

# no `from __future__ import annotations`: FastAPI resolves the endpoints' annotations at runtime,
# and they name local dependencies
import logging
import urllib.parse
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from ._asgi import (
    HTTP_MESSAGES,
    HTTP_NAMES,
    UNAUTHORIZED,
    BodyLimit,
    RequestGuard,
    error_extra,
    error_response,
    public_message,
    status_of,
)
from .errors import (
    InvalidInputError,
    MemPipelineError,
    NotFoundError,
)
from .keys import ApiKey, KeyStore
from .memory import Memory
from .models import AddResult, HistoryEvent, Scope, StoredFact

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 256 * 1024


# -- request and response bodies --------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Strict):
    role: Literal["user", "assistant", "system"] = "user"
    content: str = Field(min_length=1)
    name: str | None = None


class AddIn(_Strict):
    messages: str | list[MessageIn] = Field(
        description="What the user said: a string (one user turn) or a list of turns."
    )
    concepts: list[str] | None = Field(None, max_length=64, description="Concepts to attach (tags).")
    infer: bool | None = Field(
        None, description="false: store each user turn verbatim; default: extract facts from the turns."
    )
    metadata: dict[str, Any] | None = None
    timestamp: datetime | None = Field(None, description="When the turns happened (default: now).")


class SearchIn(_Strict):
    query: str = Field(min_length=1)
    limit: int = Field(5, ge=1, le=100, description="Direct hits at most (association hits follow).")
    include_invalid: bool = False
    expand: bool | None = Field(None, description="Follow concept links (default: the server's config).")
    prompt_tokens: int = Field(800, ge=64, le=32_000, description="Budget of the prompt block.")


class FeedbackIn(_Strict):
    ids: list[str] = Field(min_length=1, max_length=100, description="Fact ids from a search.")
    helped: bool | Annotated[float, Field(ge=-1.0, le=1.0)] = Field(
        description="true / false, or how much it helped in [-1, 1]."
    )
    query: str | None = Field(None, description="The query that recalled them (moves concept links).")


class UpdateIn(_Strict):
    text: str = Field(min_length=1)


class FactOut(BaseModel):
    """A fact or turn: the fields of ``StoredFact.brief()``, as the CLI and MCP server give them."""

    id: str
    kind: Literal["fact", "turn"]
    text: str
    category: str
    concepts: list[str]
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    invalid_at: datetime | None
    is_valid: bool = Field(description="false once superseded (see `superseded_by`)")
    superseded_by: str | None
    confirmations: int
    recalls: int
    valence: float
    sources: list[str] = Field(description="a fact's turns (ids); empty for a turn")

    @classmethod
    def of(cls, f: StoredFact) -> "FactOut":
        return cls.model_validate(f.brief())


class SearchOut(BaseModel):
    query: str
    query_concepts: dict[str, float]
    expanded_concepts: dict[str, float]
    hits: list[dict[str, Any]] = Field(
        description="Direct hits first, then association hits (with `via`: the concept path)."
    )
    prompt: str = Field(description="A delimited data block for a prompt; stored text is escaped.")


class ErrorBody(BaseModel):
    type: str
    message: str
    pending_id: str | None = None


class ErrorOut(BaseModel):
    error: ErrorBody


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing, wrong or revoked API key"},
    403: {"model": ErrorOut, "description": "the key's scope does not cover this user or tenant"},
    413: {"model": ErrorOut, "description": "request body too large"},
    503: {"model": ErrorOut, "description": "the store or the embedder failed"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "no such fact in this scope"}
}


# -- the app ----------------------------------------------------------------------------------
def create_app(
    memory: Memory,
    keys: KeyStore,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    title: str = "mem_pipeline",
    docs: bool = False,
    ui: bool = True,
) -> FastAPI:
    """The HTTP API over ``memory``, authenticated by ``keys``. The caller owns ``memory``.

    ``docs``: serve Swagger UI at ``/docs`` (its scripts load from a CDN, so it is off unless
    asked for); the OpenAPI schema is always at ``/openapi.json``. ``ui``: serve the memory
    browser at ``/ui`` (:mod:`mem_pipeline.ui`), on the same keys."""
    app = FastAPI(
        title=title,
        version="1",
        docs_url="/docs" if docs else None,
        redoc_url=None,
        description=(__doc__ or "").split("\n\n")[1] + "\n\nAuthenticate with `Authorization: Bearer <key>` "
        "(`mem-pipeline keys create --tenant T --user U`).",
    )
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(RequestGuard, keys=keys, protected=("/v1/", "/ui/api/"))
    bearer = HTTPBearer(auto_error=False, description="an API key from `mem-pipeline keys create`")

    @app.exception_handler(MemPipelineError)
    async def _ours(request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, MemPipelineError)
        return error_response(status_of(e), type(e).__name__, public_message(e), **error_extra(e))

    @app.exception_handler(HTTPException)
    async def _http(request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        # our own HTTPExceptions carry our words; the framework's 400 (a body that is not JSON)
        # and 404/405 (no such route) get ours too
        message = HTTP_MESSAGES.get(e.status_code) or str(e.detail)
        return error_response(e.status_code, HTTP_NAMES.get(e.status_code, "HTTPError"), message, e.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        # the field and pydantic's error code (a stable word such as "missing"), never its
        # prose, its documentation links or the input echoed back
        fields = [
            {"loc": [str(p) for p in x.get("loc", ())], "problem": str(x.get("type", "invalid"))}
            for x in e.errors()
        ]
        where = ", ".join(f"{'.'.join(f['loc'])}: {f['problem']}" for f in fields[:5])
        return JSONResponse(
            {
                "error": {
                    "type": "InvalidInputError",
                    "message": f"invalid request ({where})",
                    "fields": fields,
                }
            },
            status_code=422,
        )

    @app.exception_handler(Exception)
    async def _crash(request: Request, e: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalError", "internal error (see the server log)")

    def principal(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
        key = keys.verify(creds.credentials) if creds is not None else None
        if key is None:
            raise HTTPException(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
        return key

    def scope(
        key: Annotated[ApiKey, Depends(principal)],
        user_id: Annotated[
            str | None,
            Query(
                description="The user (required with a tenant key; with a user key, omit it or repeat it)."
            ),
        ] = None,
        tenant: Annotated[str | None, Query(description="Must be the key's tenant if given.")] = None,
    ) -> Scope:
        if tenant is not None and tenant != key.tenant:
            raise HTTPException(403, "this key does not cover that tenant")
        if key.user_id is not None:
            if user_id is not None and user_id != key.user_id:
                raise HTTPException(403, "this key is bound to one user; it cannot act for another")
            return Scope.of(key.user_id, key.tenant)
        if user_id is None:
            raise InvalidInputError("this key is bound to a tenant: name the user with ?user_id=")
        return Scope.of(user_id, key.tenant)

    Who = Annotated[Scope, Depends(scope)]
    if ui:
        from .ui import mount_ui

        # the browser's security headers wrap the guard, so its refusals carry them too
        mount_ui(app, memory, Who, Annotated[ApiKey, Depends(principal)])
    FactId = Annotated[str, Path(description="a fact id (UUID)")]

    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """Liveness: no key needed, no data returned."""
        return {"status": "ok"}

    @app.get("/v1/whoami", tags=["service"], responses=_ERRORS)
    def whoami(key: Annotated[ApiKey, Depends(principal)]) -> dict[str, Any]:
        """The scope the presented key is bound to."""
        return {"key_id": key.id, "tenant": key.tenant, "user_id": key.user_id}

    @app.post("/v1/memories", tags=["memories"], responses=_ERRORS)
    def add(body: AddIn, who: Who) -> AddResult:
        """Remember turns: one event per fact (ADD, REINFORCE, UPDATE, SUPERSEDE, NOOP, REJECT)."""
        messages: Any = (
            body.messages
            if isinstance(body.messages, str)
            else [m.model_dump(exclude_none=True) for m in body.messages]
        )
        return memory.add(
            messages,
            user_id=who.user_id,
            tenant=who.tenant,
            concepts=body.concepts,
            infer=body.infer,
            metadata=body.metadata,
            timestamp=body.timestamp,
        )

    @app.post("/v1/search", tags=["memories"], responses=_ERRORS)
    def search(body: SearchIn, who: Who) -> SearchOut:
        """Recall: scored hits with their provenance (source, score parts, concept path) and the
        prompt block to hand to a model."""
        r = memory.search(
            body.query,
            user_id=who.user_id,
            tenant=who.tenant,
            limit=body.limit,
            include_invalid=body.include_invalid,
            expand=body.expand,
        )
        return SearchOut(**r.to_json(), prompt=r.to_prompt(max_tokens=body.prompt_tokens))

    @app.post("/v1/feedback", tags=["memories"], responses=_ERRORS)
    def feedback(body: FeedbackIn, who: Who) -> dict[str, int]:
        """Say whether recalled facts helped; ids of other scopes are ignored."""
        return memory.feedback(
            body.ids, body.helped, user_id=who.user_id, tenant=who.tenant, query=body.query
        )

    @app.get("/v1/memories", tags=["memories"], responses=_ERRORS)
    def list_memories(
        who: Who,
        response: Response,
        include_invalid: Annotated[bool, Query(description="include superseded facts")] = False,
        limit: Annotated[int, Query(ge=1, le=1000, description="facts per page")] = 100,
        cursor: Annotated[
            str | None, Query(max_length=200, description="`X-Next-Cursor` of the previous page")
        ] = None,
    ) -> list[FactOut]:
        """The scope's facts, oldest first, a page at a time. When more remain, the response
        carries `X-Next-Cursor` (pass it as `cursor`) and a `Link: <...>; rel="next"` header."""
        page = memory.page(
            user_id=who.user_id,
            tenant=who.tenant,
            include_invalid=include_invalid,
            limit=limit,
            cursor=cursor,
        )
        if page.next_cursor is not None:
            response.headers["X-Next-Cursor"] = page.next_cursor
            nxt = urllib.parse.urlencode(
                {"limit": limit, "cursor": page.next_cursor, "include_invalid": str(include_invalid).lower()}
            )
            response.headers["Link"] = f'</v1/memories?{nxt}>; rel="next"'
        return [FactOut.of(f) for f in page.facts]

    @app.get("/v1/memories/{fact_id}", tags=["memories"], responses={**_ERRORS, **_NOT_FOUND})
    def get(fact_id: FactId, who: Who) -> FactOut:
        """One fact (404 if absent or another scope's)."""
        return FactOut.of(memory.get(fact_id, user_id=who.user_id, tenant=who.tenant))

    @app.put("/v1/memories/{fact_id}", tags=["memories"], responses={**_ERRORS, **_NOT_FOUND})
    def update(fact_id: FactId, body: UpdateIn, who: Who) -> FactOut:
        """Replace a fact's text (the old text stays in its history)."""
        return FactOut.of(memory.update(fact_id, body.text, user_id=who.user_id, tenant=who.tenant))

    @app.delete("/v1/memories/{fact_id}", tags=["memories"], responses={**_ERRORS, **_NOT_FOUND})
    def delete(fact_id: FactId, who: Who) -> dict[str, str]:
        """Delete one fact (its history keeps a DELETE event)."""
        memory.delete(fact_id, user_id=who.user_id, tenant=who.tenant)
        return {"deleted": fact_id}

    @app.get("/v1/memories/{fact_id}/history", tags=["memories"], responses={**_ERRORS, **_NOT_FOUND})
    def history(fact_id: FactId, who: Who) -> list[HistoryEvent]:
        """Every change to a fact, oldest first (kept after delete)."""
        events = memory.history(fact_id, user_id=who.user_id, tenant=who.tenant)
        if not events:
            raise NotFoundError(f"no fact {fact_id} in this scope")
        return events

    @app.post("/v1/forget", tags=["memories"], responses=_ERRORS)
    def forget(who: Who) -> dict[str, int]:
        """Remove everything of the user: facts, history, pending turns, concept links."""
        return {"forgotten_facts": memory.forget(user_id=who.user_id, tenant=who.tenant)}

    return app
