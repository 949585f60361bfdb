"""Speed at scale: recall latency, add throughput, memory, disk and reopen time per engine.

    python -m eval.bench                                   # edge 1k/10k/100k, local 1k
    python -m eval.bench --sizes 1000 10000 --local-sizes 1000 10000 --json out.json
    python -m eval.bench --sizes 30000 300000 --local-sizes --per-user 100 --json out.json

**Data.** Synthetic first-person facts from five sentence templates filled from fixed word
lists (activities, names, places, foods, times, relations) with a seeded RNG; a pool of
``--pool`` distinct sentences is embedded once with the real local embedder, and each user
gets its share of distinct sentences of the pool (users repeat each other, as real
users do; nobody repeats themself). Queries are questions built from the same slots ("who did I
go hiking with in Porto?"), distinct within a run, each asked of a random user.

**Stores.** Every store is built through ``Memory.add`` (raw turns, batches of 50 turns per
call, one user per batch): the full write path with history, journal, concepts and links. To
keep the 100k build in minutes the embedder handed to those builds serves the pool's
precomputed vectors (computed by the same model) and runs the model for anything else. The
add throughput row is measured separately with the plain model: new turns added to the
built store in batches of 50, embedding included.

**Recall.** In a fresh process that opens the built store: ``Memory.search(limit=5)`` with the
plain model and an empty embedding cache (each query is new), read-only (no reinforcement),
over a sample of at most ``--queries`` users. **Cold and warm**: each sampled user's first
recall after the open (nothing of the user read yet: the payload and concept caches hold none
of it), then, once every sampled user had one, a second recall of each with another question;
``cold_over_warm`` is the ratio of their medians. **Steady**: ``--queries`` recalls of random
sampled users, links on and off. **Floors**: the model's time to embed the query + the
engine's own filtered dense query for the same user, candidate_pool points, as the pipeline's
first stage asked it before the payload cache (with payloads: ``floor``) and as it asks it now
(ids and scores only: ``floor_ids_only``; edge: ``EdgeShard.query``; local:
``QdrantClient.query_points``): the least any recall on that engine can cost. ``overhead`` =
pipeline p50 / floor p50.

**Memory, disk, reopen.** A child process opens the built store (time to open: reopen), runs
``--rss-queries`` recalls, each of another user in turn (as many users as queries, up to all),
and reports what its resident memory grew by since before the open (the model loaded):
private memory (``RssAnon``) and mapped file pages (``RssFile``: WAL and segments in the page
cache, reclaimable); disk is the blocks the store directory holds (and its apparent size).
With ``--compact`` each built store is compacted first (``Memory.compact``: its segments moved
to memory-mapped files; ``compact_s`` is how long that took), so the rows show what a
compacted store costs to serve.

**Users.** 100 by default (``size / 100`` facts each); ``--per-user N`` gives ``size / N`` users
of N facts each (the scaling runs: 30k, 100k and 300k facts, 100 a user).

Output: a table on stdout and JSON (``--json``). Times swing on shared machines: compare the
ratios, and take medians of several runs (``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
from mem_pipeline.embed import Vectors
from mem_pipeline.models import Scope
from mem_pipeline.store import scope_filter

USERS = 100
BATCH = 50

ACTS = [
    "hiking", "baking bread", "learning Rust", "painting", "running", "playing chess",
    "gardening", "playing the cello", "rock climbing", "swimming", "knitting", "kayaking",
    "birdwatching", "salsa dancing", "pottery", "surfing", "camping", "cycling", "yoga",
    "fishing", "sketching", "writing poems", "brewing beer", "skiing", "photography",
    "woodworking", "sailing", "bouldering", "archery", "tennis",
]  # fmt: skip
NAMES = [
    "Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea",
    "Milo", "Nia", "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Vik", "Wes", "Xena",
    "Yuri", "Zoe", "Amir", "Bea", "Cruz", "Dev",
]  # fmt: skip
PLACES = [
    "Porto", "Lyon", "Osaka", "Denver", "Cork", "Quito", "Tartu", "Perth", "Bergen", "Split",
    "Krakow", "Oaxaca", "Hobart", "Ghent", "Malmo", "Izmir", "Leeds", "Cusco", "Nara", "Bled",
]  # fmt: skip
FOODS = [
    "ramen", "tapas", "pierogi", "falafel", "pho", "risotto", "tacos", "curry", "sushi",
    "goulash", "paella", "dumplings", "ceviche", "moussaka", "kimchi stew",
]  # fmt: skip
TIMES = ["last Monday", "last week", "last month", "in spring", "in June", "two years ago",
         "on my birthday", "this weekend", "next Friday", "over the holidays"]  # fmt: skip
RELS = ["sister", "brother", "cousin", "friend", "neighbour", "colleague", "aunt", "uncle"]

TEMPLATES = [
    "I went {act} with {name} in {place} {time}.",
    "My {rel} {name} lives in {place} and loves {act}.",
    "I'm planning to try {act} in {place} {time}.",
    "{name} recommended the {food} at a small place in {place}.",
    "I don't really like {food}, but I enjoy {act} with my {rel}.",
]
QUESTIONS = [
    "Who did I go {act} with in {place}?",
    "Where does my {rel} {name} live?",
    "What am I planning to do in {place}?",
    "Which food did {name} recommend?",
    "What do I enjoy doing with my {rel}?",
]


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "act": rng.choice(ACTS),
        "name": rng.choice(NAMES),
        "place": rng.choice(PLACES),
        "food": rng.choice(FOODS),
        "time": rng.choice(TIMES),
        "rel": rng.choice(RELS),
    }


def sentence_pool(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen[rng.choice(TEMPLATES).format(**_slots(rng))] = None
    return list(seen)


def distinct_questions() -> int:
    """How many distinct questions the templates can make."""
    lists = {"act": ACTS, "name": NAMES, "place": PLACES, "food": FOODS, "time": TIMES, "rel": RELS}
    total = 0
    for q in QUESTIONS:
        fields = {f for _, f, _, _ in string.Formatter().parse(q) if f}
        total += math.prod(len(lists[f]) for f in fields)
    return total


def questions(n: int, seed: int) -> list[str]:
    if n > distinct_questions():  # drawing for distinct ones would never end
        raise ValueError(
            f"{n} distinct questions asked for, the templates make {distinct_questions()}: "
            "lower --queries (a run asks 5 x queries + 2 x sampled users)"
        )
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen[rng.choice(QUESTIONS).format(**_slots(rng))] = None
    return list(seen)


class TableEmbedder:
    """The local model, answering from a table of vectors it computed earlier when it can."""

    def __init__(self, model: LocalEmbedder, table: dict[str, np.ndarray]) -> None:
        self.model = model
        self.table = table
        self.model_id = model.model_id
        self.dimensions = model.dimensions

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if t not in self.table]
        if missing:
            for t, v in zip(missing, self.model.embed_batch(missing)):
                self.table[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q)) if xs else float("nan")


def _du(path: Path, *, apparent: bool = False) -> int:
    files = [f.stat() for f in path.rglob("*") if f.is_file()]
    return sum(st.st_size if apparent else st.st_blocks * 512 for st in files)


def build(
    path: Path,
    engine: str,
    size: int,
    pool: list[str],
    embedder: TableEmbedder,
    seed: int,
    n_users: int = USERS,
) -> tuple[float, list[str]]:
    """Fill a store with ``size`` facts over ``n_users`` users; returns (seconds, user ids)."""
    rng = random.Random(seed)
    per_user = size // n_users
    users = [f"user{u:04d}" for u in range(n_users)]
    m = Memory(config=MemoryConfig(path=str(path), engine=engine), embedder=embedder)
    t0 = time.perf_counter()
    with tqdm(total=size, desc=f"build {engine} {size:,}", unit="fact", leave=False) as bar:
        for user in users:
            texts = rng.sample(pool, per_user)
            for i in range(0, per_user, BATCH):
                turns = [{"role": "user", "content": t} for t in texts[i : i + BATCH]]
                m.add(turns, user_id=user, infer=False)
                bar.update(len(turns))
    took = time.perf_counter() - t0
    m.close()
    return took, users


def floor_query(
    m: Memory, engine: str, vec: Any, user: str, *, payload: bool = True, limit: int | None = None
) -> None:
    """The engine's own filtered dense query for ``limit`` points (default ``candidate_pool``,
    the pool of a search for 5), as the pipeline's first stage would ask it: with their
    payloads (as it did before the payload cache), or ids and scores only (as it does now)."""
    limit = m.config.candidate_pool if limit is None else limit
    from qdrant_client import models

    flt = scope_filter(Scope.of(user, "default", None, None))
    client = m.store.client
    if engine == "edge":
        import qdrant_edge as qe

        from mem_pipeline.store._edge_types import qe_filter as _filter

        shard = client._shards[m.store.facts]  # type: ignore[union-attr]
        shard.query(
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest([float(x) for x in vec], using="dense"),
                filter=_filter(flt),
                with_payload=payload,
            )
        )
    else:
        client.query_points(  # type: ignore[union-attr]
            m.store.facts,
            query=[float(x) for x in vec],
            using="dense",
            query_filter=models.Filter(must=flt.must),
            limit=limit,
            with_payload=payload,
        )


def _floor(m: Memory, engine: str, model: LocalEmbedder, q: str, user: str) -> None:
    """The floor of one search: the query embedded by the model (no cache) and the engine's
    filtered dense query for ids and scores."""
    floor_query(m, engine, model.embed_batch([q])[0], user, payload=False)


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def measure_recall(
    path: Path, engine: str, users: list[str], model: LocalEmbedder, n: int, seed: int
) -> dict[str, Any]:
    """Recall latency in a process that has just opened the store. **Cold vs warm**: for a
    sample of users (at most ``n``), each user's first recall after the open (nothing of the
    user read yet: caches empty) and then, after every sampled user had one, a second recall
    of each with another question; the ratio is of the medians, and the median of the paired
    per-user ratios. **Steady**: ``n`` recalls of random sampled users, links on and off.
    **Floors**: the query's embedding + the engine's filtered dense query, with payloads and
    ids only, timed after the searches; and the ids-only floor of each links-on search's own
    question and user, alternated with it (``floor_ids_only_alternated``: a ratio that holds
    when the machine's speed drifts during the run)."""
    rng = random.Random(seed)
    sample = rng.sample(users, min(n, len(users)))
    qs = questions(5 * n + 2 * len(sample), seed)
    out: dict[str, Any] = {"sampled_users": len(sample)}
    for label, cfg in (
        ("links_on", {"expand_links": True}),
        ("links_off", {"expand_links": False, "concept_boost": 0.0}),
    ):
        m = Memory(config=MemoryConfig(path=str(path), engine=engine, **cfg), embedder=model)
        search = m.search
        if label == "links_on":
            first = [_timed(lambda u=u, q=q, s=search: s(q, user_id=u)) for u, q in zip(sample, qs[5 * n :])]
            second = [
                _timed(lambda u=u, q=q, s=search: s(q, user_id=u))
                for u, q in zip(sample, qs[5 * n + len(sample) :])
            ]
            out["cold_first_recall"] = {"p50_ms": _pct(first, 50), "p95_ms": _pct(first, 95)}
            out["warm_second_recall"] = {"p50_ms": _pct(second, 50), "p95_ms": _pct(second, 95)}
            out["cold_over_warm"] = _pct(first, 50) / _pct(second, 50)
            out["cold_over_warm_paired_median"] = float(np.median(np.array(first) / np.array(second)))
        batch = qs[:n] if label == "links_on" else qs[n : 2 * n]
        times: list[float] = []
        alternated: list[float] = []  # links on: the ids-only floor of the same question and user
        for i, q in enumerate(tqdm(batch, desc=f"recall {engine} {label}", leave=False)):
            user = rng.choice(sample)
            if label == "links_on" and i % 2:  # the floor first on odd questions, last on even
                alternated.append(_timed(lambda q=q, u=user, mm=m: _floor(mm, engine, model, q, u)))
            times.append(_timed(lambda q=q, u=user, s=search: s(q, user_id=u, limit=5)))
            if label == "links_on" and not i % 2:
                alternated.append(_timed(lambda q=q, u=user, mm=m: _floor(mm, engine, model, q, u)))
        out[label] = {"p50_ms": _pct(times, 50), "p95_ms": _pct(times, 95)}
        if alternated:
            out["floor_ids_only_alternated"] = {
                "p50_ms": _pct(alternated, 50),
                "p95_ms": _pct(alternated, 95),
            }
            out["overhead_links_on_alternated"] = _pct(times, 50) / _pct(alternated, 50)
            out["overhead_links_on_alternated_paired_median"] = float(
                np.median(np.array(times) / np.array(alternated))
            )
        if label == "links_off":  # the floors, on the same open store
            for key, payload, start in (("floor", True, 2 * n), ("floor_ids_only", False, 3 * n)):
                ftimes, etimes = [], []
                for q in qs[start : start + n]:
                    user = rng.choice(sample)
                    t = time.perf_counter()
                    vec = model.embed_batch([q])[0]
                    t1 = time.perf_counter()
                    floor_query(m, engine, vec, user, payload=payload)
                    ftimes.append((time.perf_counter() - t) * 1000)
                    etimes.append((t1 - t) * 1000)
                out[key] = {"p50_ms": _pct(ftimes, 50), "p95_ms": _pct(ftimes, 95)}
                out["embed_p50_ms"] = _pct(etimes, 50)
        m.close()
    for key in ("floor", "floor_ids_only"):
        suffix = "" if key == "floor" else "_ids_only"
        out[f"overhead_links_on{suffix}"] = out["links_on"]["p50_ms"] / out[key]["p50_ms"]
        out[f"overhead_links_off{suffix}"] = out["links_off"]["p50_ms"] / out[key]["p50_ms"]
    return out


def _in_child(func: str, *args: Any) -> dict[str, Any]:
    """Run ``func(*args)`` of this module in a fresh process (a service opening the store, not
    the process that built it and still holds its garbage); returns its JSON result."""
    code = (
        "import json, sys\n"
        "from eval import bench\n"
        "from mem_pipeline import LocalEmbedder\n"
        "path, engine, users, n, seed = json.loads(sys.argv[1])\n"
        f"out = bench.{func}(bench.Path(path), engine, users, LocalEmbedder(), n, seed)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    if done.returncode != 0:
        raise RuntimeError(f"{func} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure_add(
    path: Path, engine: str, users: list[str], model: LocalEmbedder, n: int, seed: int, pool: set[str]
) -> dict[str, float]:
    """Turns per second of new raw turns added in batches of 50, embedding included, and the
    floor: the model embedding the same turns in the same batches, nothing else. Two workloads:
    sentences the store has never seen, made from the same vocabulary (most of their concepts
    are known to the user), and the same with a tag that makes every turn name a new concept
    (each new concept's name is embedded too: the worst case)."""
    rng = random.Random(seed)
    fresh = [x for x in sentence_pool(n + len(pool), seed=seed + 1) if x not in pool][:n]
    workloads = {
        "add_turns_per_s": fresh,
        "add_new_concept_turns_per_s": [f"{x} (tag t{i})" for i, x in enumerate(fresh)],
    }
    out: dict[str, float] = {}
    for key, turns in workloads.items():
        m = Memory(config=MemoryConfig(path=str(path), engine=engine), embedder=model)
        t = time.perf_counter()
        for i in range(0, len(turns), BATCH):
            m.add(
                [{"role": "user", "content": x} for x in turns[i : i + BATCH]],
                user_id=rng.choice(users),
                infer=False,
            )
        out[key] = len(turns) / (time.perf_counter() - t)
        m.close()
    t = time.perf_counter()
    for i in range(0, len(fresh), BATCH):
        model.embed_batch(fresh[i : i + BATCH])
    out["add_floor_turns_per_s"] = len(fresh) / (time.perf_counter() - t)
    return out


_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
    def rss():
        out = {}
        for line in open("/proc/self/status"):
            key = line.split(":")[0]
            if key in ("RssAnon", "RssFile"):
                out[key] = int(line.split()[1])
        return out
    path, engine = sys.argv[1], sys.argv[2]
    users = json.loads(sys.argv[3])
    queries = int(sys.argv[4])
    model = LocalEmbedder()
    model.embed_batch(["warm"])
    before = rss()
    t = time.perf_counter()
    m = Memory(config=MemoryConfig(path=path, engine=engine),
               embedder=model)
    opened = time.perf_counter() - t
    at_open = rss()
    for i in range(queries):  # users in turn: as many distinct users as there are queries
        m.search(f"what did I do in Porto {i}", user_id=users[i % len(users)])
    after = rss()
    m.close()
    print(json.dumps({"reopen_s": opened,
                      "rss_open_mb": (at_open["RssAnon"] - before["RssAnon"]) / 1024,
                      "rss_mb": (after["RssAnon"] - before["RssAnon"]) / 1024,
                      "rss_file_mb": (after["RssFile"] - before["RssFile"]) / 1024}))
    """
)


def measure_reopen(path: Path, engine: str, users: list[str], queries: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), engine, json.dumps(users), str(queries)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    model = LocalEmbedder()
    biggest = max([*args.sizes, *args.local_sizes])
    pool = sentence_pool(max(args.pool, (args.per_user or biggest // USERS) + 1))
    t = time.perf_counter()
    table: dict[str, np.ndarray] = {}
    for i in tqdm(range(0, len(pool), 256), desc=f"embed pool of {len(pool):,}", leave=False):
        chunk = pool[i : i + 256]
        for s, v in zip(chunk, model.embed_batch(chunk)):
            table[s] = np.asarray(v, dtype=np.float32)
    pool_s = time.perf_counter() - t
    embedder = TableEmbedder(model, table)
    root = Path(args.dir or tempfile.mkdtemp(prefix="mem_pipeline_bench_"))
    results: list[dict[str, Any]] = []
    plan = [("edge", s) for s in args.sizes] + [("local", s) for s in args.local_sizes]
    for engine, size in plan:
        runs = []
        n_users = size // args.per_user if args.per_user else USERS
        for r in range(args.repeat):
            path = root / f"{engine}_{size}_{n_users}u_{r}"
            marker = path / "bench_build.json"
            if args.reuse and marker.exists():  # built by an earlier run: measured again
                built = json.loads(marker.read_text())
                build_s, users = float(built["build_s"]), list(built["users"])
            else:
                shutil.rmtree(path, ignore_errors=True)
                build_s, users = build(path, engine, size, pool, embedder, seed=r, n_users=n_users)
                marker.write_text(json.dumps({"build_s": build_s, "users": users}))
            compact_s = 0.0
            if args.compact:  # Memory.compact: the store's segments moved to mapped files
                with Memory(config=MemoryConfig(path=str(path), engine=engine), embedder=embedder) as m:
                    t = time.perf_counter()
                    m.compact()
                    compact_s = time.perf_counter() - t
                print(f"compacted {engine} {size:,} in {compact_s:.1f} s", flush=True)
            row: dict[str, Any] = {
                "build_s": build_s,
                "compact_s": compact_s,
                "build_facts_per_s": size / build_s,
                **_in_child("measure_recall", str(path), engine, users, args.queries, 100 + r),
                **measure_reopen(path, engine, random.Random(r).sample(users, len(users)), args.rss_queries),
                "disk_mb": _du(path) / 2**20,
                "disk_apparent_mb": _du(path, apparent=True) / 2**20,
            }
            row.update(measure_add(path, engine, users, model, args.add_turns, 200 + r, set(pool)))
            runs.append(row)
            if not args.keep:
                shutil.rmtree(path, ignore_errors=True)
        row = {"engine": engine, "facts": size, "users": n_users, **_median(runs), "runs": len(runs)}
        results.append(row)
        _print_row(results[-1])
    if not args.dir and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "pool_sentences": len(pool),
        "pool_embed_s": pool_s,
        "queries_per_setting": args.queries,
        "rss_note": f"rss_mb: private (anonymous) resident memory a child gains by opening the "
        f"store and running {args.rss_queries} recalls, one user after another (rss_open_mb: by "
        "opening it); rss_file_mb: file pages it maps meanwhile (page cache: WAL, segments; "
        "shared and reclaimable)",
        "disk_note": "disk_mb: blocks allocated; disk_apparent_mb: file sizes (WAL files are 32 MiB)",
        "results": results,
        "python_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, dict):
            out[k] = _median([r[k] for r in runs])
        else:
            out[k] = statistics.median(float(r[k]) for r in runs)
    return out


_HEADER = (
    f"{'engine':6} {'facts':>8} {'users':>6} | {'recall p50/p95 ms':>18} {'links off':>13} | "
    f"{'cold/warm p50 ms':>17} | {'floor p50 (ids)':>15} {'overhead':>8} | {'add t/s':>7} "
    f"{'build s':>8} | {'RSS MB':>6} {'+file':>6} {'disk MB':>7} {'reopen s':>8}"
)


def _print_row(r: dict[str, Any]) -> None:
    if not getattr(_print_row, "done", False):
        print(_HEADER)
        print("-" * len(_HEADER))
        _print_row.done = True  # type: ignore[attr-defined]
    on, off = r["links_on"], r["links_off"]
    cold, warm = r["cold_first_recall"]["p50_ms"], r["warm_second_recall"]["p50_ms"]
    print(
        f"{r['engine']:6} {int(r['facts']):>8,} {int(r['users']):>6,} | {on['p50_ms']:>8.1f} / "
        f"{on['p95_ms']:>6.1f}  {off['p50_ms']:>5.1f} / {off['p95_ms']:>5.1f} | "
        f"{cold:>7.1f} / {warm:>7.1f} | "
        f"{r['floor']['p50_ms']:>6.1f} ({r['floor_ids_only']['p50_ms']:>5.1f}) "
        f"{r['overhead_links_on_ids_only']:>7.2f}x | {r['add_turns_per_s']:>7.0f} "
        f"{r['build_s']:>8.0f} | "
        f"{r['rss_mb']:>6.0f} {r['rss_file_mb']:>6.0f} {r['disk_mb']:>7.1f} {r['reopen_s']:>8.2f}",
        flush=True,
    )
    if "overhead_links_on_alternated" in r:
        print(
            f"  links on / the ids-only floor alternated with each search: "
            f"{r['overhead_links_on_alternated']:.2f}x (median of the per-search ratios "
            f"{r['overhead_links_on_alternated_paired_median']:.2f}x)",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000], help="edge store sizes")
    ap.add_argument("--local-sizes", type=int, nargs="*", default=[1000], help="local-mode sizes")
    ap.add_argument("--queries", type=int, default=100, help="queries per setting (at most 128)")
    ap.add_argument("--add-turns", type=int, default=500, help="turns for the add throughput")
    ap.add_argument("--pool", type=int, default=20000, help="distinct sentences")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; the median is reported")
    ap.add_argument("--dir", help="where to build the stores (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the stores")
    ap.add_argument("--per-user", type=int, help="facts per user (users = size / this; default: 100 users)")
    ap.add_argument("--rss-queries", type=int, default=500, help="recalls of the memory/reopen child")
    ap.add_argument("--reuse", action="store_true", help="measure stores --dir already holds again")
    ap.add_argument(
        "--compact", action="store_true", help="compact each store (Memory.compact) before measuring it"
    )
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    if 7 * args.queries > distinct_questions():  # 5 x queries + 2 x (at most queries) users
        ap.error(
            f"--queries {args.queries}: a run asks 7 x that many distinct questions, the templates make "
            f"{distinct_questions()}"
        )
    out = run(args)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
