"""The HTTP service over real loopback HTTP: uvicorn on 127.0.0.1 in a thread, httpx requests.

The scope tests try: no key, a wrong key, a malformed key, another scheme (Basic), a revoked
key; a user key reading, deleting, updating and reading the history of another tenant's fact
id (404, same answer as a random id); a user key naming another user or tenant (403); a tenant
key naming a user of its tenant (ok), forgetting to name one (422) and naming another tenant
(403); an oversized body (413).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from mem_pipeline import Memory, MemoryConfig  # noqa: E402
from mem_pipeline.keys import KeyStore  # noqa: E402
from mem_pipeline.service import create_app  # noqa: E402


class Server:
    def __init__(self, memory: Memory, keys: KeyStore) -> None:
        self.memory, self.keys = memory, keys
        self.app = create_app(memory, keys)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.sock = sock
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        cfg = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def server(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    keys = KeyStore(Path(tmp_path_factory.mktemp("keys")) / "api-keys.json")
    memory = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder)
    with Server(memory, keys) as s:
        yield s
    memory.close()


def _key(server: Server, tenant: str, user: str | None = None) -> str:
    key, _ = server.keys.create(tenant=tenant, user_id=user)
    return key


def _add(c: httpx.Client, text: str, **params: str) -> str:
    r = c.post("/v1/memories", json={"messages": text, "infer": False}, params=params)
    assert r.status_code == 200, r.text
    return str(r.json()["events"][0]["id"])


def test_round_trip_add_search_get_history_delete(server: Server) -> None:
    with server.client(_key(server, "acme", "ana")) as c:
        assert c.get("/health").json() == {"status": "ok"}
        assert c.get("/v1/whoami").json()["user_id"] == "ana"
        fid = _add(c, "I am vegetarian and I love hiking.")
        r = c.post("/v1/search", json={"query": "what should I cook?", "limit": 3})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["hits"][0]["id"] == fid
        assert {"source", "parts", "created_at"} <= set(body["hits"][0])
        assert "<memory-data>" in body["prompt"] and "vegetarian" in body["prompt"]
        fact = c.get(f"/v1/memories/{fid}").json()
        assert fact["text"] == "I am vegetarian and I love hiking."
        # one naming with Python (StoredFact.is_valid), the CLI and MCP; times in UTC with a Z
        assert fact["is_valid"] is True and fact["invalid_at"] is None and "valid" not in fact
        assert fact["created_at"].endswith("Z") and body["hits"][0]["created_at"].endswith("Z")
        assert body["hits"][0]["is_valid"] is True
        assert set(fact) == set(server.memory.get(fid, user_id="ana", tenant="acme").brief())
        assert [f["id"] for f in c.get("/v1/memories").json()] == [fid]
        fb = c.post("/v1/feedback", json={"ids": [fid], "helped": True, "query": "cook"})
        assert fb.status_code == 200 and fb.json()["facts"] == 1
        up = c.put(f"/v1/memories/{fid}", json={"text": "I am vegan and I love hiking."})
        assert up.status_code == 200 and up.json()["text"].startswith("I am vegan")
        assert c.delete(f"/v1/memories/{fid}").json() == {"deleted": fid}
        assert c.get(f"/v1/memories/{fid}").status_code == 404
        events = [e["event"] for e in c.get(f"/v1/memories/{fid}/history").json()]
        assert events[0] == "ADD" and events[-1] == "DELETE"
        bad = c.get("/v1/memories/not-a-uuid")
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "InvalidInputError"
        assert c.post("/v1/forget").json() == {"forgotten_facts": 0}
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert {"/v1/memories", "/v1/search", "/v1/feedback", "/v1/forget", "/health"} <= set(schema["paths"])
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


def test_missing_wrong_and_revoked_keys_are_401(server: Server) -> None:
    key = _key(server, "acme", "bo")
    kid = key.split("_")[1]
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Bearer {key[:-2]}xx"},
        {"Authorization": f"Bearer mpk_{kid}_"},
        {"Authorization": f"Basic {key}"},
    ):
        r = httpx.get(f"{server.url}/v1/memories", headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"]["type"] == "Unauthorized"
    with server.client(key) as c:
        assert c.get("/v1/memories").status_code == 200
        server.keys.revoke(kid)
        assert c.get("/v1/memories").status_code == 401
        assert c.post("/v1/memories", json={"messages": "x y z", "infer": False}).status_code == 401


def test_another_scopes_fact_is_404_and_other_users_are_403(server: Server) -> None:
    with server.client(_key(server, "t1", "u")) as owner:
        fid = _add(owner, "My locker code is 4711.")
    random_id = str(uuid.uuid4())
    with server.client(_key(server, "t2", "u")) as other:  # same user id, another tenant
        for fact in (fid, random_id):
            for method, path, kw in (
                ("GET", f"/v1/memories/{fact}", {}),
                ("DELETE", f"/v1/memories/{fact}", {}),
                ("PUT", f"/v1/memories/{fact}", {"json": {"text": "hacked"}}),
                ("GET", f"/v1/memories/{fact}/history", {}),
            ):
                r = other.request(method, path, **kw)
                assert r.status_code == 404, (method, path, r.text)
                assert "4711" not in r.text
        assert other.get("/v1/memories").json() == []
        hits = other.post("/v1/search", json={"query": "locker code"}).json()["hits"]
        assert hits == []
        assert other.post("/v1/feedback", json={"ids": [fid], "helped": True}).json()["facts"] == 0
        # a user key cannot name another user or tenant
        assert other.get("/v1/memories", params={"user_id": "someone"}).status_code == 403
        assert other.get("/v1/memories", params={"tenant": "t1"}).status_code == 403
        assert other.get("/v1/memories", params={"user_id": "u", "tenant": "t2"}).status_code == 200
    with server.client(_key(server, "t1", "u")) as owner:
        assert owner.get(f"/v1/memories/{fid}").status_code == 200


def test_tenant_key_reaches_users_of_its_tenant_only(server: Server) -> None:
    with server.client(_key(server, "shop", "alice")) as alice:
        fid = _add(alice, "Alice prefers email over phone calls.")
    with server.client(_key(server, "shop")) as admin:
        r = admin.get(f"/v1/memories/{fid}", params={"user_id": "alice"})
        assert r.status_code == 200 and "email" in r.json()["text"]
        fid2 = _add(admin, "Bob is allergic to peanuts.", user_id="bob")
        assert admin.get(f"/v1/memories/{fid2}", params={"user_id": "alice"}).status_code == 404
        missing = admin.get("/v1/memories")
        assert missing.status_code == 422 and "user_id" in missing.json()["error"]["message"]
        assert admin.get("/v1/memories", params={"user_id": "alice", "tenant": "other"}).status_code == 403
    with server.client(_key(server, "other")) as stranger:
        assert stranger.get(f"/v1/memories/{fid}", params={"user_id": "alice"}).status_code == 404
        assert stranger.get("/v1/memories", params={"user_id": "alice"}).json() == []


def test_oversized_request_is_413(server: Server) -> None:
    with server.client(_key(server, "acme", "big")) as c:
        r = c.post("/v1/memories", json={"messages": "x" * (300 * 1024), "infer": False})
        assert r.status_code == 413 and r.json()["error"]["type"] == "TooLarge"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"messages": "'
            for _ in range(40):
                yield b"y" * 8192
            yield b'"}'

        r = c.post("/v1/memories", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert c.get("/v1/memories").json() == []


def test_concurrent_burst_of_adds_and_searches_loses_nothing(server: Server) -> None:
    key = _key(server, "burst", "crowd")
    n_threads, per_thread = 8, 10

    def worker(t: int) -> list[str]:
        ids = []
        with server.client(key) as c:
            for i in range(per_thread):
                if i % 2 == 0:
                    ids.append(_add(c, f"note {t}-{i}: the build {t} step {i} uses cache {t * 100 + i}"))
                else:
                    r = c.post("/v1/search", json={"query": f"build {t} step", "limit": 3})
                    assert r.status_code == 200, r.text
        return ids

    with ThreadPoolExecutor(n_threads) as pool:
        added = [i for ids in pool.map(worker, range(n_threads)) for i in ids]
    assert len(added) == len(set(added)) == n_threads * per_thread // 2
    with server.client(key) as c:
        stored = {f["id"] for f in c.get("/v1/memories").json()}
    assert stored == set(added)


def test_schemathesis_finds_no_server_errors(server: Server) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, settings

    key = _key(server, "fuzz", "fuzzer")
    schema = schemathesis.openapi.from_dict(server.app.openapi())
    headers = {"Authorization": f"Bearer {key}"}
    checked = 0
    statuses: dict[int, int] = {}
    for result in schema.get_all_operations():
        op = result.ok()

        @settings(
            max_examples=25,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=op.as_strategy())
        def run(case: Any) -> None:
            resp = case.call(base_url=server.url, headers=headers, timeout=30)
            statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
            assert resp.status_code < 500, (case.method, case.formatted_path, resp.status_code, resp.text)

        run()
        checked += 1
    assert checked >= 9
    assert statuses.get(200, 0) > 20, statuses  # the key was used: not all refused at the door
    print("schemathesis statuses", dict(sorted(statuses.items())))


def test_keys_cli_create_list_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mem_pipeline.cli import main

    store = str(tmp_path / "store")
    assert main(["keys", "create", "--path", store, "--tenant", "acme", "--user", "ana"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("mpk_")
    keyfile = tmp_path / "store" / "api-keys.json"
    assert key.split("_", 2)[2] not in keyfile.read_text()  # hashed at rest
    assert keyfile.stat().st_mode & 0o077 == 0
    assert main(["keys", "list", "--path", store, "--json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["tenant"] == "acme" and rec["user_id"] == "ana" and rec["revoked_at"] is None
    assert KeyStore(keyfile).verify(key) is not None
    assert main(["keys", "revoke", "--path", store, rec["id"]]) == 0
    assert KeyStore(keyfile).verify(key) is None
    assert main(["keys", "revoke", "--path", store, "nope"]) == 2
