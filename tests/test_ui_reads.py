"""The read methods the memory browser stands on: a user's concept links as a reader sees them
(``ConceptLinks.describe``), the users of a tenant (``Memory.users``) and a listing's size
(``FactPage.total``). Each stays inside its scope. And the package ships the browser."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from mem_pipeline import Memory
from mem_pipeline.models import Scope

_NOTES = [
    ("The deploy timed out after the release.", ["timeout", "deploy"]),
    ("Retried the request and it went through.", ["timeout", "retry"]),
    ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
    ("The upload timed out again; one retry fixed it.", ["timeout", "retry"]),
]


def _notes(mem: Memory, user: str, tenant: str = "acme") -> list[str]:
    return [mem.add(t, user_id=user, tenant=tenant, infer=False, concepts=c).ids[0] for t, c in _NOTES]


def test_describe_lists_the_users_links_with_strength_and_feedback(mem: Memory) -> None:
    ids = _notes(mem, "dev")
    _notes(mem, "other")  # the same concepts for another user move nothing of dev's
    scope = Scope.of("dev", "acme")
    counts, links = mem.parts.links.describe(scope, mem.now())
    assert counts == {"timeout": 3.0, "retry": 3.0, "deploy": 1.0, "backoff": 1.0}
    pairs = {(v.a, v.b): v for v in links}
    assert set(pairs) == {("retry", "timeout"), ("deploy", "timeout"), ("backoff", "retry")}
    strong = pairs[("retry", "timeout")]
    assert links[0] is strong  # strongest first
    assert strong.count == 2 and strong.followable and abs(strong.strength - 2 / 3) < 1e-6
    assert not pairs[("deploy", "timeout")].followable  # seen once: chance
    mem.feedback([ids[0]], True, user_id="dev", tenant="acme", query="retry")  # deploy note, via retry
    _, after = mem.parts.links.describe(scope, mem.now())
    moved = {(v.a, v.b): v for v in after}
    assert moved[("retry", "timeout")].feedback == 0.5
    assert moved[("retry", "timeout")].strength > strong.strength
    mem.forget(user_id="dev", tenant="acme")
    assert mem.parts.links.describe(scope, mem.now()) == ({}, [])
    assert len(mem.parts.links.describe(Scope.of("other", "acme"), mem.now())[1]) == 3


def test_users_of_a_tenant_and_the_size_of_a_listing(mem: Memory) -> None:
    _notes(mem, "dev")
    mem.add("I like tea.", user_id="bob", tenant="acme", infer=False)
    mem.add("I like coffee.", user_id="eve", tenant="elsewhere", infer=False)
    assert mem.users(tenant="acme") == ["dev", "bob"]  # most points first
    assert mem.users(tenant="elsewhere") == ["eve"]
    assert mem.users(tenant="nobody") == []
    page = mem.page(user_id="dev", tenant="acme", limit=3)
    assert page.total == 4 and len(page.facts) == 3 and page.next_cursor
    rest = mem.page(user_id="dev", tenant="acme", limit=3, cursor=page.next_cursor)
    assert rest.total == 4 and len(rest.facts) == 1 and rest.next_cursor is None
    assert mem.page(user_id="dev", tenant="acme", filters={"concepts": ["retry"]}).total == 3


def test_the_package_lists_every_subpackage_and_ships_the_browser_files() -> None:
    """A built wheel holds what ``pyproject.toml`` lists: every directory of the package with an
    ``__init__.py`` must be listed (the browser's among them), and its static files matched."""
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parent.parent
    conf = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "mem_pipeline").rglob("__init__.py")}
    assert found <= set(conf["packages"]), sorted(found - set(conf["packages"]))
    patterns = conf["package-data"]["mem_pipeline.ui"]
    static = root / "mem_pipeline" / "ui" / "static"
    for name in ("index.html", "app.js", "app.css", "favicon.svg"):
        assert (static / name).is_file() and any(fnmatch.fnmatch(f"static/{name}", p) for p in patterns)
