"""The memory browser (``/ui``) without a browser: the ASGI app through Starlette's TestClient.

What is checked on every fragment route: a key is required (missing, wrong, revoked: 401), the
security headers are sent (a Content-Security-Policy without inline script), stored text is
data (hostile text comes back escaped: no tag, no event attribute, no link but our own routes),
and a key never reaches another user's or tenant's facts, whatever the URL says. The real
browser runs in ``test_ui_browser.py``.
"""

from __future__ import annotations

import html
import re
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from _extractors import Flaky
from fastapi.testclient import TestClient

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.errors import LLMError
from mem_pipeline.keys import KeyStore
from mem_pipeline.service import create_app

HOSTILE = [
    "<script>window.__pwned = 1</script> my cat is Tom",
    '<img src=x onerror="window.__pwned = 2"> I like tea',
    '"><svg onload=alert(3)> I live in Leeds',
    '[my site](javascript:alert(4)) and <a href="javascript:alert(5)">click</a> I play chess',
]


class UI:
    def __init__(self, memory: Memory, keys: KeyStore, extractor: Flaky) -> None:
        self.memory, self.keys, self.extractor = memory, keys, extractor
        self.client = TestClient(create_app(memory, keys))

    def key(self, tenant: str, user: str | None = None) -> str:
        return self.keys.create(tenant=tenant, user_id=user)[0]

    def get(self, key: str | None, path: str, **params: Any) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.client.get(path, params=params, headers=headers)

    def post(self, key: str | None, path: str, body: dict[str, Any] | None = None, **params: Any) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.client.post(path, json=body or {}, params=params, headers=headers)


@pytest.fixture
def ui(embedder: Any, clock: Any, tmp_path: Path) -> Iterator[UI]:
    extractor = Flaky("the endpoint at http://10.0.0.7:8000/v1 timed out <b>here</b>")
    m = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock, extractor=extractor)
    yield UI(m, KeyStore(tmp_path / "api-keys.json"), extractor)
    m.close()


class Tags(HTMLParser):
    """Every start tag of a fragment with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def assert_inert(html: str) -> None:
    """No script, no image, no frame, no event attribute, no inline style, and every link one of
    the browser's own routes: whatever stored text said."""
    parser = Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag not in ("script", "img", "iframe", "object", "embed", "base", "meta", "link"), (tag, attrs)
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name, value)
            assert name != "style", (tag, name, value)
            if name in ("href", "src", "action", "formaction", "xlink:href"):
                assert value is not None and value.startswith("#/"), (tag, name, value)


def test_the_shell_holds_no_inline_script_and_every_ui_answer_has_the_csp(ui: UI) -> None:
    shell = ui.client.get("/ui")
    assert shell.status_code == 200 and shell.headers["content-type"].startswith("text/html")
    csp = shell.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert "form-action 'none'" in csp and "frame-ancestors 'none'" in csp
    assert shell.headers["x-content-type-options"] == "nosniff"
    parser = Tags()
    parser.feed(shell.text)
    scripts = [dict(a) for t, a in parser.tags if t == "script"]
    assert scripts == [{"src": "/ui/static/app.js", "defer": None}]
    assert not [(t, n) for t, a in parser.tags for n, _ in a if n.startswith("on") or n == "style"]
    js = ui.client.get("/ui/static/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert "sessionStorage" in js.text and "localStorage" not in js.text
    assert "document.cookie" not in js.text
    assert ui.client.get("/ui/static/app.css").headers["content-type"].startswith("text/css")
    for name in ("index.html", "../service.py", "%2e%2e%2fservice.py", "nope.js"):
        assert ui.client.get(f"/ui/static/{name}").status_code == 404
    refused = ui.get(None, "/ui/api/memories")
    assert refused.status_code == 401 and refused.headers["content-security-policy"] == csp
    assert "content-security-policy" not in ui.client.get("/health").headers  # the JSON API is not changed
    assert not [p for p in ui.client.get("/openapi.json").json()["paths"] if p.startswith("/ui")]


_GETS = ["/ui/api/memories", "/ui/api/search", "/ui/api/concepts", "/ui/api/pending", "/ui/api/forget"]


def _routes(fid: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        *[("GET", p, {}) for p in _GETS],
        ("GET", "/ui/api/users", {}),
        ("GET", f"/ui/api/fact/{fid}", {}),
        ("POST", f"/ui/api/fact/{fid}/update", {"text": "changed"}),
        ("POST", f"/ui/api/fact/{fid}/delete", {}),
        ("POST", "/ui/api/feedback", {"ids": fid, "helped": "true"}),
        ("POST", "/ui/api/pending/retry", {}),
        ("POST", "/ui/api/forget", {"confirm": "ana"}),
    ]


def test_nothing_is_reachable_without_a_valid_key(ui: UI) -> None:
    key = ui.key("acme", "ana")
    fid = ui.memory.add("My locker code is 4711.", user_id="ana", tenant="acme", infer=False).ids[0]
    revoked = ui.key("acme", "ana")
    ui.keys.revoke(revoked)
    for bad in (None, "nope", key[:-3] + "xyz", revoked):
        for method, path, body in _routes(fid):
            r = ui.get(bad, path) if method == "GET" else ui.post(bad, path, body)
            assert r.status_code == 401, (bad, method, path, r.status_code)
            assert "4711" not in r.text
    assert ui.memory.get(fid, user_id="ana", tenant="acme").text == "My locker code is 4711."
    assert "4711" in ui.get(key, "/ui/api/memories").text


def test_hostile_stored_text_comes_back_as_text_on_every_page(ui: UI) -> None:
    key = ui.key("acme", "ana")
    ids = [ui.memory.add(t, user_id="ana", tenant="acme").ids[0] for t in HOSTILE]
    ui.memory.add(
        "plain note", user_id="ana", tenant="acme", infer=False, concepts=["<b>bold</b>", 'x" onmouseover="y']
    )
    ui.memory.add(
        "note two",
        user_id="ana",
        tenant="acme",
        infer=False,
        concepts=["<b>bold</b>", 'x" onmouseover="y'],
        metadata={"speaker": "<i>Eve</i>", "url": "javascript:alert(6)"},
    )
    ui.memory.update(ids[0], HOSTILE[1] + " and <iframe src=//evil>", user_id="ana", tenant="acme")
    ui.extractor.fail = True
    with pytest.raises(LLMError):
        ui.memory.add("<script>alert(7)</script> pending", user_id="ana", tenant="acme")
    ui.extractor.fail = False
    pages = {
        "memories": ui.get(key, "/ui/api/memories"),
        "search": ui.get(key, "/ui/api/search", q="cat tea Leeds chess script", weak="1"),
        "concepts": ui.get(key, "/ui/api/concepts", c="<b>bold</b>"),
        "pending": ui.get(key, "/ui/api/pending"),
        "forget": ui.get(key, "/ui/api/forget"),
        **{f"fact {i}": ui.get(key, f"/ui/api/fact/{fid}") for i, fid in enumerate(ids)},
    }
    for name, r in pages.items():
        assert r.status_code == 200, (name, r.text)
        assert_inert(r.text)
        assert "<script" not in r.text and "<img" not in r.text and "<iframe" not in r.text, name
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in pages["fact 0"].text  # history: old text
    assert "&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;" in pages["memories"].text
    assert "javascript:alert(4)" in pages["memories"].text  # shown as text, never a link
    assert "&lt;b&gt;bold&lt;/b&gt;" in pages["concepts"].text
    assert "&lt;i&gt;Eve&lt;/i&gt;" in pages["memories"].text  # the speaker filter and column
    assert "&lt;script&gt;alert(7)" in pages["pending"].text
    assert "10.0.0.7" not in pages["pending"].text  # the error's details stay in the server log
    search = pages["search"].text
    assert "<memory-data>" not in search and "&lt;memory-data&gt;" in search  # the prompt block as text
    # a query and a filter value are echoed into form fields: escaped there too
    echo = ui.get(key, "/ui/api/search", q='"><script>alert(8)</script>')
    assert_inert(echo.text)
    assert_inert(ui.get(key, "/ui/api/memories", concept='"><img src=x onerror=alert(9)>').text)


def test_a_key_sees_only_its_scope_on_every_route_whatever_the_url_says(ui: UI) -> None:
    ana, bob = ui.key("acme", "ana"), ui.key("acme", "bob")
    # the codes are not hex: a fact id (which an error names) may hold "2222" by chance
    tenant, stranger = ui.key("acme"), ui.key("other")
    fa = ui.memory.add("Ana's locker code is K1111.", user_id="ana", tenant="acme", infer=False).ids[0]
    fb = ui.memory.add("Bob's locker code is K2222.", user_id="bob", tenant="acme", infer=False).ids[0]
    fc = ui.memory.add("Carl's locker code is K3333.", user_id="carl", tenant="other", infer=False).ids[0]
    # a user key: another user's fact is not there (404, as for an id that never existed)
    for method, path, body in _routes(fb):
        if "forget" in path or "retry" in path:
            continue
        r = ui.get(ana, path) if method == "GET" else ui.post(ana, path, body)
        assert "K2222" not in r.text, (method, path)
        if "/fact/" in path:
            assert r.status_code == 404, (method, path, r.status_code)
    assert ui.memory.get(fb, user_id="bob", tenant="acme").text == "Bob's locker code is K2222."
    # naming another user or tenant in the URL is refused, not obeyed
    for params in ({"user_id": "bob"}, {"tenant": "other"}, {"user_id": "carl", "tenant": "other"}):
        for path in [*_GETS, f"/ui/api/fact/{fb}"]:
            r = ui.get(ana, path, **params)
            assert r.status_code == 403 and "K2222" not in r.text and "K3333" not in r.text, (path, params)
    assert (
        ui.client.get(
            "/ui/api/memories?user_id=ana&user_id=bob", headers={"Authorization": f"Bearer {ana}"}
        ).status_code
        == 400
    )
    assert ui.get(ana, "/ui/api/users").text == '<option value="ana"></option>'
    assert "K1111" in ui.get(ana, "/ui/api/memories").text
    assert "K1111" not in ui.get(bob, "/ui/api/memories").text
    # a tenant key picks users of its tenant only
    assert ui.get(tenant, "/ui/api/memories").status_code == 422  # which user?
    users = ui.get(tenant, "/ui/api/users").text
    assert "ana" in users and "bob" in users and "carl" not in users
    assert "K2222" in ui.get(tenant, "/ui/api/memories", user_id="bob").text
    assert ui.get(tenant, f"/ui/api/fact/{fc}", user_id="carl").status_code == 404
    assert "K3333" not in ui.get(tenant, "/ui/api/memories", user_id="carl").text
    assert ui.get(tenant, "/ui/api/memories", user_id="carl", tenant="other").status_code == 403
    assert "K3333" not in ui.get(stranger, "/ui/api/search", user_id="ana", q="locker code", weak="1").text
    # forgetting needs the user id typed exactly, and forgets that user only
    assert ui.post(tenant, "/ui/api/forget", {"confirm": "ana "}, user_id="ana").status_code == 422
    assert ui.post(tenant, "/ui/api/forget", {"confirm": "bob"}, user_id="ana").status_code == 422
    assert ui.memory.get(fa, user_id="ana", tenant="acme")
    done = ui.post(tenant, "/ui/api/forget", {"confirm": "ana"}, user_id="ana")
    assert done.status_code == 200 and done.headers["x-ui-go"] == "#/memories"
    assert ui.memory.get_all(user_id="ana", tenant="acme") == []
    assert ui.memory.get(fb, user_id="bob", tenant="acme") and ui.memory.get(
        fc, user_id="carl", tenant="other"
    )


def test_edit_delete_feedback_and_retry_through_the_fragments(ui: UI) -> None:
    key = ui.key("acme", "ana")
    ui.memory.add("I'm vegetarian and I love hiking in the Dales.", user_id="ana", tenant="acme")
    fact = ui.memory.get_all(user_id="ana", tenant="acme", kind="fact")[0]
    page = ui.get(key, f"/ui/api/fact/{fact.id}").text
    assert "Source turns" in page and "I&#x27;m vegetarian and I love hiking" in page  # the turn it came from
    assert 'data-post="fact/' in page and "Yes, delete it" in page
    r = ui.post(key, f"/ui/api/fact/{fact.id}/update", {"text": "I'm vegan now."})
    assert r.status_code == 200 and r.headers["x-ui-go"] == f"#/fact/{fact.id}"
    assert "ev-UPDATE" in r.text and '<del class="old">' in r.text and "I&#x27;m vegan now." in r.text
    assert ui.post(key, f"/ui/api/fact/{fact.id}/update", {"text": ""}).status_code == 422
    fb = ui.post(key, "/ui/api/feedback", {"ids": fact.id, "helped": "true", "query": "vegan"})
    assert fb.status_code == 200 and "Noted: helped" in fb.text
    assert ui.memory.get(fact.id, user_id="ana", tenant="acme").valence > 0
    gone = ui.post(key, f"/ui/api/fact/{fact.id}/delete")
    assert (
        gone.status_code == 200
        and gone.headers["x-ui-go"] == "#/memories"
        and "Deleted the fact" in gone.text
    )
    assert f'data-id="{fact.id}"' not in gone.text
    after = ui.get(key, f"/ui/api/fact/{fact.id}")
    assert after.status_code == 200 and "Deleted fact" in after.text and "ev-DELETE" in after.text
    assert ui.post(key, f"/ui/api/fact/{fact.id}/delete").status_code == 404
    assert ui.get(key, "/ui/api/fact/not-a-uuid").status_code == 422
    # pending: kept when extraction fails, read again by the retry button
    ui.extractor.fail = True
    with pytest.raises(LLMError):
        ui.memory.add("I started learning the cello.", user_id="ana", tenant="acme")
    listed = ui.get(key, "/ui/api/pending").text
    assert "I started learning the cello." in listed and "LLMError" in listed
    again = ui.post(key, "/ui/api/pending/retry")
    assert "1 still pending" in again.text and ">2<" in again.text  # attempts
    ui.extractor.fail = False
    done = ui.post(key, "/ui/api/pending/retry")
    assert "0 still pending" in done.text and "No pending extractions" in done.text
    assert any("cello" in f.text for f in ui.memory.get_all(user_id="ana", tenant="acme", kind="fact"))


def test_search_shows_parts_associations_and_the_prompt_block(ui: UI) -> None:
    key = ui.key("acme", "dev")
    for text, concepts in [
        ("The deploy timed out after the release.", ["timeout", "deploy"]),
        ("Retried the request and it went through.", ["timeout", "retry"]),
        ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
        ("The upload timed out again; one retry fixed it.", ["timeout", "retry"]),
    ]:
        ui.memory.add(text, user_id="dev", tenant="acme", infer=False, concepts=concepts)
    recall = ui.memory.search("timeout", user_id="dev", tenant="acme", limit=1)
    r = ui.get(key, "/ui/api/search", q="timeout", limit="1")
    assert r.status_code == 200
    assert r.text.count('<article class="hit"') == len(recall.hits) + len(recall.associations)
    assert recall.associations, "the example must reach something through links"
    assert '<div class="associations">' in r.text and "via concept path" in r.text
    for part in ("relevance", "similarity", "decay", "reinforcement", "confidence"):
        assert f'class="fill p-{part}"' in r.text
    assert "&lt;memory-data&gt;" in r.text and "retry <small>0.67</small>" in r.text
    assert "Nothing relevant enough" in ui.get(key, "/ui/api/search", q="quantum chromodynamics").text
    concepts = ui.get(key, "/ui/api/concepts", c="timeout").text
    assert concepts.count("<line") == 3 and 'class="node chosen"' in concepts
    assert "The deploy timed out after the release." in concepts  # the chosen concept's facts


def test_memories_pages_through_a_thousand_facts(ui: UI) -> None:
    key = ui.key("acme", "big")
    n = 1000
    for start in range(0, n, 50):
        msgs: Sequence[dict[str, str]] = [
            {"role": "user", "content": f"note {i}: the build step {i} uses cache {i * 7}"}
            for i in range(start, start + 50)
        ]
        ui.memory.add(msgs, user_id="big", tenant="acme", infer=False)
    t0 = time.perf_counter()
    first = ui.get(key, "/ui/api/memories")
    took = time.perf_counter() - t0
    assert first.status_code == 200 and f"1–50 of {n}" in first.text and first.text.count("<tr data-id") == 50
    assert took < 5.0, took
    link = re.search(r'class="next" href="#/memories\?([^"]+)"', first.text)
    assert link is not None
    params = dict(urllib.parse.parse_qsl(html.unescape(link.group(1))))
    second = ui.get(key, "/ui/api/memories", **params)
    assert f"51–100 of {n}" in second.text and "first page" in second.text
    assert "note 50:" in second.text and "note 49:" not in second.text
    only = ui.get(key, "/ui/api/memories", kind="fact")
    assert "0 of 0" in only.text and "Nothing stored matches." in only.text


def test_an_answer_links_to_the_statement_it_answered(ui: UI) -> None:
    key = ui.key("acme", "ana")
    (snack,) = ui.memory.add("Fave snack rn is salt n vinegar crisps.", user_id="ana", tenant="acme").ids
    asked = {"role": "assistant", "content": "Any particular brand?"}
    ui.memory.add([asked, {"role": "user", "content": "walkers or nothing"}], user_id="ana", tenant="acme")
    # the answer (a fact, or the bare turn when the rules find none in it) names the crisps
    (brand,) = [f for f in ui.memory.get_all(user_id="ana", tenant="acme") if f.about]
    assert brand.about == snack and "walkers" in brand.text.lower()
    page = ui.get(key, f"/ui/api/fact/{brand.id}").text
    assert "the statement it answered" in page and f"fact/{snack}" in page
    assert "the statement it answered" not in ui.get(key, f"/ui/api/fact/{snack}").text
