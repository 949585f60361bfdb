"""The relevance floor: fit the confidence of a hit, and choose ``MemoryConfig.min_score``.

    python -m eval.abstention                                   # fit on the behaviour main set
    python -m eval.abstention --json eval/results/abstention.json
    python -m eval.abstention --gate eval/data/behaviour eval/data/behaviour_heldout2 --json out.json

A hit's confidence is ``1 / (1 + exp(-(a * cosine + b * personal + c)))`` (``read.rank``): the
cosine of the question and the text, and whether the question is about the person at all
(first person, a speaker's name, one of the user's concepts: ``text.phrases.about_person``,
``Recall.query_concepts``). Both mean the same for every
question (the fused relevance does not: it is scaled per question, its best candidate is always
1), so one floor can serve every question.

**Labelled pairs.** The behaviour scenarios (``eval/data/behaviour/``) are fed as ``eval.behaviour``
feeds them (offline extractor), then every probe is searched with no floor (``min_score=0``,
10 hits). A hit of a probe with ``expect_top`` is relevant when it holds one of the expected
strings, irrelevant otherwise; every hit of an ``expect_empty`` probe (gibberish, quiz
questions, small talk) is irrelevant. A logistic regression on (cosine, coverage) gives
``(a, b, c)``. The held-out scenarios (``eval/data/behaviour_heldout/``) are not used to fit.

**The floor** is then read off: for each candidate ``min_score``, the share of expect_empty
probes left with no hit (abstention) and the share of expect_top probes that keep a relevant
hit, on the main and the held-out set. The floor chosen is the middle of the range of floors
that give the main set its best abstention without losing an answer it would keep at the
lowest floor; the held-out set only checks it. LoCoMo's evidence recall with a floor is measured by
``python -m eval.locomo ... --min-score S`` (every LoCoMo question has an answer: a floor can
only cost recall there).

**The gate sweep** (``--gate DIR ...``) measures the floor as the reader uses it, on the fitted
weights in use (``MemoryConfig.confidence_weights``): every probe of the given sets searched at
each floor from 0.14 to 0.26, and the floor of best abstention F1 (recall: unrelated questions
left empty; precision: of the questions left empty, those that should be) chosen, the middle of
its plateau. Pass development sets only: a blind set checks the choice.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from eval.behaviour import DEFAULT_DATA, exchanges, load_scenarios
from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.read.rank import confidence
from mem_pipeline.text.phrases import about_person

HELD_OUT = Path(__file__).parent / "data" / "behaviour_heldout"


def _feed(m: Memory, s: dict[str, Any], user: str) -> None:
    """Add one scenario's turns for ``user`` as ``eval.behaviour`` feeds them; a failed add is
    reported and the rest go on (a measurement)."""
    for messages, at in exchanges(s["turns"]):
        try:
            m.add(messages, user_id=user, timestamp=at)
        except Exception as e:  # noqa: BLE001 - a measurement: report and go on
            print(f"  {s['id']}: add failed: {e}", file=sys.stderr)


def pairs(data: Path) -> list[dict[str, Any]]:
    """Every (probe, hit) of the scenarios in ``data``, with its features and label."""
    out = []
    nonce = uuid.uuid4().hex[:8]
    with (
        tempfile.TemporaryDirectory(prefix="mem-abstention-") as tmp,
        Memory(config=MemoryConfig(path=tmp)) as m,
    ):
        for s in load_scenarios(data):
            user = f"{s['id']}-{nonce}"
            _feed(m, s, user)
            for p in s.get("probes") or []:
                r = m.search(p["query"], user_id=user, limit=10, now=p["at"], min_score=0.0, expand=False)
                expect = [x.lower() for x in p.get("expect_top") or []]
                for rank, h in enumerate(r.hits):
                    out.append(
                        {
                            "scenario": s["id"],
                            "query": p["query"],
                            "kind": "empty" if p.get("expect_empty") else "answer" if expect else "other",
                            "rank": rank,
                            "text": h.text,
                            "cosine": h.parts.similarity,
                            "personal": about_person(p["query"]) or bool(r.query_concepts),
                            "label": int(bool(expect) and any(x in h.text.lower() for x in expect)),
                        }
                    )
                if not r.hits:
                    kind = "empty" if p.get("expect_empty") else "answer" if expect else "other"
                    out.append({"scenario": s["id"], "query": p["query"], "kind": kind, "rank": -1})
    return out


def fit(rows: list[dict[str, Any]], l2: float = 0.01, steps: int = 100) -> tuple[float, float, float]:
    """Logistic regression on (cosine, personal) by Newton's method (small ridge)."""
    data = [r for r in rows if r["rank"] >= 0 and r["kind"] in ("empty", "answer")]
    x = np.array([[r["cosine"], float(r["personal"]), 1.0] for r in data])
    y = np.array([r["label"] for r in data], dtype=float)
    w = np.zeros(3)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) + l2 * np.r_[w[:2], 0]
        hess = (x.T * (p * (1 - p))) @ x + l2 * np.diag([1, 1, 0])
        w -= np.linalg.solve(hess, grad)
    return float(w[0]), float(w[1]), float(w[2])


def floors(
    rows: list[dict[str, Any]], weights: tuple[float, float, float], grid: list[float]
) -> list[dict[str, Any]]:
    """For each floor: abstention on expect_empty probes, relevant kept on expect_top probes."""
    by_probe: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_probe.setdefault((r["scenario"], r["query"]), []).append(r)
    out = []
    for t in grid:
        empty = kept = n_empty = n_answer = top1 = 0
        for probe in by_probe.values():
            kind = probe[0]["kind"]
            live = [
                r for r in probe if r["rank"] >= 0 and confidence(r["cosine"], r["personal"], weights) >= t
            ]
            if kind == "empty":
                n_empty += 1
                empty += not live
            elif kind == "answer":
                n_answer += 1
                kept += any(r["label"] for r in live)
                top1 += bool(live) and bool(live[0]["label"])
        out.append(
            {
                "min_score": t,
                "abstention": round(empty / max(n_empty, 1), 3),
                "answer_kept": round(kept / max(n_answer, 1), 3),
                "rank1_correct": round(top1 / max(n_answer, 1), 3),
                "n_empty": n_empty,
                "n_answer": n_answer,
            }
        )
    return out


def gate(dirs: list[Path], grid: list[float]) -> list[dict[str, Any]]:
    """The question gate as the reader applies it, on the probes of the scenario sets ``dirs``:
    each probe searched at each floor of ``grid`` (``min_score``, 5 hits), empty or not. For
    each floor: abstention recall (expect_empty probes left empty), precision (of the probes
    left empty, those that expected it), their F1, and rank-1 correct over the probes with
    ``expect_top``."""
    probes: list[tuple[bool, list[str], list[bool], list[bool]]] = []  # expect_empty, expect, empty@f, top@f
    nonce = uuid.uuid4().hex[:8]
    with (
        tempfile.TemporaryDirectory(prefix="mem-gate-") as tmp,
        Memory(config=MemoryConfig(path=tmp)) as m,
    ):
        for data in dirs:
            for s in load_scenarios(data):
                user = f"{s['id']}-{nonce}"
                _feed(m, s, user)
                for p in s.get("probes") or []:
                    expect = [x.lower() for x in p.get("expect_top") or []]
                    ask = {"user_id": user, "limit": 5, "now": p["at"]}
                    found = [m.search(p["query"], min_score=t, **ask).hits for t in grid]
                    probes.append(
                        (
                            bool(p.get("expect_empty")),
                            expect,
                            [not hits for hits in found],
                            [bool(hits) and any(x in hits[0].text.lower() for x in expect) for hits in found],
                        )
                    )
    out = []
    n_empty = sum(1 for e, _, _, _ in probes if e)
    n_top = sum(1 for _, x, _, _ in probes if x)
    for i, t in enumerate(grid):
        left = [e for e, _, empty, _ in probes if empty[i]]
        tp = sum(left)
        recall, precision = tp / max(n_empty, 1), tp / max(len(left), 1)
        out.append(
            {
                "min_score": t,
                "abstention_recall": round(recall, 3),
                "abstention_precision": round(precision, 3),
                "f1": round(2 * recall * precision / max(recall + precision, 1e-9), 3),
                "rank1_correct": round(sum(top[i] for _, x, _, top in probes if x) / max(n_top, 1), 3),
                "n_probes": len(probes),
                "n_empty": n_empty,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--heldout", default=str(HELD_OUT))
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--gate",
        nargs="+",
        default=None,
        metavar="DIR",
        help="instead: sweep min_score through the reader's question gate on these scenario sets "
        "and pick the floor of best abstention F1 (the middle of its plateau)",
    )
    args = ap.parse_args(argv)
    if args.gate:
        grid = [round(0.01 * i, 2) for i in range(14, 27)]
        rows = gate([Path(d) for d in args.gate], grid)
        best = max(r["f1"] for r in rows)
        plateau = [r["min_score"] for r in rows if r["f1"] == best]
        chosen = round((min(plateau) + max(plateau)) / 2, 3)
        print("| min_score | abstention recall | precision | F1 | rank-1 correct |\n|---|---|---|---|---|")
        for r in rows:
            keys = ("min_score", "abstention_recall", "abstention_precision", "f1", "rank1_correct")
            cells = [r[k] for k in keys]
            print("| " + " | ".join(str(c) for c in cells) + " |")
        print(f"best F1 {best} at {plateau} -> min_score {chosen} ({rows[0]['n_probes']} probes)")
        if args.json:
            cmd = "python -m eval.abstention " + " ".join(argv or sys.argv[1:])
            report = {"gate": rows, "chosen_min_score": chosen, "plateau": plateau, "command": cmd}
            Path(args.json).write_text(json.dumps(report, indent=1))
        return 0
    train = pairs(Path(args.data))
    weights = fit(train)
    test = pairs(Path(args.heldout))
    grid = [round(0.05 * i, 2) for i in range(1, 13)]
    main_rows = floors(train, weights, grid)
    best_abst = max(r["abstention"] for r in main_rows)
    kept0 = main_rows[0]["answer_kept"]
    plateau = [
        r["min_score"] for r in main_rows if r["abstention"] == best_abst and r["answer_kept"] >= kept0
    ]
    chosen = round((min(plateau) + max(plateau)) / 2, 3) if plateau else None
    report = {
        "weights": [round(w, 3) for w in weights],
        "fit_pairs": sum(1 for r in train if r["rank"] >= 0),
        "chosen_min_score": chosen,
        "plateau": plateau,
        "main": main_rows,
        "heldout": floors(test, weights, [*grid, *([chosen] if chosen else [])]),
        "command": "python -m eval.abstention " + " ".join(argv or sys.argv[1:]),
    }
    print(f"weights (cosine, personal, bias): {report['weights']}  from {report['fit_pairs']} pairs")
    print(f"floors with the best main-set abstention and no answer lost: {plateau} -> min_score {chosen}")
    print("| set | min_score | abstention | answer kept | rank-1 correct |\n|---|---|---|---|---|")
    for name in ("main", "heldout"):
        for row in report[name]:
            cells = [name, row["min_score"], row["abstention"], row["answer_kept"], row["rank1_correct"]]
            print("| " + " | ".join(str(c) for c in cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
