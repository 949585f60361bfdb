"""Evidence-recall evaluation over LoCoMo-format conversations (LoCoMo itself, or our own set).

Shared by ``eval.locomo`` (the retrieval benchmark) and the QA slice script. Reads the data by
path; nothing of LoCoMo is copied into the repository.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime
    caption: str | None = None


@dataclass
class Question:
    question: str
    answer: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]

    @property
    def last_time(self) -> datetime:
        return max(t.when for t in self.turns)


def parse_when(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (and "10:00 am on 3 January, 2026")."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


_EVID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalize_evidence(items: Iterable[Any]) -> list[str]:
    """Fix LoCoMo's id typos: "D8:6; D9:17" -> two ids, "D:11:26" -> "D11:26", "D30:05" -> "D30:5"."""
    out: list[str] = []
    for item in items:
        for m in _EVID.finditer(str(item)):
            ident = f"D{int(m.group(1))}:{int(m.group(2))}"
            if ident not in out:
                out.append(ident)
    return out


def load(path: str | Path, only: Sequence[str] | None = None) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    convs = []
    for c in data:
        if only and c["sample_id"] not in only:
            continue
        conv = c["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            when = parse_when(conv[f"session_{n}_date_time"])
            for i, t in enumerate(conv[f"session_{n}"]):
                # turns of one session share its date; keep their order with a second each
                turns.append(
                    Turn(
                        dia_id=normalize_evidence([t["dia_id"]])[0],
                        speaker=t["speaker"],
                        text=t["text"],
                        session=n,
                        when=when + timedelta(seconds=i),
                        caption=t.get("blip_caption"),
                    )
                )
            n += 1
        qs = [
            Question(
                question=q["question"],
                answer=str(q.get("answer", "")),
                evidence=normalize_evidence(q.get("evidence", [])),
                category=int(q["category"]),
            )
            for q in c["qa"]
            if int(q["category"]) in CATEGORY_NAMES
        ]
        convs.append(Conversation(c["sample_id"], (conv["speaker_a"], conv["speaker_b"]), turns, qs))
    return convs


@dataclass
class Scores:
    """Per-question results; summarised by :meth:`summary`."""

    ks: Sequence[int]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, q: Question, ranked_ids: Sequence[str], ms: float, conv: str = "") -> None:
        gold = set(q.evidence)
        rank = next((i + 1 for i, d in enumerate(ranked_ids) if d in gold), None)
        self.rows.append(
            {
                "conv": conv,
                "category": q.category,
                "rank": rank,
                "ms": ms,
                **{f"R@{k}": int(rank is not None and rank <= k) for k in self.ks},
            }
        )

    def subset(self, convs: Sequence[str]) -> Scores:
        """The rows of these conversations only (e.g. a tuning or a held-out split)."""
        return Scores(self.ks, [r for r in self.rows if r.get("conv") in convs])

    def summary(self) -> dict[str, Any]:
        def block(rows: list[dict[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = (
                {f"R@{k}": round(statistics.fmean(r[f"R@{k}"] for r in rows), 4) for k in self.ks}
                if rows
                else {}
            )
            if rows:
                out["MRR"] = round(statistics.fmean(1 / r["rank"] if r["rank"] else 0.0 for r in rows), 4)
            out["n"] = len(rows)
            return out

        overall = block(self.rows)
        ms = sorted(r["ms"] for r in self.rows)
        return {
            "recall": {k: v for k, v in overall.items() if k.startswith("R@")},
            "mrr": overall.get("MRR"),
            "by_category": {
                str(c): block([r for r in self.rows if r["category"] == c])
                for c in sorted({r["category"] for r in self.rows})
            },
            "by_conversation": {
                c: block([r for r in self.rows if r.get("conv") == c])
                for c in dict.fromkeys(r.get("conv", "") for r in self.rows)
            },
            "questions": len(self.rows),
            "search_ms_p50": round(_pct(ms, 50), 2) if ms else None,
            "search_ms_p95": round(_pct(ms, 95), 2) if ms else None,
        }


def _pct(sorted_values: Sequence[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t) * 1000


def paired_bootstrap(
    a: Scores, b: Scores, ks: Sequence[int], *, n: int = 2000, seed: int = 0
) -> dict[str, dict[str, dict[str, float]]]:
    """Mean difference a - b of R@k and of MRR per category (and "all"), with a 95% paired
    bootstrap interval (questions resampled with replacement, same draw for both systems)."""
    import random

    rng = random.Random(seed)
    assert len(a.rows) == len(b.rows)
    groups: dict[str, list[int]] = {"all": list(range(len(a.rows)))}
    for i, r in enumerate(a.rows):
        groups.setdefault(str(r["category"]), []).append(i)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, idx in sorted(groups.items()):
        out[name] = {}

        def rr(row: dict[str, Any]) -> float:
            return 1 / row["rank"] if row["rank"] else 0.0

        metrics: list[tuple[str, Callable[[dict[str, Any]], float]]] = [
            *((f"R@{k}", lambda row, k=k: float(row[f"R@{k}"])) for k in ks),
            ("MRR", rr),
        ]
        for metric, value in metrics:
            d = [value(a.rows[i]) - value(b.rows[i]) for i in idx]
            means = sorted(statistics.fmean(rng.choices(d, k=len(d))) for _ in range(n))
            out[name][metric] = {
                "diff": round(statistics.fmean(d), 4),
                "lo": round(means[int(0.025 * n)], 4),
                "hi": round(means[int(0.975 * n) - 1], 4),
            }
    return out


def recall_rows(out: dict[str, Any]) -> list[str]:
    """The Markdown rows of a recall result: a header, one row per question category, all."""
    ks = [k for k in out["recall"]]
    lines = ["| category | n | " + " | ".join(ks) + " | MRR |", "|---|---|" + "---|" * (len(ks) + 1)]
    for cat, row in out["by_category"].items():
        name = CATEGORY_NAMES.get(int(cat), cat)
        lines.append(
            f"| {cat} {name} | {row['n']} | "
            + " | ".join(f"{row[k]:.3f}" for k in ks)
            + f" | {row['MRR']:.3f} |"
        )
    lines.append(
        f"| **all** | {out['questions']} | "
        + " | ".join(f"**{out['recall'][k]:.3f}**" for k in ks)
        + f" | {out['mrr']:.3f} |"
    )
    return lines
