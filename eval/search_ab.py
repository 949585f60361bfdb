"""The read path of this checkout against an earlier commit's, in one process: the time a search
takes beyond embedding its question, paired question by question, and whether the hits are the same.

    python -m eval.search_ab ../shared/data/locomo/locomo_dev.json --ref HEAD~1
    python -m eval.search_ab PATH --ref 9031806 --limit 20 --rounds 3 --json out.json

Why. A change to the Python of a search saves a fraction of a millisecond, and on this shared
2-core machine two runs of the same code, minutes apart, differ by more than that. So both
versions run in one process, on the same questions, alternating: question i is asked of the
earlier version then of this one, question i+1 the other way round, for ``--rounds`` rounds. The
question's embedding is cached (each version embeds it once before the timed rounds), so what is
timed is the search's own work: analysis, the engine's queries, ranking, concepts, hits. It is
reported as each version's p50 and the median of the per-question differences.

How. ``git archive REF mem_pipeline`` is unpacked into a temporary directory as the package
``mem_pipeline_ref`` (the package imports itself relatively; the two names it looks itself up
by, for its bundled tokenizer and prompts, are renamed). Each version builds its own store from
the same LoCoMo turns (``infer=False``, one ``add`` per turn, as ``eval.locomo`` adds them) and
the same embedder object. The hits (ids and scores to 9 decimals) of every question are compared
too, by their texts (ids are random): a speed change should say whether it changed any result.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from eval.retrieval import Conversation, load

DEFAULT_CONVERSATIONS = ("conv-26", "conv-30", "conv-41")
_REPO = Path(__file__).resolve().parent.parent


def import_ref(ref: str, into: Path) -> Any:
    """The package ``mem_pipeline`` as commit ``ref`` has it, imported as ``mem_pipeline_ref``."""
    blob = subprocess.run(
        ["git", "-C", str(_REPO), "archive", "--format=tar", ref, "mem_pipeline"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    pkg = into / "mem_pipeline_ref"
    (into / "mem_pipeline").rename(pkg)
    for py in pkg.rglob("*.py"):
        text = py.read_text(encoding="utf-8")
        renamed = text.replace('resources.files("mem_pipeline', 'resources.files("mem_pipeline_ref')
        if renamed != text:
            py.write_text(renamed, encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module("mem_pipeline_ref")


def build(lib: Any, path: Path, convs: list[Conversation], embedder: Any) -> Any:
    mem = lib.Memory(config=lib.MemoryConfig(path=str(path)), embedder=embedder)
    for c in convs:
        for t in c.turns:
            mem.add(
                [{"role": "user", "content": t.text, "name": t.speaker}],
                user_id=c.sample_id,
                infer=False,
                metadata={"session": t.session, "dia_id": t.dia_id, "speaker": t.speaker},
                timestamp=t.when,
            )
    # what the adds left to the write-behind is written now, not during the first searches:
    # another user's writes move the lexical statistics (IDF) that every user's scores use
    mem.parts.links.flush()
    return mem


def signature(recall: Any) -> str:
    """The hits' texts, scores and score parts, and the associations' paths (ids are random:
    the two stores give the same turn two ids)."""
    h = hashlib.sha1()
    for hit in recall.hits:
        parts = ",".join(f"{v:.9f}" for v in hit.parts.model_dump().values())
        h.update(f"{hit.text}:{hit.score:.9f}:{hit.source}:{parts};".encode())
    for a in getattr(recall, "associations", None) or []:
        via = "/".join(a.via.path) if a.via is not None else ""
        h.update(f"a{a.text}:{a.score:.9f}:{via};".encode())
    return h.hexdigest()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from mem_pipeline import LocalEmbedder

    convs = load(args.path, list(args.conversations))
    questions = [(c, q.question, c.last_time + timedelta(days=1)) for c in convs for q in c.questions]
    embedder = LocalEmbedder()
    with tempfile.TemporaryDirectory(prefix="search_ab_") as tmp:
        root = Path(tmp)
        ref_lib = import_ref(args.ref, root / "src")
        this_lib = sys.modules["mem_pipeline"]
        mems = {
            "ref": build(ref_lib, root / "ref", convs, embedder),
            "this": build(this_lib, root / "this", convs, embedder),
        }

        def search(who: str, c: Conversation, q: str, now: Any) -> Any:
            return mems[who].search(q, user_id=c.sample_id, limit=args.limit, now=now, reinforce=False)

        sigs: dict[str, list[str]] = {"ref": [], "this": []}
        for c, q, now in questions:  # untimed: embeds each question once, warms both
            for who in ("ref", "this"):
                sigs[who].append(signature(search(who, c, q, now)))
        ms: dict[str, list[float]] = {"ref": [], "this": []}
        for r in range(args.rounds):
            for i, (c, q, now) in enumerate(questions):
                for who in ("ref", "this") if (i + r) % 2 == 0 else ("this", "ref"):
                    t = time.perf_counter()
                    search(who, c, q, now)
                    ms[who].append((time.perf_counter() - t) * 1000)
        for m in mems.values():
            m.close()
    diffs = [a - b for a, b in zip(ms["ref"], ms["this"])]
    same = sum(a == b for a, b in zip(sigs["ref"], sigs["this"]))
    return {
        "ref": args.ref,
        "this": _head(),
        "conversations": list(args.conversations),
        "questions": len(questions),
        "limit": args.limit,
        "rounds": args.rounds,
        "ref_p50_ms": statistics.median(ms["ref"]),
        "this_p50_ms": statistics.median(ms["this"]),
        "saving_paired_median_ms": statistics.median(diffs),
        "same_hits": same,
        "command": "python -m eval.search_ab " + " ".join(sys.argv[1:]),
    }


def _head() -> str:
    out = subprocess.run(
        ["git", "-C", str(_REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(_REPO), "status", "--porcelain", "mem_pipeline"], capture_output=True
    )
    return out.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="LoCoMo-format JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    ap.add_argument("--ref", default="HEAD~1", help="the earlier commit (default HEAD~1)")
    ap.add_argument("--conversations", nargs="+", default=list(DEFAULT_CONVERSATIONS))
    ap.add_argument("--limit", type=int, default=5, help="hits asked of each search (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over the questions")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    out = run(args)
    print(
        f"{out['questions']} questions x {out['rounds']} rounds, {out['limit']} hits, "
        f"query embedding cached: {out['ref']} p50 {out['ref_p50_ms']:.2f} ms, "
        f"{out['this']} p50 {out['this_p50_ms']:.2f} ms; "
        f"saving, median of the paired differences: {out['saving_paired_median_ms']:.3f} ms; "
        f"same hits and scores for {out['same_hits']} of {out['questions']} questions"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
