"""Findings of an attack on the service, each with the test that failed before its fix.

1. deeply nested metadata made the store unopenable for every tenant;
2. key commands raced across processes;
3. one large request held every tenant; the list had no paging (see also ``test_http``);
4. invalid UTF-8 in ``user_id`` merged users;
5. the store was world-readable;
6. a fact id gave its text away;
7. the prompt block could be broken across lines;
8. internals leaked in error bodies;
9. duplicate identity parameters and headers were accepted; the body was parsed before the key.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_pipeline import InvalidInputError, Memory, MemoryConfig, StoreError
from mem_pipeline.keys import KeyStore
from mem_pipeline.models import METADATA_MAX_DEPTH
from mem_pipeline.recall import Hit, Recall
from mem_pipeline.store import Scope, fact_to_payload

NOW = "2026-03-01T12:00:00+00:00"


def _nested(levels: int) -> dict[str, Any]:
    """``{"m": {"a": {"a": ...}}}``: the request that made a store unopenable at 122 levels."""
    inner: dict[str, Any] = {}
    node = inner
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return {"m": inner}


# -- 1. deep metadata -------------------------------------------------------------------------
@pytest.mark.parametrize("levels", [METADATA_MAX_DEPTH + 1, 122, 126, 5000])
def test_deep_metadata_is_refused_and_the_store_reopens(open_memory, store_path, levels: int) -> None:
    m = open_memory(store_path)
    m.add("I like green tea.", user_id="ana", infer=False)
    with pytest.raises(InvalidInputError, match="nested deeper"):
        m.add("I like black tea.", user_id="bob", infer=False, metadata=_nested(levels))
    m.close()
    again = open_memory(store_path)
    assert [f.text for f in again.get_all(user_id="ana")] == ["I like green tea."]
    assert again.get_all(user_id="bob") == []
    assert again.add("I like oolong.", user_id="bob", infer=False).count("ADD") == 1


def test_metadata_at_the_depth_limit_is_kept(mem) -> None:
    meta = _nested(METADATA_MAX_DEPTH - 1)
    fid = mem.add("I like green tea.", user_id="ana", infer=False, metadata=meta).ids[0]
    assert mem.get(fid, user_id="ana").metadata == meta


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        ({"n": 2**64}, "64 bits"),
        ({"n": -(2**63) - 1}, "64 bits"),
        ({"n": 10**4000 if hasattr(int, "bit_length") else 0}, "64 bits"),
        ({"x": float("inf")}, "finite"),
        ({"x": "\ud800"}, "Unicode"),
        ({"\udfff": 1}, "Unicode"),
        ({"k" * 300: 1}, "longer than"),
        ({f"k{i}": i for i in range(1001)}, "keys"),
        ({"x": "y" * 70_000}, "KB"),
    ],
)
def test_odd_metadata_gets_our_error(mem, meta: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidInputError, match=why):
        mem.add("I like green tea.", user_id="ana", infer=False, metadata=meta)
    assert mem.get_all(user_id="ana") == []


_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(st.characters(codec=None, exclude_categories=()), max_size=8),
    ),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=60,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    meta=st.one_of(st.dictionaries(st.text(max_size=6), _json, max_size=4), st.integers(20, 300).map(_nested))
)
def test_any_json_then_reopen(tmp_path_factory, embedder, meta: dict[str, Any]) -> None:
    path = str(tmp_path_factory.mktemp("store"))
    with (
        Memory(config=MemoryConfig(path=path), embedder=embedder) as m,
        contextlib.suppress(InvalidInputError),
    ):
        m.add("I like green tea.", user_id="ana", infer=False, metadata=meta)
    with Memory(config=MemoryConfig(path=path), embedder=embedder) as m:
        facts = m.get_all(user_id="ana")
        assert len(facts) <= 1
        m.search("tea", user_id="ana")
        assert m.add("I like oolong.", user_id="ana", infer=False).ids


def _damage(m: Memory, levels: int) -> str:
    """Write a fact with metadata nested ``levels`` deep straight through the store, as an
    older version let a request do."""
    fid = str(uuid.uuid4())
    ok = m.get_all(user_id="x")  # nothing; makes sure the store is open and healthy
    assert ok == []
    good = m.add("The other tenant's fact.", user_id="bob", tenant="t2", infer=False).ids[0]
    m.parts.links.flush()  # what the add left to the write-behind (its vector) goes first
    fact = m.get(good, user_id="bob", tenant="t2").model_copy(
        update={"id": fid, "scope": Scope.of("ana"), "metadata": _nested(levels), "text": "I like tea."}
    )
    vec = m.embedder.embed_batch(["I like tea."])[0]
    from qdrant_client import models

    payload = fact_to_payload(fact, "I like tea.", "I like tea.")
    m.store.client.upsert(
        m.store.facts,
        points=[models.PointStruct(id=fid, vector={"dense": vec.tolist()}, payload=payload)],
    )
    return fid


@pytest.mark.parametrize("levels", [122, 126])
def test_a_store_damaged_by_an_older_version_opens_and_repairs(
    engine: str, embedder, tmp_path: Path, levels: int
) -> None:
    if engine != "edge":
        pytest.skip("the write-ahead-log limit is the edge engine's")
    path = str(tmp_path / "store")
    with Memory(config=MemoryConfig(path=path), embedder=embedder) as m:
        bad = _damage(m, levels)
    with Memory(config=MemoryConfig(path=path), embedder=embedder) as m:
        assert m.store.client.repairs, "the damaged log was trimmed and reported"
        assert [f.text for f in m.get_all(user_id="bob", tenant="t2")] == ["The other tenant's fact."]
        report = m.repair(dry_run=True)
        assert report["wal_repairs"]
        unreadable = report["unreadable"].get(m.store.facts, [])
        if levels >= 126:
            assert unreadable == [bad]
            with pytest.raises(StoreError):
                m.get_all(user_id="ana")
        done = m.repair()
        assert done["unreadable"] == report["unreadable"]
        assert m.add("I like coffee.", user_id="ana", infer=False).ids
        texts = {f.text for f in m.get_all(user_id="ana")}
        assert "I like coffee." in texts
    with Memory(config=MemoryConfig(path=path), embedder=embedder) as m:
        assert "I like coffee." in {f.text for f in m.get_all(user_id="ana")}
        assert m.get_all(user_id="bob", tenant="t2")
        assert m.repair(dry_run=True)["unreadable"] == {}


def test_an_engine_panic_becomes_our_error() -> None:
    from mem_pipeline.store._edge_types import Shard as _Shard

    class PanicException(BaseException):  # the binding's class has this name and base
        pass

    class Broken:
        def update(self, op: object) -> None:
            raise PanicException("called `Option::unwrap()` on a `None` value")

    with pytest.raises(StoreError, match="internal panic"):
        _Shard(Broken(), "facts").update(None)  # type: ignore[arg-type]


# -- 2. key file races -------------------------------------------------------------------------
def _create_keys(path: str, n: int, out: Any) -> None:
    ks = KeyStore(path)
    for i in range(n):
        key, _ = ks.create(tenant="t", user_id=f"u{i}")
        out.put(key)


def _revoke(path: str, kid: str) -> None:
    KeyStore(path).revoke(kid)


def test_racing_key_processes_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "api-keys.json")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    revoked, _ = KeyStore(path).create(tenant="t", user_id="old")
    kid = revoked.split("_")[1]
    procs = [ctx.Process(target=_create_keys, args=(path, 6, out)) for _ in range(6)]
    procs.append(ctx.Process(target=_revoke, args=(path, kid)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    keys = [out.get(timeout=10) for _ in range(36)]
    store = KeyStore(path)
    assert len(store.list_keys()) == 37
    assert all(store.verify(k) is not None for k in keys)
    assert store.verify(revoked) is None


# -- 5. permissions ----------------------------------------------------------------------------
def test_a_new_store_is_private_whatever_the_umask(open_memory, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "store"
        m = open_memory(str(path))
        m.add("My bank PIN is 4321.", user_id="ana", infer=False)
        m.close()
    finally:
        os.umask(old)
    modes = [(p, stat.S_IMODE(p.stat().st_mode)) for p in [path, *path.rglob("*")]]
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert all(mode == 0o700 for p, mode in modes if p.is_dir()), modes
    assert all(mode == 0o600 for p, mode in modes if p.is_file()), modes


# -- 6. ids ------------------------------------------------------------------------------------
def test_a_fact_id_tells_nothing_of_its_text(mem) -> None:
    a = mem.add("My bank PIN is 4321.", user_id="ana", infer=False).ids[0]
    b = mem.add("My bank PIN is 4321.", user_id="bob", infer=False).ids[0]
    assert a != b and uuid.UUID(a).version == 7
    again = mem.add("My bank PIN is 4321.", user_id="ana", infer=False)
    assert again.events[0].event == "REINFORCE" and again.ids == [a]  # still no duplicate


def test_an_updated_fact_is_not_reinforced_by_its_old_wording(mem) -> None:
    fid = mem.add("I'm vegetarian.", user_id="ana", infer=False).ids[0]
    mem.update(fid, "I'm vegan now.", user_id="ana")
    res = mem.add("I'm vegetarian.", user_id="ana", infer=False)
    assert res.ids != [fid]
    assert mem.get(fid, user_id="ana").confirmations == 1


# -- 7. the prompt block -----------------------------------------------------------------------
_separators = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u202e\u200b\u2066\ufeff"


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from([*_separators, "a", " ", "<", "S"])), max_size=8))
def test_the_prompt_block_has_one_line_per_item(texts: list[str]) -> None:
    from datetime import datetime, timezone

    hits = [
        Hit(
            id=str(i),
            text=t or "x",
            score=1.0 - i / 100,
            source="semantic",
            category="other",
            concepts=[],
            metadata={},
            created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )
        for i, t in enumerate(texts)
    ]
    block = Recall(query="q", hits=hits).to_prompt(max_tokens=None)
    lines = block.splitlines()
    assert len(lines) == len(hits) + 3  # open, preamble, items, close
    assert all(not any(c in line for c in _separators) for line in lines)
    assert sum(1 for line in lines if line.startswith("- [")) == len(hits)


# -- 3, 4, 8, 9. the HTTP service ---------------------------------------------------------------
def test_the_http_service_refuses_ambiguous_requests(mem, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mem_pipeline.service import create_app

    keys = KeyStore(tmp_path / "api-keys.json")
    tenant_key, _ = keys.create(tenant="t")
    user_key, _ = keys.create(tenant="t", user_id="ana")
    other_key, _ = keys.create(tenant="t", user_id="bob")
    app = create_app(mem, keys)
    with TestClient(app) as c:
        auth = {"Authorization": f"Bearer {tenant_key}"}
        for q in ("user_id=jos%E9", "user_id=jos%E8", "user_id=%FF"):
            r = c.get(f"/v1/memories?{q}", headers=auth)
            assert r.status_code == 400 and "UTF-8" in r.json()["error"]["message"]
        r = c.get("/v1/memories?user_id=bob&user_id=ana", headers={"Authorization": f"Bearer {user_key}"})
        assert r.status_code == 400
        r = c.get(
            "/v1/memories",
            headers=[("Authorization", f"Bearer {user_key}"), ("Authorization", f"Bearer {other_key}")],
        )
        assert r.status_code == 400
        # the key is checked before the body is read
        r = c.post("/v1/memories", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 401
        # errors carry our words: no library text, documentation links or paths
        r = c.get("/v1/memories?user_id=%20", headers=auth)
        assert r.status_code == 422 and "pydantic" not in r.text and "http" not in r.text
        r = c.post(
            "/v1/memories",
            json={"messages": "I like tea.", "infer": False, "metadata": _nested(126)},
            headers={"Authorization": f"Bearer {user_key}"},
        )
        assert r.status_code == 422, r.text
        assert "nested deeper" in r.json()["error"]["message"]
        r = c.post(
            "/v1/memories",
            content=b'{"messages": "I like tea.", "metadata": {"n": 1' + b"0" * 4000 + b"}}",
            headers={"Authorization": f"Bearer {user_key}", "Content-Type": "application/json"},
        )
        assert r.status_code == 422 and "Rust" not in r.text and "qdrant" not in r.text.lower()
        r = c.post(
            "/v1/memories",
            content=b"{not json",
            headers={"Authorization": f"Bearer {user_key}", "Content-Type": "application/json"},
        )
        assert r.status_code in (400, 422) and "error" in r.json()
        assert c.get("/docs").status_code == 404  # docs off unless asked for
        assert c.get("/openapi.json").status_code == 200
        keys.path.write_text("{broken")
        r = c.get("/v1/memories", headers=auth)
        assert str(tmp_path) not in r.text


def test_the_list_is_paged(mem, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mem_pipeline.service import create_app

    keys = KeyStore(tmp_path / "api-keys.json")
    key, _ = keys.create(tenant="default", user_id="ana")
    for i in range(7):
        mem.add(f"Fact number {i} about my garden.", user_id="ana", infer=False, timestamp=1_000 + i)
    seen: list[str] = []
    with TestClient(create_app(mem, keys)) as c:
        url: str | None = "/v1/memories?limit=3"
        while url:
            r = c.get(url, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200
            seen += [f["text"] for f in r.json()]
            nxt = r.headers.get("x-next-cursor")
            url = f"/v1/memories?limit=3&cursor={nxt}" if nxt else None
        assert (
            c.get("/v1/memories?cursor=nope", headers={"Authorization": f"Bearer {key}"}).status_code == 422
        )
    assert seen == [f"Fact number {i} about my garden." for i in range(7)]
    page = mem.page(user_id="ana", limit=5)
    assert len(page.facts) == 5 and page.next_cursor
    assert [f.text for f in mem.page(user_id="ana", cursor=page.next_cursor).facts] == seen[5:]


def test_one_add_is_bounded(mem) -> None:
    cfg = mem.config
    with pytest.raises(InvalidInputError, match="max_add_turns"):
        mem.add([{"role": "user", "content": f"turn {i}"} for i in range(cfg.max_add_turns + 1)], user_id="a")
    with pytest.raises(InvalidInputError, match="max_add_chars"):
        mem.add([{"role": "user", "content": "x" * 30_000}] * 3, user_id="a")
    assert mem.get_all(user_id="a") == []
    assert json.dumps(cfg.max_add_turns)
