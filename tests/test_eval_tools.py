"""The recall evaluation's own arithmetic: evidence ids, recall@k, MRR and the paired bootstrap.

The figures in README come from these functions, so they are tested like the library is.
"""

from __future__ import annotations

import pytest

from eval.retrieval import Question, Scores, normalize_evidence, paired_bootstrap


def test_locomo_evidence_typos_are_normalised() -> None:
    assert normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D8:6"]) == [
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
    ]


def _scores(ranks: list[int | None], ks: tuple[int, ...] = (1, 5)) -> Scores:
    s = Scores(ks)
    for i, rank in enumerate(ranks):
        q = Question(question=f"q{i}", answer="", evidence=["gold"], category=1 + i % 2)
        ranked = [f"x{j}" for j in range(10)]
        if rank is not None:
            ranked[rank - 1] = "gold"
        s.add(q, ranked, ms=1.0, conv="c")
    return s


def test_recall_and_mrr_count_the_first_gold_hit() -> None:
    out = _scores([1, 3, None, 6]).summary()
    assert out["recall"] == {"R@1": 0.25, "R@5": 0.5}
    assert out["mrr"] == pytest.approx(round((1 + 1 / 3 + 0 + 1 / 6) / 4, 4))
    assert out["by_category"]["1"]["n"] == 2


def test_paired_bootstrap_reports_the_paired_difference_with_an_interval() -> None:
    on = _scores([1, 1, 2, 9, 1, 4])
    off = _scores([1, 3, 2, 9, 2, 4])  # "on" is as good or better on every question
    diff = paired_bootstrap(on, off, [1, 5], n=500, seed=3)["all"]
    assert diff["R@1"]["diff"] == pytest.approx(round(2 / 6, 4))
    assert diff["R@5"]["diff"] == 0.0
    assert diff["R@5"]["lo"] == diff["R@5"]["hi"] == 0.0
    assert diff["MRR"]["diff"] == pytest.approx(round(((1 - 1 / 3) + (1 - 1 / 2)) / 6, 4))
    # no question is worse with "on", so no resample can make the mean negative
    assert 0.0 <= diff["R@1"]["lo"] <= diff["R@1"]["diff"] <= diff["R@1"]["hi"]
    assert diff["MRR"]["lo"] >= 0.0
    swapped = paired_bootstrap(off, on, [1, 5], n=500, seed=3)["all"]
    assert swapped["MRR"]["diff"] == -diff["MRR"]["diff"]
