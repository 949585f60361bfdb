"""Train a learned category model (``mem_pipeline.write.categories``) and measure it against the
word rules.

    python -m eval.train_categories                      # train, write the weights, report
    python -m eval.train_categories --no-write --json out.json

Data: ``eval/data/categories/train.jsonl`` (540 sentences, 60 a category) and ``test.jsonl``
(180, 20 a category), ``{"text", "category"}`` a line, hand-labelled by two separate writers
following the category table of ``eval/data/behaviour/README.md`` (the test set's writer never
saw the training set; lines of the test set that also appear in the training set are left
out of the report). The model: multinomial logistic regression on the sentence's embedding (the
default local embedder), L2-regularised, fitted by gradient descent. The test set is read once,
for the report: the word rules alone (``category_of``), the model alone, and the rules' slot
categories first with the model for the rest (what ``category_of`` does with the model).
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
from mem_pipeline.models import Category
from mem_pipeline.write.categories import CATEGORY_WEIGHTS, CategoryModel, category_of

DATA = Path(__file__).resolve().parent / "data" / "categories"
LABELS = [c.value for c in Category]


def load(path: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["text"] for r in rows], [r["category"] for r in rows]


def fit(x: np.ndarray, y: np.ndarray, k: int, l2: float, steps: int = 3000, lr: float = 0.5) -> np.ndarray:
    """Softmax regression weights, shape (d + 1, k), the last row the biases."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros((xb.shape[1], k))
    onehot = np.eye(k)[y]
    reg = np.ones((xb.shape[1], 1))
    reg[-1] = 0.0
    for _ in range(steps):
        z = xb @ w
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        grad = xb.T @ (p - onehot) / len(x) + l2 * reg * w / len(x)
        w -= lr * grad
    return w


def accuracy(pred: list[str], gold: list[str]) -> dict[str, Any]:
    ok = sum(p == g for p, g in zip(pred, gold))
    per = {
        c: round(sum(p == g for p, g in zip(pred, gold) if g == c) / max(1, gold.count(c)), 3)
        for c in sorted(set(gold))
    }
    return {"accuracy": round(ok / len(gold), 4), "k": ok, "n": len(gold), "per_category": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    embedder = LocalEmbedder()
    tr_text, tr_cat = load(DATA / "train.jsonl")
    te_text, te_cat = load(DATA / "test.jsonl")
    seen = {t.lower().strip() for t in tr_text}
    te = [(t, c) for t, c in zip(te_text, te_cat) if t.lower().strip() not in seen]
    left_out = len(te_text) - len(te)
    te_text, te_cat = [t for t, _ in te], [c for _, c in te]
    xtr = embedder.embed_batch(tr_text).astype(np.float64)
    ytr = np.array([LABELS.index(c) for c in tr_cat])
    w = fit(xtr, ytr, len(LABELS), args.l2)
    weights = {
        "model_id": embedder.model_id,
        "labels": LABELS,
        "w": [[round(float(v), 6) for v in row] for row in w[:-1]],
        "b": [round(float(v), 6) for v in w[-1]],
        "l2": args.l2,
        "train": {
            "n": len(tr_text),
            "sha256": hashlib.sha256((DATA / "train.jsonl").read_bytes()).hexdigest(),
        },
        "command": "python -m eval.train_categories",
    }
    class _Embeds:
        def embed(self, texts: list[str]) -> np.ndarray:
            return embedder.embed_batch(texts)

    model = CategoryModel(_Embeds(), weights)
    rows = {
        "rules alone": [category_of(t).value for t in te_text],
        "model alone": [c.value for c in model.predict(te_text)],
        "slot rules, then the model": [category_of(t, model=model).value for t in te_text],
    }
    out: dict[str, Any] = {"test_n": len(te_text), "left_out_as_in_train": left_out}
    print(f"test sentences: {len(te_text)}\n| on the test set | accuracy |\n|---|---|")
    for name, pred in rows.items():
        out[name] = accuracy(pred, te_cat)
        print(f"| {name} | {out[name]['accuracy']:.3f} ({out[name]['k']}/{out[name]['n']}) |")
    if not args.no_write:
        CATEGORY_WEIGHTS.write_text(json.dumps(weights) + "\n", encoding="utf-8")
        print(f"wrote {CATEGORY_WEIGHTS}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
