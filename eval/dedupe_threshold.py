"""Measure the near-duplicate threshold on hand-written fact pairs.

    python -m eval.dedupe_threshold [--pairs eval/data/paraphrase_pairs.jsonl] [--json OUT]

For each threshold t, a pair "merges" when cosine >= t. A paraphrase pair should merge; a
related pair (same topic, different fact: "lives in Lisbon" / "lives in Porto") must not, and
neither must an unrelated one. Prints the cosine distribution per label and, per threshold,
paraphrase recall and wrong-merge rate, then the threshold with no wrong merge that keeps the
most paraphrases.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from mem_pipeline.embed import LocalEmbedder
from mem_pipeline.text.voice import conflicting_specifics, third_person

HERE = Path(__file__).parent


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=str(HERE / "data" / "paraphrase_pairs.jsonl"))
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in Path(args.pairs).read_text().splitlines() if line.strip()]
    emb = LocalEmbedder()
    # facts are compared in one voice, as Memory does ("I" -> "the user")
    a = emb.embed_batch([third_person(r["a"]) for r in rows])
    b = emb.embed_batch([third_person(r["b"]) for r in rows])
    sims = (a * b).sum(axis=1)
    by: dict[str, list[float]] = {}
    for r, s in zip(rows, sims):
        by.setdefault(r["label"], []).append(float(s))
    print(f"{'label':<11} {'n':>4} {'min':>6} {'p10':>6} {'median':>6} {'p90':>6} {'max':>6}")
    for label, vals in sorted(by.items()):
        q = np.percentile(vals, [10, 90])
        print(
            f"{label:<11} {len(vals):>4} {min(vals):6.3f} {q[0]:6.3f} "
            f"{statistics.median(vals):6.3f} {q[1]:6.3f} {max(vals):6.3f}"
        )
    conflict = np.array([bool(conflicting_specifics(r["a"], r["b"])) for r in rows])
    is_para = np.array([r["label"] == "paraphrase" for r in rows])
    n_other = int((~is_para).sum())
    table = []
    print(
        f"\n{'threshold':>9} {'cosine only: para merged':>25} {'wrong':>7}"
        f" {'+ specifics check: para merged':>31} {'wrong':>7}"
    )
    for t in np.arange(0.70, 0.99, 0.02):
        merged = sims >= t
        merged_chk = merged & ~conflict
        row = {
            "threshold": round(float(t), 2),
            "paraphrase_recall": float(merged[is_para].mean()),
            "wrong_merges": int(merged[~is_para].sum()),
            "paraphrase_recall_checked": float(merged_chk[is_para].mean()),
            "wrong_merges_checked": int(merged_chk[~is_para].sum()),
        }
        table.append(row)
        print(
            f"{t:9.2f} {row['paraphrase_recall']:25.1%} {row['wrong_merges']:>3}/{n_other}"
            f" {row['paraphrase_recall_checked']:31.1%}"
            f" {row['wrong_merges_checked']:>3}/{n_other}"
        )
    safe = [row for row in table if row["wrong_merges_checked"] == 0]
    best = min(safe, key=lambda r: r["threshold"]) if safe else None
    out = {
        "by_label": {
            k: {"n": len(v), "median": statistics.median(v), "min": min(v), "max": max(v)}
            for k, v in by.items()
        },
        "table": table,
        "lowest_threshold_without_wrong_merge": best,
    }
    print(f"\nlowest threshold with no wrong merge: {best}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
