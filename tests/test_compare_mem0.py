"""The arithmetic of ``eval.compare_mem0`` (order, thresholds, percentiles, ratios, table).

mem0ai is not needed: these are the script's pure helpers, fed by hand-made results.
"""

from __future__ import annotations

import pytest

from eval.compare_mem0 import (
    first_order,
    latency,
    mem0_content,
    mem0_ranked,
    ratio,
    ratios,
    system_summary,
    table,
)
from eval.retrieval import Question, Scores, Turn


def test_the_first_system_alternates() -> None:
    assert [first_order(i) for i in range(3)] == [("mem0", "ours"), ("ours", "mem0"), ("mem0", "ours")]


def test_mem0_results_give_dia_ids_in_order_and_the_threshold_drops_low_scores() -> None:
    results = [
        {"score": 0.6, "metadata": {"dia_id": "D1:2"}},
        {"score": 0.1, "metadata": {"dia_id": "D3:1"}},
        {"score": 0.05, "metadata": {"dia_id": "D2:7"}},
        {"score": None, "metadata": None},
    ]
    assert mem0_ranked(results) == ["D1:2", "D3:1", "D2:7", ""]
    assert mem0_ranked(results, 0.1) == ["D1:2", "D3:1"]


def test_mem0_content_puts_the_speaker_before_the_text() -> None:
    from datetime import datetime, timezone

    turn = Turn("D1:1", "Ann", "I paint.", 1, datetime(2023, 5, 8, tzinfo=timezone.utc))
    assert mem0_content(turn) == "Ann: I paint."


def test_latency_percentiles_interpolate() -> None:
    out = latency([4.0, 1.0, 3.0, 2.0, 5.0])
    assert out == {"p50": 3.0, "p95": 4.8, "mean": 3.0, "n": 5}
    assert latency([]) == {"p50": None, "p95": None, "mean": None, "n": 0}


def test_ratio_is_ours_over_mem0_and_none_when_undefined() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(1.0, 0.0) is None
    assert ratio(None, 2.0) is None


def _summary(ranks: list[int | None], search: list[float], add: list[float]) -> dict[str, object]:
    s = Scores((5, 10, 20))
    for i, rank in enumerate(ranks):
        ranked = [f"x{j}" for j in range(20)]
        if rank is not None:
            ranked[rank - 1] = "gold"
        s.add(Question(f"q{i}", "", ["gold"], 1 + i % 4), ranked, ms=search[i], conv="c")
    return system_summary(s, search, add)


def test_ratios_and_table_of_two_systems() -> None:
    mem0 = _summary([1, 12, None, 7], [10.0, 20.0, 30.0, 40.0], [5.0, 5.0])
    ours = _summary([1, 3, 15, 2], [5.0, 10.0, 15.0, 20.0], [10.0, 10.0])
    r = ratios(ours, mem0)
    assert mem0["recall"] == {"R@5": 0.25, "R@10": 0.5, "R@20": 0.75}
    assert r["R@5"] == 3.0 and r["R@10"] == 1.5 and r["R@20"] == pytest.approx(1.333)
    assert r["search_p50"] == 0.5 and r["add_p50"] == 2.0
    out = {
        "systems": {"mem0": mem0, "mem0_no_threshold": mem0, "ours": ours},
        "ratios": r,
        "versions": {"mem0ai": "2.2.1"},
        "conversations": ["c"],
        "counts": {"turns": 2, "questions": 4},
        "elapsed_s": 1.0,
    }
    text = table(out)
    assert "| mem0ai 2.2.1 (default threshold 0.1) |" in text
    assert "| mem_pipeline | 0.750 | 0.750 | 1.000 | 12.5 |" in text
    assert "| **ours / mem0** | **3.00** | **1.50** | **1.33** | **0.50** |" in text
    assert "| 1 multi-hop | 1 | 1.000 | 1.000 |" in text
    assert "given 'Speaker: text'" in table({**out, "mem0_speaker_in_text": True})
