"""The HTTP service under concurrent clients: throughput, latency, errors, and nothing lost.

    python -m eval.service_load --clients 16 --ops 40 --json out.json
    python -m eval.service_load --tree ../older-checkout       # the same load, older code

**Server.** A child process opens a fresh embedded store (edge engine, the local embedder)
and serves ``service.create_app`` with uvicorn on 127.0.0.1 (a free port, loopback only).
``--tree`` puts another checkout first on the child's ``PYTHONPATH``, so the same load can be
run against older code (the thread-per-request handlers the async ones replaced).

**Clients.** ``--clients`` tasks on one event loop in this process (httpx), each with its own
user-bound API key, each doing ``--ops`` requests in turn: an ``add`` of one new turn, then a
``search``, and so on (a chat's rhythm: the turn is stored, the next question is recalled).
The turns are distinct synthetic sentences (``eval.bench``), so each add stores one turn.
Before timing, each client searches once (the model and the store are warm). Reported: the
requests per second of the whole run, p50 and p95 latency of each kind, the errors (any
response other than 200, and any exception: there must be none), and **nothing lost**: after
the run each client's user lists its memories, which must be exactly the turns its adds
acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx

from eval.bench import questions, sentence_pool

_SERVER = textwrap.dedent(
    """
    import json, sys
    import uvicorn
    from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
    from mem_pipeline.keys import KeyStore
    from mem_pipeline.service import create_app
    root, port, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    keys = KeyStore(root + "/keys.json")
    tokens = [keys.create(tenant="load", user_id=f"client{i:02d}")[0] for i in range(clients)]
    memory = Memory(config=MemoryConfig(path=root + "/store"), embedder=LocalEmbedder())
    print(json.dumps(tokens), flush=True)
    uvicorn.run(create_app(memory, keys), host="127.0.0.1", port=port, log_level="warning")
    memory.close()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))], 2)


async def _client(
    http: httpx.AsyncClient, token: str, turns: list[str], asks: list[str], out: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    for i in range(len(turns) + len(asks)):
        kind = "add" if i % 2 == 0 else "search"
        body = (
            {"messages": [{"role": "user", "content": turns[i // 2]}], "infer": False}
            if kind == "add"
            else {"query": asks[i // 2], "limit": 5}
        )
        t = time.perf_counter()
        try:
            path = "/v1/memories" if kind == "add" else "/v1/search"
            r = await http.post(path, json=body, headers=headers)
        except Exception as e:  # noqa: BLE001 - every failure is counted and reported
            out["errors"].append(f"{kind}: {type(e).__name__}: {e}")
            continue
        out[kind].append((time.perf_counter() - t) * 1000)
        if r.status_code != 200:
            out["errors"].append(f"{kind}: HTTP {r.status_code} {r.text[:200]}")
        elif kind == "add":
            out["acked"].extend(e["id"] for e in r.json()["events"] if e.get("id"))


async def _stored(http: httpx.AsyncClient, token: str) -> list[str]:
    headers = {"Authorization": f"Bearer {token}"}
    ids: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        r = await http.get("/v1/memories", params=params, headers=headers)
        r.raise_for_status()
        ids += [f["id"] for f in r.json()]
        cursor = r.headers.get("X-Next-Cursor")
        if not cursor:
            return ids


async def _run(base: str, tokens: list[str], ops: int, seed: int) -> dict[str, Any]:
    n = len(tokens)
    adds, searches = (ops + 1) // 2, ops // 2
    pool = sentence_pool(n * adds + 100, seed=seed)
    asks = questions(n * searches + n, seed)
    per = [{"add": [], "search": [], "errors": [], "acked": []} for _ in range(n)]  # type: ignore[var-annotated]
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=base, timeout=120.0, limits=limits) as http:
        await asyncio.gather(  # warm-up: one search each, not timed
            *(
                http.post(
                    "/v1/search", json={"query": asks[-1 - i]}, headers={"Authorization": f"Bearer {t}"}
                )
                for i, t in enumerate(tokens)
            )
        )
        started = time.perf_counter()
        turns = [pool[i * adds : (i + 1) * adds] for i in range(n)]
        ask = [asks[i * searches : (i + 1) * searches] for i in range(n)]
        await asyncio.gather(*(_client(http, t, turns[i], ask[i], per[i]) for i, t in enumerate(tokens)))
        wall = time.perf_counter() - started
        lost, unexpected = 0, 0
        for t, p in zip(tokens, per):
            stored = set(await _stored(http, t))
            lost += len(set(p["acked"]) - stored)
            unexpected += len(stored - set(p["acked"]))
    all_add = [x for p in per for x in p["add"]]
    all_search = [x for p in per for x in p["search"]]
    errors = [e for p in per for e in p["errors"]]
    requests = len(all_add) + len(all_search) + len(errors)
    return {
        "clients": n,
        "ops_per_client": ops,
        "requests": requests,
        "wall_s": round(wall, 2),
        "throughput_rps": round(requests / wall, 2),
        "add_ms": {"p50": _pct(all_add, 50), "p95": _pct(all_add, 95), "n": len(all_add)},
        "search_ms": {"p50": _pct(all_search, 50), "p95": _pct(all_search, 95), "n": len(all_search)},
        "all_ms": {"p50": _pct(all_add + all_search, 50), "p95": _pct(all_add + all_search, 95)},
        "errors": len(errors),
        "error_examples": errors[:5],
        "acknowledged_adds": sum(len(p["acked"]) for p in per),
        "lost": lost,
        "unexpected": unexpected,
        "mean_ms": round(statistics.mean(all_add + all_search), 2) if all_add or all_search else None,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="mem_pipeline_load_")
    port = _free_port()
    env = dict(os.environ)
    if args.tree:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(args.tree).resolve()), env.get("PYTHONPATH", "")])
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, root, str(port), str(args.clients)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        tokens = json.loads(server.stdout.readline())
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):  # the server binds once the app is built
            try:
                if httpx.get(base + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        out = asyncio.run(_run(base, tokens, args.ops, args.seed))
    finally:
        server.terminate()
        server.wait(timeout=60)
    out["tree"] = str(Path(args.tree).resolve()) if args.tree else "this checkout"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--ops", type=int, default=40, help="requests per client (adds and searches in turn)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--tree", help="a checkout whose mem_pipeline the server runs (default: this one)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    out = run(args)
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0 if out["errors"] == 0 and out["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
