"""Train the learned second opinion on what is worth remembering (``mem_pipeline.write.memorable``)
and measure it against the rules alone.

    python -m eval.train_memorable                       # train, write the weights, report
    python -m eval.train_memorable --no-write --json out.json

Data: ``eval/data/memorable/train.jsonl`` and ``test.jsonl``, one ``{"text", "keep"}`` a line,
hand-labelled chat sentences written by two separate writers (the test set's writer never saw
the training set). ``test_more.jsonl`` (400 sentences, half of each label, written on
2026-12-05 by a third writer who saw 40 lines of the training set for the format, and neither
the test set nor the rules) is a second test set, read once for the report too.

The model: L2-regularised logistic regression on the sentence's embedding (the default local
embedder), fitted by Newton's method. It is used only to *drop* sentences the
rules keep, so its threshold is chosen on the training set alone, by 5-fold cross-validation:
the highest threshold at which no more than ``--max-lost`` of the durable sentences the rules
keep would be dropped. The test set is read once, for the report.

Reported for the rules alone and for the rules with the model: of the durable sentences, the
share kept; of the others, the share dropped; accuracy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mem_pipeline.embed import LocalEmbedder
from mem_pipeline.text.smalltalk import is_statement
from mem_pipeline.text.voice import strip_filler
from mem_pipeline.write.memorable import WEIGHTS, MemorableFilter, exempt

DATA = Path(__file__).resolve().parent / "data" / "memorable"


def load(path: Path) -> tuple[list[str], np.ndarray]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["text"] for r in rows], np.array([bool(r["keep"]) for r in rows])


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Logistic regression, weights and bias, by Newton's method (the bias not regularised)."""
    xb = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def prob(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-(x @ w + b))))


def rules_keep(texts: list[str]) -> np.ndarray:
    return np.array([is_statement(strip_filler(t)) for t in texts])


def judged(texts: list[str], vecs: np.ndarray, weights: dict[str, Any], model_id: str) -> np.ndarray:
    """What the rules with the model keep (the model exempts attributes and slots, as in use)."""

    class _Fixed:
        def embed(self, batch: list[str]) -> np.ndarray:
            return np.stack([vecs[texts.index(t)] for t in batch])

    f = MemorableFilter(_Fixed(), model_id, weights)
    kept = rules_keep(texts)
    idx = [i for i in range(len(texts)) if kept[i]]
    for i, drop in zip(idx, f.drop([texts[i] for i in idx])):
        kept[i] = not drop
    return kept


def report(name: str, kept: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    durable = int(y.sum())
    other = int((~y).sum())
    row = {
        "durable_kept": round(float((kept & y).sum() / durable), 4),
        "durable_kept_k": int((kept & y).sum()),
        "durable_n": durable,
        "other_dropped": round(float((~kept & ~y).sum() / other), 4),
        "other_dropped_k": int((~kept & ~y).sum()),
        "other_n": other,
        "accuracy": round(float((kept == y).mean()), 4),
    }
    print(
        f"| {name} | {row['durable_kept']:.3f} ({row['durable_kept_k']}/{durable}) "
        f"| {row['other_dropped']:.3f} ({row['other_dropped_k']}/{other}) | {row['accuracy']:.3f} |"
    )
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--max-lost", type=float, default=0.03, help="durable sentences the model may drop (CV)")
    ap.add_argument("--no-write", action="store_true", help="do not write the weights")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    embedder = LocalEmbedder()
    train_texts, ytr = load(DATA / "train.jsonl")
    test_texts, yte = load(DATA / "test.jsonl")
    xtr = embedder.embed_batch(train_texts).astype(np.float64)
    xte = embedder.embed_batch(test_texts).astype(np.float64)

    # threshold by 5-fold CV on the training set: the model's out-of-fold probability for each
    # durable sentence the rules keep; the threshold loses at most --max-lost of them
    rng = np.random.default_rng(0)
    fold = rng.permutation(len(ytr)) % 5
    oof = np.zeros(len(ytr))
    for k in range(5):
        w, b = fit(xtr[fold != k], ytr[fold != k], args.l2)
        oof[fold == k] = prob(xtr[fold == k], w, b)
    ruled = rules_keep(train_texts)
    asked = ruled & ~np.array([exempt(t) for t in train_texts])
    durable_kept = np.sort(oof[asked & ytr])
    threshold = float(durable_kept[int(args.max_lost * len(durable_kept))]) if len(durable_kept) else 0.0
    w, b = fit(xtr, ytr, args.l2)
    weights = {
        "model_id": embedder.model_id,
        "w": [round(float(v), 6) for v in w],
        "b": round(b, 6),
        "threshold": round(threshold, 4),
        "l2": args.l2,
        "max_lost": args.max_lost,
        "train": {
            "n": len(ytr),
            "durable": int(ytr.sum()),
            "sha256": hashlib.sha256((DATA / "train.jsonl").read_bytes()).hexdigest(),
        },
        "command": "python -m eval.train_memorable",
    }

    print(f"threshold {threshold:.3f} (5-fold CV on {len(ytr)} training sentences, max lost {args.max_lost})")
    print("| on the test set | durable kept | other dropped | accuracy |\n|---|---|---|---|")
    out: dict[str, Any] = {"threshold": threshold, "test_n": len(yte)}
    out["rules"] = report("rules alone", rules_keep(test_texts), yte)
    model_alone = prob(xte, w, b) >= threshold
    out["model"] = report("model alone", model_alone, yte)
    both = judged(test_texts, xte, weights, embedder.model_id)
    out["rules_and_model"] = report("rules, then the model may drop", both, yte)
    more = DATA / "test_more.jsonl"
    if more.exists():
        more_texts, ymore = load(more)
        xmore = embedder.embed_batch(more_texts).astype(np.float64)
        print(f"| on {more.name} | | | |")
        out["more"] = {
            "n": len(ymore),
            "rules": report("rules alone", rules_keep(more_texts), ymore),
            "rules_and_model": report(
                "rules, then the model may drop", judged(more_texts, xmore, weights, embedder.model_id), ymore
            ),
        }
    out["train_cv"] = {
        "rules": report("(train, CV) rules alone", ruled, ytr),
        "rules_and_model": report(
            "(train, CV) rules, then the model", ruled & ~((oof < threshold) & asked), ytr
        ),
    }
    if not args.no_write:
        WEIGHTS.write_text(json.dumps(weights) + "\n", encoding="utf-8")
        print(f"wrote {WEIGHTS}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
