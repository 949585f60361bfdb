"""The memory browser in a real browser: Playwright driving headless Chromium against the real
service (uvicorn on 127.0.0.1, an on-disk store in a temporary directory, real API keys made
with the keys module and ``mem-pipeline keys``).

Marked ``browser``; skipped, saying why, where the ``playwright`` package or a Chromium is
missing (``pip install -e ".[ui-test]"``; ``apt-get install chromium``). Playwright never
downloads a browser here: it launches the system's (``MEM_PIPELINE_CHROMIUM``, else
``chromium`` / ``chromium-browser`` / ``google-chrome`` on the PATH). Each page is saved as a
screenshot in ``MEM_PIPELINE_UI_SHOTS`` (default: ``mem_pipeline_ui_shots`` in the temporary
directory, so that a test run leaves the checkout as it was); the README's pictures are
refreshed with ``MEM_PIPELINE_UI_SHOTS=eval/results/ui pytest -m browser``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from _extractors import Flaky  # noqa: E402

from mem_pipeline import Memory, MemoryConfig  # noqa: E402
from mem_pipeline.keys import KeyStore  # noqa: E402
from mem_pipeline.service import create_app  # noqa: E402

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("MEM_PIPELINE_UI_SHOTS") or Path(tempfile.gettempdir()) / "mem_pipeline_ui_shots")
HOSTILE = [
    "<script>window.__pwned = 1</script> my cat is called Tom",
    '<img src=x onerror="window.__pwned = 2; alert(2)"> I drink green tea',
    '[my site](javascript:alert(4)) <a href="javascript:alert(5)">click</a> I play chess',
]


def _chromium() -> str | None:
    found = os.environ.get("MEM_PIPELINE_CHROMIUM")
    if found:
        return found if Path(found).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(autouse=True)
def engine() -> str:
    """One engine here (this overrides the suite's two-engine fixture): these tests drive the
    browser, which the engine does not change; ``test_ui.py`` runs every UI route on both."""
    return "edge"


class Live:
    """The service on a loopback port, its key file and store in a temporary directory."""

    def __init__(self, root: Path, embedder: Any) -> None:
        self.store = root / "store"
        self.extractor = Flaky()
        self.memory = Memory(
            config=MemoryConfig(path=str(self.store), engine="edge"),
            embedder=embedder,
            extractor=self.extractor,
        )
        self.keys = KeyStore(self.store / "api-keys.json")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.sock = sock
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(create_app(self.memory, self.keys), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.memory.close()

    def cli(self, *args: str) -> str:
        """``mem-pipeline <args> --path <store>`` in a process of its own."""
        out = subprocess.run(
            [sys.executable, "-m", "mem_pipeline.cli", *args, "--path", str(self.store)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return out.stdout

    def key(self, tenant: str, user: str | None = None) -> str:
        return self.keys.create(tenant=tenant, user_id=user)[0]

    def api(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def add(self, key: str, text: str, **body: Any) -> Any:
        with self.api(key) as c:
            r = c.post("/v1/memories", json={"messages": text, **body})
        assert r.status_code in (200, 202), r.text
        return r.json()


@pytest.fixture(scope="module")
def live(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    server = Live(tmp_path_factory.mktemp("ui-browser"), embedder)
    yield server
    server.close()


def _missing(why: str) -> NoReturn:
    """Skip, saying why; CI sets ``MEM_PIPELINE_REQUIRE_BROWSER`` so that a broken browser
    setup fails instead of passing with nothing run."""
    if os.environ.get("MEM_PIPELINE_REQUIRE_BROWSER"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[ui-test]')")
    executable = _chromium()
    if executable is None:
        _missing("no Chromium found (apt-get install chromium, or set MEM_PIPELINE_CHROMIUM)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


class Tab:
    """One browser tab (a context of its own: its own sessionStorage) recording every dialog,
    page error and Content-Security-Policy violation."""

    def __init__(self, browser: Any, live: Live) -> None:
        self.live = live
        self.context = browser.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)  # a loaded 2-core machine is slow
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )

    def open(self, key: str) -> Any:
        self.page.goto(self.live.url + "/ui")
        self.page.fill("#key-input", key)
        self.page.click("#login-form button")
        self.page.wait_for_selector("#view > *")
        return self.page

    def clear(self) -> None:
        """Empty the view, so that waiting for a selector waits for the next answer."""
        self.page.evaluate("document.getElementById('view').replaceChildren()")

    def go(self, route: str, ready: str) -> Any:
        self.clear()
        self.page.evaluate("r => { location.hash = r; }", route)
        self.page.wait_for_selector(ready)
        return self.page

    def view(self) -> str:
        return str(self.page.inner_text("#view"))

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def assert_clean(self) -> None:
        assert self.dialogs == [] and self.errors == [], (self.dialogs, self.errors)
        assert self.page.evaluate("window.__csp") == []
        assert self.page.evaluate("window.__pwned") is None

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, live: Live) -> Iterator[Tab]:
    t = Tab(browser, live)
    yield t
    t.close()


def _notes(live: Live, key: str) -> None:
    live.add(key, "I'm vegetarian and I train for the Leeds half marathon.")
    live.add(key, "My sister Ana lives in York.")
    for text, concepts in [
        ("The deploy timed out after the release.", ["timeout", "deploy"]),
        ("Retried the request and it went through.", ["timeout", "retry"]),
        ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
        ("The upload timed out again; one retry fixed it.", ["timeout", "retry"]),
    ]:
        live.add(key, text, infer=False, concepts=concepts)


def test_search_history_edit_and_delete(tab: Tab, live: Live) -> None:
    key = json.loads(live.cli("keys", "create", "--tenant", "acme", "--user", "ana", "--json"))["key"]
    _notes(live, key)
    tab.page.goto(live.url + "/ui")
    tab.shot("login")
    page = tab.open(key)
    page.wait_for_selector("#memories-page table.memories tbody tr[data-id]")
    assert "1–" in page.inner_text("#memories-page .count") and "vegetarian" in tab.view()
    assert page.inner_text("#who-text") == "tenant acme · user ana"
    # the key is kept for this tab only: not in a cookie, not in the address, not in localStorage
    assert tab.context.cookies() == [] and key not in page.url
    assert page.evaluate("sessionStorage.getItem('mem_pipeline.key')") == key
    assert page.evaluate("localStorage.length") == 0
    tab.shot("memories")
    # search: the hits with their parts, the prompt block beside
    page.click("#nav a[data-page=search]")
    page.fill("#search-page input[name=q]", "what should I cook?")
    page.press("#search-page input[name=q]", "Enter")
    page.wait_for_selector("#search-page .hits article.hit")
    first = page.locator("#search-page .hits article.hit").first
    assert "vegetarian" in first.inner_text()
    assert first.locator(".part").count() >= 6 and first.locator("svg.bar rect.fill").count() >= 6
    assert first.locator(".tag.src-semantic, .tag.src-lexical").count() == 1
    assert "<memory-data>" in page.inner_text("pre.prompt") and "vegetarian" in page.inner_text("pre.prompt")
    # an association hit, with the concept path that reached it
    reached = "#search-page .associations article.hit[data-source=association]"
    tab.go("#/search?q=timeout&limit=1", reached)
    via = page.inner_text(f"{reached} .via")
    assert "via concept path: timeout → " in via and "retry" in via
    tab.shot("search")
    # a fact: history, edit (old and new text), delete with a second step
    tab.go("#/search?q=what+should+I+cook%3F", "#search-page .hits article.hit")
    fid = page.locator("#search-page .hits article.hit").first.get_attribute("data-id")
    page.locator("#search-page .hits article.hit .hit-text a").first.click()
    page.wait_for_selector("#fact-page .timeline .ev-ADD")
    assert "Source turns" in tab.view() and "Leeds half marathon" in page.inner_text("#fact-page ul.turns")
    page.click("#fact-page details.edit summary")
    page.fill("#fact-page textarea[name=text]", "I'm vegan now.")
    page.click("#fact-page details.edit button[type=submit]")
    page.wait_for_selector("#fact-page .timeline .ev-UPDATE")
    assert page.url.endswith(f"#/fact/{fid}")
    assert "I'm vegetarian." in page.inner_text(".ev-UPDATE del.old")
    assert page.inner_text(".ev-UPDATE ins.new") == "I'm vegan now."
    tab.shot("fact")
    page.click("#fact-page details.delete summary")
    assert page.is_visible("#fact-page details.delete button.danger")
    page.click("#fact-page details.delete button.danger")
    page.wait_for_selector("#memories-page .notice")
    assert "Deleted the fact" in tab.view()
    assert page.locator(f"#memories-page tr[data-id='{fid}']").count() == 0
    assert "vegan" not in page.inner_text("#memories-page table.memories")
    with live.api(key) as c:
        assert c.get(f"/v1/memories/{fid}").status_code == 404
        assert fid not in [f["id"] for f in c.get("/v1/memories").json()]
    tab.go(f"#/fact/{fid}", "#fact-page .ev-DELETE")
    assert "Deleted fact" in tab.view()
    tab.assert_clean()


def test_concepts_graph_and_feedback(tab: Tab, live: Live) -> None:
    key = live.key("acme", "dev")
    _notes(live, key)
    page = tab.open(key)
    # feedback from a search moves links; the graph shows it
    tab.go("#/search?q=timeout&limit=1", "#search-page .associations article.hit")
    page.locator("#search-page .associations form.feedback button[value=true]").first.click()
    page.wait_for_selector("#search-page .feedback-done")
    page.click("#nav a[data-page=concepts]")
    page.wait_for_selector("#concepts-page svg.graph line.edge", state="attached")
    width = {
        (e.get_attribute("data-a"), e.get_attribute("data-b")): float(e.get_attribute("stroke-width") or 0)
        for e in page.locator("svg.graph line.edge").all()
    }
    assert width[("retry", "timeout")] > width[("deploy", "timeout")]  # edge width by strength
    assert page.locator("svg.graph line.edge.fb-pos").count() >= 1  # feedback shown
    assert page.locator("svg.graph line.edge.weak").count() >= 1  # too rare to follow: dashed
    page.locator("svg.graph a[data-concept=timeout]").click()
    page.wait_for_selector("#concept-focus")
    assert page.url.endswith("#/concepts?c=timeout")
    facts = page.inner_text("#concept-focus ul.concept-facts")
    assert "The deploy timed out after the release." in facts and "Backoff" not in facts
    tab.shot("concepts")
    tab.assert_clean()


def test_hostile_text_stays_inert(tab: Tab, live: Live) -> None:
    key = live.key("acme", "mallory")
    for text in HOSTILE:
        live.add(key, text)
    live.add(key, "a tagged note", infer=False, concepts=["<img src=x onerror=alert(9)>"])
    page = tab.open(key)
    page.wait_for_selector("#memories-page tbody tr[data-id]")
    shown = tab.view()
    for text in HOSTILE:
        assert text in shown  # the text itself, as text
    for route, ready in [
        ("#/memories", "#memories-page"),
        ("#/search?q=cat+tea+chess&weak=1", "#search-page .hit"),
        ("#/concepts", "#concepts-page"),
        ("#/memories?concept=%3Cimg+src%3Dx+onerror%3Dalert(9)%3E", "#memories-page"),
    ]:
        tab.go(route, ready)
        assert (
            page.locator("#view img, #view script, #view iframe, #view [onerror], #view [onload]").count()
            == 0
        )
        assert page.locator("#view a[href^='javascript'], #view a:not([href^='#/'])").count() == 0
    tab.go("#/search?q=cat+tea+chess&weak=1", "#search-page .hit")
    assert "window.__pwned" in page.inner_text("pre.prompt")
    page.locator("#search-page .hit-text a", has_text="javascript:alert(4)").first.click()
    page.wait_for_selector("#fact-page")
    assert "javascript:alert(4)" in page.inner_text("#fact-page blockquote.fact-text")
    assert page.url.startswith(live.url + "/ui#/fact/")
    time.sleep(0.3)  # anything an injected handler would do has had its chance
    tab.assert_clean()


def test_one_users_key_never_shows_another_users_facts(tab: Tab, live: Live) -> None:
    zoe, yan = live.key("acme", "zoe"), live.key("acme", "yan")
    live.add(zoe, "Zoe's locker code is 1111.", infer=False)
    theirs = live.add(yan, "Yan's locker code is 2222.", infer=False)["events"][0]["id"]
    live.add(live.key("other", "xia"), "Xia's locker code is 3333.", infer=False)
    page = tab.open(zoe)
    page.wait_for_selector("#memories-page tbody tr[data-id]")
    assert "1111" in tab.view() and "2222" not in tab.view()
    # edited addresses: another user's fact id, another user or tenant named in the route
    tab.go(f"#/fact/{theirs}", "#view .notice.error")
    assert "2222" not in tab.view() and "no fact" in tab.view()
    for route in (
        "#/memories?user_id=yan",
        "#/memories?tenant=other&user_id=xia",
        "#/search?q=locker+code&weak=1&user_id=yan",
    ):
        tab.go(route, "#view .page")
        assert "1111" in tab.view() and "2222" not in tab.view() and "3333" not in tab.view(), route
    # the script never sends another user's id, and the server refuses one if it is sent
    status = page.evaluate(
        "async () => (await fetch('/ui/api/memories?user_id=yan', {headers: {Authorization: "
        "'Bearer ' + sessionStorage.getItem('mem_pipeline.key')}})).status"
    )
    assert status == 403
    # a tenant key picks a user of its tenant, and only those
    page.click("#sign-out")
    page.wait_for_selector("#login:not([hidden])")
    assert page.evaluate("sessionStorage.length") == 0
    tab.open(live.key("acme"))
    page.wait_for_selector("#user-form:not([hidden])")
    # (not wait_for_function: Playwright evaluates its predicate with eval, which our CSP forbids)
    page.locator("#user-list option").nth(1).wait_for(state="attached")
    options = page.eval_on_selector_all("#user-list option", "os => os.map(o => o.value)")
    assert {"zoe", "yan"} <= set(options) and "xia" not in options
    page.fill("#user-input", "yan")
    tab.clear()
    page.click("#user-form button")
    page.wait_for_selector("#memories-page tbody tr[data-id]")
    assert "2222" in tab.view() and "1111" not in tab.view()
    page.fill("#user-input", "xia")  # a user of another tenant: nothing
    tab.clear()
    page.click("#user-form button")
    page.wait_for_selector("#memories-page")
    assert "3333" not in tab.view() and "Nothing stored matches." in tab.view()
    tab.assert_clean()


def test_a_revoked_key_is_refused_at_once(tab: Tab, live: Live) -> None:
    key = live.key("acme", "vic")
    live.add(key, "Vic keeps bees.", infer=False)
    page = tab.open(key)
    page.wait_for_selector("#memories-page tbody tr[data-id]")
    live.cli("keys", "revoke", key.split("_")[1])  # another process writes the key file
    page.click("#nav a[data-page=search]")
    page.wait_for_selector("#login:not([hidden]) #login-error:not([hidden])")
    assert "refused" in page.inner_text("#login-error") and "bees" not in page.inner_text("body")
    assert page.evaluate("sessionStorage.getItem('mem_pipeline.key')") is None
    page.fill("#key-input", key)  # and it stays refused
    page.click("#login-form button")
    page.wait_for_selector("#login-error:not([hidden])")
    assert page.is_hidden("#view") and "bees" not in page.inner_text("body")
    tab.assert_clean()


def test_pending_retry_and_forget(tab: Tab, live: Live) -> None:
    key = live.key("acme", "wes")
    live.add(key, "I work as a nurse in Leeds.")
    live.extractor.fail = True
    try:
        assert "pending_id" in live.add(key, "I started learning the cello.")["error"]
    finally:
        live.extractor.fail = False
    page = tab.open(key)
    tab.go("#/pending", "#pending-page table.pending")
    assert "I started learning the cello." in tab.view() and "LLMError" in tab.view()
    tab.shot("pending")
    page.click("#pending-page button[type=submit]")
    page.wait_for_selector("#pending-page .notice")
    assert "0 still pending" in tab.view() and "No pending extractions" in tab.view()
    with live.api(key) as c:
        assert any("cello" in f["text"] for f in c.get("/v1/memories").json())
    # forget: the user id typed exactly, else nothing happens
    page.click("#nav a[data-page=forget]")
    page.wait_for_selector("#forget-page")
    page.fill("#forget-page input[name=confirm]", "wes?")
    page.click("#forget-page button.danger")
    page.wait_for_selector("#forget-page .notice.error")
    with live.api(key) as c:
        assert len(c.get("/v1/memories").json()) > 0
    page.fill("#forget-page input[name=confirm]", "wes")
    assert page.locator("#forget-page .notice.error").count() == 0  # typing again clears it
    tab.shot("forget")
    page.click("#forget-page button.danger")
    page.wait_for_selector("#memories-page .notice")
    assert "Forgot wes" in tab.view() and "Nothing stored matches." in tab.view()
    with live.api(key) as c:
        assert c.get("/v1/memories").json() == []
    tab.assert_clean()
