"""mem0ai 2.2.1 and mem_pipeline side by side on LoCoMo: evidence recall@k and latency, one process.

    pip install -e ".[compare]"            # mem0ai==2.2.1; never a dependency of mem_pipeline
    python -m eval.compare_mem0 ../shared/data/locomo/locomo_dev.json --json out.json
    python -m eval.compare_mem0 PATH --conversations conv-26 --questions 20   # a quick look

Method. Both systems run in this process on the same LoCoMo conversations (default conv-26,
conv-30, conv-41; categories 1-4), with the SAME embedder object: mem_pipeline's
:class:`~mem_pipeline.LocalEmbedder` (all-MiniLM-L6-v2, int8 ONNX, 384 dimensions, L2
normalised), which mem0 gets through a small adapter (:func:`mem0_embedder`). Each system has
its own store on disk in a fresh temporary directory (``--workdir`` keeps them):

- mem0: ``mem0.Memory`` with the ``qdrant`` vector store at ``path=`` (qdrant-client's embedded
  local mode, ``on_disk=True``) and its SQLite history beside it; telemetry off
  (``MEM0_TELEMETRY=False``) and its home (``MEM0_DIR``) inside the work directory. mem0 has no
  "custom" embedder provider, so it is built with the ``openai`` one pointed at an unreachable
  local address and that object is then replaced by the adapter; the LLM is configured the same
  way and never called (``infer=False``). Search is semantic only: mem0's BM25 (fastembed) and
  entity boosts (spaCy) need model downloads, are not installed, and the run checks that both
  are off. mem0 is searched with ``threshold=0.0``; its default threshold (0.1, applied to the
  semantic score before ranking) is then applied to the same results, so both the default and
  the unthresholded recall come from one call.
- mem_pipeline: ``Memory(config=MemoryConfig(path=DIR), embedder=...)`` with its defaults (edge
  engine). Searches pass ``now`` = the day after the conversation's last session and
  ``reinforce=False``, as ``eval.locomo`` does: the result does not depend on the day the run
  is made, and a search writes nothing (mem0's search does not write either), so question order
  cannot change the results.

Each turn goes in with one ``add`` call per system, as a chatbot adds it (raw turn,
``infer=False``, the speaker as the message's ``name``, metadata ``session``, ``dia_id``,
``speaker``; mem_pipeline also gets the session date as ``timestamp``, which mem0's open-source
``add`` rejects). mem0 keeps a message's ``name`` as ``actor_id`` and embeds the content alone;
``--mem0-speaker-in-text`` gives it "Speaker: text" instead (mem_pipeline's input unchanged), to
see how much of mem0's recall depends on that. Each call is timed whole, embedding included.
What our add leaves to its write-behind (the turn's dense vector, concept counts, links,
history, and the name vectors of concepts that became due; ``mem_pipeline.links``) is done
right after it (``ConceptLinks.settle``), timed apart and reported both apart and added to the
add, so that none of it runs during mem0's timed calls (``--overlap`` lets the background
thread do it instead, beside the next calls). Name vectors are computed in batches, so the
mean of the add and its work says what an add costs in all; its p50 does not.
Then every question is asked of both, the order alternating (question i: mem0 then
mem_pipeline, question i+1: the other way round; turns alternate the same way), each search
timed whole including the query embedding; 20 hits each. Both are warmed up first (a few
synthetic turns and searches under a user id of their own). Recall is ``eval.retrieval``'s: a
question counts at k when any of its gold evidence turns (LoCoMo's ids normalised) is among the
top k hits.

One run each (2 cores, shared), ``eval/results/compare_mem0.json`` and
``compare_mem0_speaker_in_text.json``: mem0 R@5/R@10/R@20 .171/.270/.390 given the turn text
(its ranking equals a brute-force cosine over the same vectors: the questions name a speaker and
turns that only address that person rank first), .452/.566/.665 given "Speaker: text";
mem_pipeline .839/.901/.935 in both. mem0's default threshold dropped nothing from the top 20.

The machine is shared and its timings swing; compare the two systems by the ratios of one run,
not by absolute times across runs. The LoCoMo file is read by path and nothing of it is copied
into the repository (CC BY-NC).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.bench import floor_query
from eval.retrieval import CATEGORY_NAMES, Conversation, Question, Scores, Turn, _pct, load, timed
from mem_pipeline import LocalEmbedder, Memory, MemoryConfig

DEFAULT_CONVERSATIONS = ("conv-26", "conv-30", "conv-41")
KS = (5, 10, 20)
LIMIT = 20  # hits asked of each system (--limit); recall@k is reported for k up to it
MEM0_VERSION = "2.2.1"
MEM0_DEFAULT_THRESHOLD = 0.1  # mem0.Memory.search(threshold=0.1): semantic score below it is dropped
MISSING_MEM0 = (
    f"mem0ai is not installed: pip install -e '.[compare]' (mem0ai=={MEM0_VERSION}), then run this again"
)
# the adapter's openai client must never be used; if it were, it would fail here at once
_NOWHERE = "http://127.0.0.1:9/v1"
_WARM_UP_USER = "warm-up"
_WARM_UP_TURNS = (
    "I moved to a new flat near the river last spring.",
    "We adopted a dog called Biscuit; he loves long walks.",
    "My sister is starting a pottery class next week.",
)
_WARM_UP_QUERIES = ("Where did they move?", "What is the dog's name?", "Who takes a pottery class?")


# --- pure helpers (tested without mem0) -------------------------------------------------------


def first_order(i: int) -> tuple[str, str]:
    """Which system goes first for the i-th turn or question: mem0 on even i, ours on odd i."""
    return ("mem0", "ours") if i % 2 == 0 else ("ours", "mem0")


def mem0_ranked(results: Sequence[Mapping[str, Any]], threshold: float = 0.0) -> list[str]:
    """The ``dia_id`` of each of mem0's search results, best first, dropping those whose score is
    below ``threshold`` (semantic only, a result's score is its cosine)."""
    return [
        str((r.get("metadata") or {}).get("dia_id", ""))
        for r in results
        if float(r.get("score") or 0.0) >= threshold
    ]


def latency(ms: Sequence[float]) -> dict[str, float | int | None]:
    """p50, p95 and mean of timings in ms (eval.retrieval's percentile), and how many."""
    s = sorted(ms)
    if not s:
        return {"p50": None, "p95": None, "mean": None, "n": 0}
    return {
        "p50": round(_pct(s, 50), 2),
        "p95": round(_pct(s, 95), 2),
        "mean": round(sum(s) / len(s), 2),
        "n": len(s),
    }


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """ours / mem0, rounded; None when either is missing or mem0's is zero."""
    if ours is None or theirs is None or theirs == 0:
        return None
    return round(ours / theirs, 3)


def ratios(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, float | None]:
    """ours / mem0 for each recall@k and each timing of two :func:`system_summary` blocks."""
    out = {k: ratio(ours["recall"].get(k), theirs["recall"].get(k)) for k in theirs["recall"]}
    out["search_p50"] = ratio(ours["search_ms"]["p50"], theirs["search_ms"]["p50"])
    out["search_p95"] = ratio(ours["search_ms"]["p95"], theirs["search_ms"]["p95"])
    out["add_p50"] = ratio(ours["add_ms"]["p50"], theirs["add_ms"]["p50"])
    return out


def _paired_median(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The median of a[i] / b[i] (the same question)."""
    r = sorted(x / y for x, y in zip(a, b) if y > 0)
    return round(r[len(r) // 2], 3) if r else None


def system_summary(scores: Scores, search_ms: Sequence[float], add_ms: Sequence[float]) -> dict[str, Any]:
    """Recall (overall, by category, by conversation) and the timings of one system."""
    s = scores.summary()
    return {
        "recall": s["recall"],
        "mrr": s["mrr"],
        "by_category": s["by_category"],
        "by_conversation": s["by_conversation"],
        "questions": s["questions"],
        "search_ms": latency(search_ms),
        "add_ms": latency(add_ms),
    }


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "—" if x is None else format(x, fmt)


def table(out: Mapping[str, Any]) -> str:
    """The Markdown tables of a run: the systems and their ratios, then R@10 by category."""
    ours, theirs, raw = out["systems"]["ours"], out["systems"]["mem0"], out["systems"]["mem0_no_threshold"]
    ks = list(theirs["recall"])
    head = "| system | " + " | ".join(ks) + " | search p50 ms | search p95 ms | add p50 ms/turn |"
    lines = [head, "|---|" + "---|" * (len(ks) + 3)]

    def row(name: str, blk: Mapping[str, Any], times: bool = True) -> str:
        cells = [_f(blk["recall"].get(k)) for k in ks]
        if times:
            cells += [
                _f(blk["search_ms"]["p50"], ".1f"),
                _f(blk["search_ms"]["p95"], ".1f"),
                _f(blk["add_ms"]["p50"], ".1f"),
            ]
        else:
            cells += ["(same calls)"] * 3
        return f"| {name} | " + " | ".join(cells) + " |"

    v = out.get("versions", {})
    given = ", given 'Speaker: text'" if out.get("mem0_speaker_in_text") else ""
    lines.append(
        row(f"mem0ai {v.get('mem0ai', '')} (default threshold {MEM0_DEFAULT_THRESHOLD}{given})", theirs)
    )
    lines.append(row("mem0ai, threshold 0", raw, times=False))
    lines.append(row("mem_pipeline", ours))
    r = out["ratios"]
    lines.append(
        "| **ours / mem0** | "
        + " | ".join(f"**{_f(r.get(k), '.2f')}**" for k in ks)
        + f" | **{_f(r['search_p50'], '.2f')}** | **{_f(r['search_p95'], '.2f')}**"
        + f" | **{_f(r['add_p50'], '.2f')}** |"
    )
    whole = ours.get("add_with_deferred_ms")
    if whole:
        lines += [
            "",
            f"What each of our adds left to the write-behind, written at once after it and "
            f"timed apart: p50 {_f(ours['deferred_ms']['p50'], '.1f')} ms; the add and that work, "
            f"p50 {_f(whole['p50'], '.1f')} ms: **{_f(r.get('add_with_deferred_p50'), '.2f')}** of "
            f"mem0's add; mean {_f(whole['mean'], '.1f')} ms against mem0's "
            f"{_f(theirs['add_ms']['mean'], '.1f')}: **{_f(r.get('add_with_deferred_mean'), '.2f')}** "
            "(the mean bills the batches of concept name vectors, which a p50 does not see).",
        ]
    f = out.get("floor")
    if f:
        lines += [
            "",
            f"Floor (the question's embedding + the engine's filtered dense query): search p50 "
            f"{_f(f['search_ms']['p50'], '.1f')} ms, p95 {_f(f['search_ms']['p95'], '.1f')} ms; "
            f"mem_pipeline's search p50 / the floor's: **{_f(f['ours_over_floor_p50'], '.2f')}** "
            f"(median of the per-question ratios: {_f(f['ours_over_floor_paired_median'], '.2f')})",
        ]
    lines += ["", "| category | n | mem0 R@10 | mem_pipeline R@10 |", "|---|---|---|---|"]
    for cat, blk in ours["by_category"].items():
        name = CATEGORY_NAMES.get(int(cat), cat)
        lines.append(
            f"| {cat} {name} | {blk['n']} | {_f(theirs['by_category'][cat].get('R@10'))} | "
            f"{_f(blk.get('R@10'))} |"
        )
    c = out["counts"]
    lines += [
        "",
        f"{c['turns']} turns, {c['questions']} questions, conversations "
        f"{', '.join(out['conversations'])}; {out['elapsed_s']:.0f} s. Ratios above 1 mean "
        "more recall or more time for mem_pipeline.",
    ]
    return "\n".join(lines)


# --- the two systems --------------------------------------------------------------------------


def import_mem0(home: Path) -> Any:
    """Import mem0 offline (telemetry off, its home under ``home``); exit with one line if absent."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    try:
        import mem0
    except ImportError:
        sys.exit(MISSING_MEM0)
    if mem0.__version__ != MEM0_VERSION:
        print(
            f"note: mem0ai {mem0.__version__} installed, this comparison was written for {MEM0_VERSION}",
            file=sys.stderr,
        )
    return mem0


def mem0_content(turn: Turn) -> str:
    """A turn as ``--mem0-speaker-in-text`` gives it to mem0: the speaker's name, then the text."""
    return f"{turn.speaker}: {turn.text}"


def mem0_embedder(embedder: LocalEmbedder) -> Any:
    """``embedder`` as a mem0 embedding model (``mem0.embeddings.base.EmbeddingBase``)."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class SharedEmbedder(EmbeddingBase):  # type: ignore[misc]
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            vec: list[float] = embedder.embed_batch([text])[0].tolist()
            return vec

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            rows: list[list[float]] = embedder.embed_batch(texts).tolist()
            return rows

    return SharedEmbedder(BaseEmbedderConfig(model=embedder.model_id, embedding_dims=embedder.dimensions))


def build_mem0(root: Path, embedder: LocalEmbedder) -> Any:
    from mem0 import Memory as Mem0Memory

    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "mem0",
                "embedding_model_dims": embedder.dimensions,
                "path": str(root / "qdrant"),
                "on_disk": True,
            },
        },
        # required by mem0's constructor; replaced (embedder) or never called (LLM, infer=False)
        "embedder": {
            "provider": "openai",
            "config": {
                "api_key": "unused",
                "openai_base_url": _NOWHERE,
                "embedding_dims": embedder.dimensions,
            },
        },
        "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": _NOWHERE}},
        "history_db_path": str(root / "history.db"),
    }
    mem = Mem0Memory.from_config(config)
    mem.embedding_model = mem0_embedder(embedder)
    return mem


def mem0_semantic_only(mem: Any) -> bool:
    """True when mem0 runs without BM25 and without entity boosts (what this comparison measures)."""
    from mem0.utils.entity_extraction import extract_entities

    keyword = mem.vector_store.keyword_search("walk the dog", top_k=1, filters={"user_id": _WARM_UP_USER})
    return keyword is None and not extract_entities("Caroline went to Paris with Melanie.")


class Systems:
    """The two memories, each call timed whole; turn and question metadata as both store it."""

    def __init__(
        self,
        ours: Memory,
        theirs: Any,
        *,
        mem0_speaker_in_text: bool = False,
        settle: bool = False,
        limit: int = LIMIT,
    ) -> None:
        self.ours, self.theirs = ours, theirs
        self.mem0_speaker_in_text = mem0_speaker_in_text
        self.settle = settle
        self.limit = limit
        #: with ``settle``: each of our adds' write-behind work, written at once and timed apart
        self.deferred_ms: list[float] = []

    def add(self, system: str, user: str, turn: Turn) -> float:
        msg = [{"role": "user", "content": turn.text, "name": turn.speaker}]
        meta = {"session": turn.session, "dia_id": turn.dia_id, "speaker": turn.speaker}
        if system == "mem0":
            if self.mem0_speaker_in_text:
                msg = [{**msg[0], "content": mem0_content(turn)}]
            _, ms = timed(lambda: self.theirs.add(msg, user_id=user, infer=False, metadata=meta))
        else:
            _, ms = timed(
                lambda: self.ours.add(msg, user_id=user, infer=False, metadata=meta, timestamp=turn.when)
            )
            if self.settle:  # what our add left to the write-behind, written now and timed apart
                self.deferred_ms.append(timed(self.ours.parts.links.settle)[1])
        return ms

    def search(self, system: str, conv: Conversation, question: str) -> tuple[Any, float]:
        if system == "mem0":
            return timed(
                lambda: self.theirs.search(
                    question, top_k=self.limit, filters={"user_id": conv.sample_id}, threshold=0.0
                )["results"]
            )
        now = conv.last_time + timedelta(days=1)
        return timed(
            lambda: self.ours.search(
                question, user_id=conv.sample_id, limit=self.limit, now=now, reinforce=False
            )
        )

    def floor(self, conv: Conversation, question: str, pool: int) -> float:
        """The floor of our search, timed whole: the question's embedding (the model itself, no
        cache) and the engine's filtered dense query for ``pool`` ids and scores, nothing else."""
        embedder = self.ours.parts.embed.embedder
        engine = self.ours.store.engine

        def once() -> None:
            vec = embedder.embed_batch([question])[0]
            floor_query(self.ours, engine, vec, conv.sample_id, payload=False, limit=pool)

        return timed(once)[1]

    def warm_up(self) -> None:
        from datetime import datetime, timezone

        when = datetime(2023, 1, 1, tzinfo=timezone.utc)
        warm = Conversation(
            _WARM_UP_USER,
            ("A", "B"),
            [
                Turn(f"D1:{i + 1}", "A", text, 1, when + timedelta(seconds=i))
                for i, text in enumerate(_WARM_UP_TURNS)
            ],
            [],
        )
        for i, turn in enumerate(warm.turns):
            for system in first_order(i):
                self.add(system, _WARM_UP_USER, turn)
        for i, q in enumerate(_WARM_UP_QUERIES):
            for system in first_order(i):
                self.search(system, warm, q)


# --- the run ----------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    repo = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def disk_usage(path: Path) -> dict[str, int]:
    """Bytes under ``path``: the files' sizes and what is allocated for them (sparse files differ)."""
    files = [p.stat() for p in path.rglob("*") if p.is_file()]
    return {
        "apparent": sum(st.st_size for st in files),
        "allocated": sum(getattr(st, "st_blocks", 0) * 512 for st in files),
    }


def run(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    started = time.perf_counter()
    commit = _git_commit()  # now: the repository may change while a long run goes on
    wanted = list(dict.fromkeys(args.conversations))
    convs = {c.sample_id: c for c in load(args.path, wanted)}
    missing = [c for c in wanted if c not in convs]
    if missing:
        sys.exit(f"conversations not in {args.path}: {', '.join(missing)}")
    conversations = [convs[c] for c in wanted]
    questions: dict[str, list[Question]] = {
        c.sample_id: c.questions[: args.questions or None] for c in conversations
    }
    n_turns = sum(len(c.turns) for c in conversations)
    n_q = sum(len(q) for q in questions.values())

    with ExitStack() as stack:
        if args.workdir:
            root = Path(args.workdir)
            if root.exists() and any(root.iterdir()):
                sys.exit(f"--workdir {root} is not empty: the stores must start empty")
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="compare_mem0_")))
        import_mem0(root / "mem0_home")
        embedder = LocalEmbedder()
        theirs = build_mem0(root / "mem0", embedder)
        ours = Memory(config=MemoryConfig(path=str(root / "mem_pipeline")), embedder=embedder)
        systems = Systems(
            ours,
            theirs,
            mem0_speaker_in_text=args.mem0_speaker_in_text,
            settle=not args.overlap,
            limit=args.limit,
        )
        systems.warm_up()
        systems.deferred_ms.clear()
        if not mem0_semantic_only(theirs):
            sys.exit(
                "mem0 has BM25 or entity extraction on (fastembed or spaCy installed): this "
                "comparison runs it semantic only; use a venv without them"
            )

        add_ms: dict[str, list[float]] = {"mem0": [], "ours": []}
        search_ms: dict[str, list[float]] = {"mem0": [], "ours": [], "floor": []}
        # what our search asks of each signal
        pool = max(ours.config.pool_per_hit * args.limit, ours.config.candidate_pool)
        ks = [k for k in KS if k <= args.limit] or [args.limit]
        scores = {"mem0": Scores(ks), "mem0_no_threshold": Scores(ks), "ours": Scores(ks)}
        with tqdm(
            total=n_turns + n_q, desc="compare_mem0", unit="op", file=sys.stderr, disable=args.quiet
        ) as bar:
            i = 0
            for conv in conversations:
                for turn in conv.turns:
                    for system in first_order(i):
                        add_ms[system].append(systems.add(system, conv.sample_id, turn))
                    i += 1
                    bar.update()
            i = 0
            for conv in conversations:
                for q in questions[conv.sample_id]:
                    order: list[str] = list(first_order(i))
                    order.insert(i % 3, "floor")  # the floor takes each place in turn
                    for system in order:
                        if system == "floor":
                            search_ms["floor"].append(systems.floor(conv, q.question, pool))
                            continue
                        found, ms = systems.search(system, conv, q.question)
                        search_ms[system].append(ms)
                        if system == "mem0":
                            scores["mem0"].add(
                                q, mem0_ranked(found, MEM0_DEFAULT_THRESHOLD), ms, conv.sample_id
                            )
                            scores["mem0_no_threshold"].add(q, mem0_ranked(found), ms, conv.sample_id)
                        else:
                            scores["ours"].add(
                                q, [h.metadata["dia_id"] for h in found.hits], ms, conv.sample_id
                            )
                    i += 1
                    bar.update()
        engine = ours.store.engine
        ours.close()
        theirs.close()
        disk = {"mem0": disk_usage(root / "mem0"), "ours": disk_usage(root / "mem_pipeline")}

    systems_out = {
        "mem0": system_summary(scores["mem0"], search_ms["mem0"], add_ms["mem0"]),
        "mem0_no_threshold": system_summary(scores["mem0_no_threshold"], search_ms["mem0"], add_ms["mem0"]),
        "ours": system_summary(scores["ours"], search_ms["ours"], add_ms["ours"]),
    }
    for name, key in (("mem0", "mem0"), ("mem0_no_threshold", "mem0"), ("ours", "ours")):
        systems_out[name]["disk_bytes"] = disk[key]
    cost = ratios(systems_out["ours"], systems_out["mem0"])
    if systems.deferred_ms:  # the write-behind's share of each add, timed apart
        whole = [a + d for a, d in zip(add_ms["ours"], systems.deferred_ms)]
        systems_out["ours"]["deferred_ms"] = latency(systems.deferred_ms)
        systems_out["ours"]["add_with_deferred_ms"] = latency(whole)
        cost["add_with_deferred_p50"] = ratio(
            latency(whole)["p50"], systems_out["mem0"]["add_ms"]["p50"]
        )
        cost["add_with_deferred_mean"] = ratio(
            latency(whole)["mean"], systems_out["mem0"]["add_ms"]["mean"]
        )
    return {
        "command": "python -m eval.compare_mem0 " + shlex.join(argv),
        "data": str(args.path),
        "mem0_speaker_in_text": args.mem0_speaker_in_text,
        "conversations": wanted,
        "counts": {
            "turns": n_turns,
            "questions": n_q,
            "by_conversation": {
                c.sample_id: {"turns": len(c.turns), "questions": len(questions[c.sample_id])}
                for c in conversations
            },
        },
        "versions": {
            "mem0ai": _version("mem0ai"),
            "qdrant-client": _version("qdrant-client"),
            "qdrant-edge-py": _version("qdrant-edge-py"),
            "onnxruntime": _version("onnxruntime"),
            "mem_pipeline": _version("mem-pipeline"),
            "mem_pipeline_commit": commit,
            "python": platform.python_version(),
        },
        "setup": {
            "embedder": embedder.model_id,
            "dimensions": embedder.dimensions,
            "limit": args.limit,
            "mem0": {
                "vector_store": "qdrant, qdrant-client embedded local mode on disk (path=, on_disk)",
                "search": "semantic only (no BM25, no entity boost), threshold=0.0; default "
                f"threshold {MEM0_DEFAULT_THRESHOLD} applied afterwards",
                "add": "infer=False, one call per turn, no timestamp (rejected by mem0 OSS)",
                "content": "'Speaker: text'"
                if args.mem0_speaker_in_text
                else "the turn's text (speaker as the message's name)",
            },
            "mem_pipeline": {
                "engine": engine,
                "config": "MemoryConfig(path=...) defaults",
                "search": "now = day after the last session, reinforce=False",
                "add": "infer=False, one call per turn, timestamp = session date",
                "settle": "after each add, what it left to the write-behind (name vectors due "
                "included) done at once and timed apart (deferred_ms; add_with_deferred_ms: the "
                "add and that work)"
                if not args.overlap
                else "no: its write-behind's work runs beside the next calls, mem0's included",
            },
            "order": "alternating per turn and per question (even: mem0 first)",
            "cpus": os.cpu_count(),
        },
        "systems": systems_out,
        "ratios": cost,
        "floor": {
            "what": "the question embedded by the model (no cache) + the engine's filtered dense "
            f"query for {pool} ids and scores (the pool our search for {args.limit} asks of each "
            "signal); "
            "timed in the same alternation, taking each place in turn",
            "search_ms": latency(search_ms["floor"]),
            "ours_over_floor_p50": ratio(
                systems_out["ours"]["search_ms"]["p50"], latency(search_ms["floor"])["p50"]
            ),
            "ours_over_floor_paired_median": _paired_median(search_ms["ours"], search_ms["floor"]),
        },
        "ratios_vs_mem0_no_threshold": ratios(systems_out["ours"], systems_out["mem0_no_threshold"]),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="LoCoMo-format JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    ap.add_argument(
        "--conversations",
        nargs="+",
        default=list(DEFAULT_CONVERSATIONS),
        help="sample ids (default: %(default)s)",
    )
    ap.add_argument("--questions", type=int, default=0, help="first N questions of each (0: all)")
    ap.add_argument("--json", default=None, help="write all figures here")
    ap.add_argument("--workdir", default=None, help="keep both stores here (an empty or new directory)")
    ap.add_argument(
        "--mem0-speaker-in-text",
        action="store_true",
        help="give mem0 each turn as 'Speaker: text' (mem0 keeps a message's name as "
        "actor_id only, out of the embedded text); mem_pipeline's input is unchanged",
    )
    ap.add_argument(
        "--overlap",
        action="store_true",
        help="do not write what each of mem_pipeline's adds left to its write-behind (its turn's "
        "vector, concept counts, links, history) at once: let the background thread do it beside "
        "the next calls, mem0's included, which are then billed for some of it. By default it is "
        "written after each add and timed apart (no batching), and the add is reported with it too",
    )
    ap.add_argument(
        "--limit", type=int, default=LIMIT, help="hits asked of each system a question (default: %(default)s)"
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    out = run(args, argv)
    print(table(out))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
