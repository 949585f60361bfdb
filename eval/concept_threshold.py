"""Measure the concept-name matching threshold on hand-written pairs.

    python -m eval.concept_threshold [--pairs eval/data/concept_pairs.jsonl]

A query n-gram matches a stored concept by name embedding when the cosine is at or above the
threshold ("timed out" must find "timeout"; "dog" must not find "cat"). Prints the cosine of
every pair and, per threshold, right matches and wrong matches.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from mem_pipeline.embed import LocalEmbedder

HERE = Path(__file__).parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=str(HERE / "data" / "concept_pairs.jsonl"))
    args = ap.parse_args(argv)
    rows = [json.loads(x) for x in Path(args.pairs).read_text().splitlines() if x.strip()]
    e = LocalEmbedder()
    sims = (e.embed_batch([r["a"] for r in rows]) * e.embed_batch([r["b"] for r in rows])).sum(1)
    for r, s in sorted(zip(rows, sims), key=lambda t: -t[1]):
        print(f"{s:.3f} {'match' if r['match'] else 'no   '} {r['a']!r} ~ {r['b']!r}")
    pos = np.array([s for r, s in zip(rows, sims) if r["match"]])
    neg = np.array([s for r, s in zip(rows, sims) if not r["match"]])
    print(f"\n{'threshold':>9} {'matches found':>14} {'wrong matches':>14}")
    for t in np.arange(0.60, 0.86, 0.02):
        print(f"{t:9.2f} {int((pos >= t).sum()):>8}/{len(pos)} {int((neg >= t).sum()):>8}/{len(neg)}")
    return 0


if __name__ == "__main__":
    main()
