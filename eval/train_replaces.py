"""Train the learned "does this statement replace that stored fact?" (``mem_pipeline.write.replaces``)
and measure it against the reconciler's rules alone.

    python -m eval.train_replaces                       # train, write the weights, report
    python -m eval.train_replaces --no-write --json out.json

Data: ``eval/data/replaces/train*.jsonl`` (two writers, 1,020 pairs) and ``test.jsonl`` (180
pairs, by a third writer who saw neither training file), one ``{"old", "new", "replaces",
"why"}`` a line: a stored statement, a later statement of the same user, and whether the later
one makes the stored one (or the part of it the later one is about) no longer true. In use the
model is asked about a statement's nearest stored facts, which are often about something else,
so each set also gets, for every pair, its new statement with another pair's stored sentence,
as not replacing it (``--strangers``).

The model is two L2-regularised logistic regressions, fitted by Newton's method, whose
probabilities multiply: *a change* (``pair_features``: what the rules see in the pair, which
words of the training vocabulary the new statement says, the difference of the two
embeddings), fitted on the hand-written pairs; and *the same thing* (``related_features``: the
cosine, shared words and names, the embeddings' element-wise product), fitted on the
hand-written pairs against the unrelated pairings. The threshold is chosen on the training set
alone, by 5-fold cross-validation: the lowest at which the pairs the model adds to the rules'
are right at least ``--min-precision`` of the time (a wrong "replaces" loses a fact that still
holds, so it costs more than a missed one). The test set is read once, for the report.

Reported on each set, with and without the unrelated pairings: precision, recall and accuracy
of the rules alone (``reconcile.decide`` on the pair, the stored fact as the only neighbour, of
its slot when it has one), of the model alone, of the rules then the model, and of the pairs
the model adds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from eval.train_memorable import fit, prob
from mem_pipeline.embed import LocalEmbedder
from mem_pipeline.models import Category, ExtractedFact, Scope, StoredFact
from mem_pipeline.text.slots import slot_of
from mem_pipeline.write.reconcile import decide
from mem_pipeline.write.replaces import MIN_COSINE, WEIGHTS, pair_features, related_features, words

DATA = Path(__file__).resolve().parent / "data" / "replaces"
_T = datetime(2026, 1, 1, tzinfo=timezone.utc)


def load(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["old"] for r in rows], [r["new"] for r in rows], np.array([bool(r["replaces"]) for r in rows])


def with_strangers(
    old: list[str], new: list[str], y: np.ndarray, k: int
) -> tuple[list[str], list[str], np.ndarray]:
    """The training pairs and, for each, ``k`` of its new statement with the stored sentence of
    another pair, labelled False. In use the model is asked about a statement's nearest stored
    facts, which are often about something else ("Due in October." next to "I grew up on a
    farm"); the hand-written pairs are nearly all about one thing."""
    rng = np.random.default_rng(1)
    olds, news, labels = list(old), list(new), list(y)
    for i in range(len(new)):
        for j in rng.choice([j for j in range(len(old)) if old[j] != old[i]], size=k, replace=False):
            olds.append(old[int(j)])
            news.append(new[i])
            labels.append(False)
    return olds, news, np.array(labels, dtype=bool)


def rules_supersede(old: str, new: str, cosine: float) -> bool:
    """Whether the reconciler's rules alone supersede ``old`` with ``new`` (it the only
    neighbour, at its cosine; of the new statement's slot when it has the same one)."""
    stored = StoredFact(
        id="0",
        text=old,
        category=Category.OTHER,
        concepts=[],
        scope=Scope(user_id="u"),
        created_at=_T,
        updated_at=_T,
        last_seen_at=_T,
        valid_from=_T,
        origin="offline",
    )
    fact = ExtractedFact(text=new, category=Category.OTHER, concepts=[], source_turns=[0])
    slot, theirs = slot_of(new, "the user"), slot_of(old, "the user")
    in_slot = [(stored, theirs)] if slot and theirs and slot.family == theirs.family else []
    d = decide(fact, slot, [(stored, cosine)], in_slot, dedupe_threshold=0.90, related_threshold=0.70)
    return d is not None and d.action == "SUPERSEDE"


def report(name: str, said: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    tp = int((said & y).sum())
    row = {
        "precision": round(tp / max(int(said.sum()), 1), 4),
        "recall": round(tp / max(int(y.sum()), 1), 4),
        "accuracy": round(float((said == y).mean()), 4),
        "said": int(said.sum()),
        "true_positives": tp,
        "positives": int(y.sum()),
        "n": len(y),
    }
    print(
        f"| {name} | {row['precision']:.3f} ({tp}/{row['said']}) "
        f"| {row['recall']:.3f} ({tp}/{row['positives']}) | {row['accuracy']:.3f} |"
    )
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l2", type=float, default=1.0, help="both halves")
    ap.add_argument("--min-precision", type=float, default=0.85, help="of the pairs the model adds (CV)")
    ap.add_argument("--strangers", type=int, default=1, help="unrelated pairs added per pair")
    ap.add_argument("--min-count", type=int, default=3, help="training pairs a vocabulary word is said in")
    ap.add_argument("--no-write", action="store_true", help="do not write the weights")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    embedder = LocalEmbedder()
    files = sorted(DATA.glob("train*.jsonl"))
    parts = [load(f) for f in files]
    hand = {
        "train": (
            [o for p in parts for o in p[0]],
            [n for p in parts for n in p[1]],
            np.concatenate([p[2] for p in parts]),
        ),
        "test": load(DATA / "test.jsonl"),
    }
    said = Counter(w for new in hand["train"][1] for w in words(new))
    vocabulary = sorted(w for w, k in said.items() if k >= args.min_count)
    index = {w: i for i, w in enumerate(vocabulary)}
    sets = {}
    for name, rows in hand.items():
        n = len(rows[2])
        old, new, y = with_strangers(*rows, args.strangers)
        u = embedder.embed_batch(old).astype(np.float64)
        v = embedder.embed_batch(new).astype(np.float64)
        cos = np.sum(u * v, axis=1)
        rules = np.array([rules_supersede(a, c, float(s)) for a, c, s in zip(old, new, cos)])
        real = np.arange(len(y)) < n  # the hand-written pairs; the rest are strangers
        sets[name] = (
            y,
            real,
            pair_features(old, new, u, v, index),
            related_features(old, new, u, v),
            cos,
            rules,
        )
    ytr, real_tr, xc, xr, cos_tr, rules_tr = sets["train"]

    def fitted(mask: np.ndarray) -> tuple[tuple[np.ndarray, float], tuple[np.ndarray, float]]:
        """The change half on the hand-written pairs, the relatedness half on all, of ``mask``."""
        return fit(xc[mask & real_tr], ytr[mask & real_tr], args.l2), fit(
            xr[mask], real_tr[mask].astype(float), args.l2
        )

    def score(
        halves: tuple[tuple[np.ndarray, float], tuple[np.ndarray, float]], c: np.ndarray, r: np.ndarray
    ) -> np.ndarray:
        (wc, bc), (wr, br) = halves
        return prob(c, wc, bc) * prob(r, wr, br)

    # folds by hand-written pair: a pair's strangers fall in its fold
    n = int(real_tr.sum())
    per_pair = np.random.default_rng(0).permutation(n) % 5
    fold = np.concatenate([per_pair, np.repeat(per_pair, args.strangers)])
    oof = np.zeros(len(ytr))
    for k in range(5):
        oof[fold == k] = score(fitted(fold != k), xc[fold == k], xr[fold == k])
    threshold = 0.99
    for t in np.arange(0.30, 0.99, 0.01):
        added = (oof >= t) & (cos_tr >= MIN_COSINE) & ~rules_tr
        if added.sum() and (added & ytr).sum() / added.sum() >= args.min_precision:
            threshold = float(round(t, 2))
            break
    halves = fitted(np.ones(len(ytr), dtype=bool))
    (wc, bc), (wr, br) = halves
    weights = {
        "model_id": embedder.model_id,
        "change": {"w": [round(float(x), 6) for x in wc], "b": round(bc, 6)},
        "related": {"w": [round(float(x), 6) for x in wr], "b": round(br, 6)},
        "threshold": threshold,
        "vocabulary": vocabulary,
        "l2": args.l2,
        "min_precision": args.min_precision,
        "strangers": args.strangers,
        "train": {
            "n": n,
            "replaces": int(ytr[real_tr].sum()),
            "files": [f.name for f in files],
            "sha256": hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest(),
        },
        "command": "python -m eval.train_replaces",
    }
    print(
        f"threshold {threshold:.2f} (5-fold CV on {n} training pairs and {len(ytr) - n} unrelated pairings: "
        f"the pairs the model adds to the rules' right >= {args.min_precision} of the time out of fold)"
    )
    out: dict[str, Any] = {"threshold": threshold, "vocabulary": len(vocabulary)}
    for name, (y, real, c, r, cos, rules) in sets.items():
        p = oof if name == "train" else score(halves, c, r)
        model = (p >= threshold) & (cos >= MIN_COSINE)
        tag = " (out of fold)" if name == "train" else ""
        out[name] = {}
        for part, mask in (
            ("hand-written pairs", real),
            ("with unrelated pairings", np.ones(len(y), dtype=bool)),
        ):
            print(
                f"\n| {name}: {part} ({int(mask.sum())}) | precision | recall | accuracy |\n|---|---|---|---|"
            )
            out[name][part] = {
                "rules": report("rules alone", rules[mask], y[mask]),
                "model": report(f"model alone{tag}", model[mask], y[mask]),
                "rules_then_model": report(f"rules, then the model{tag}", (rules | model)[mask], y[mask]),
                "added_by_model": report(f"the pairs the model adds{tag}", (model & ~rules)[mask], y[mask]),
            }
    if not args.no_write:
        WEIGHTS.write_text(json.dumps(weights) + "\n", encoding="utf-8")
        print(f"wrote {WEIGHTS}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
