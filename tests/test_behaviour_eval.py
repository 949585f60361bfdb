"""The behaviour benchmark's data and its own arithmetic (no model is loaded here).

The pipeline's scores are not asserted: they are what the benchmark measures, and they change.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from eval.behaviour import (
    KINDS,
    DataError,
    block_items,
    exchanges,
    judge_probe,
    judge_store,
    load_scenarios,
    main,
    markdown_table,
    summarize,
    validate_scenario,
)
from mem_pipeline import Category, Hit, Recall

DATA = Path(__file__).resolve().parent.parent / "eval" / "data"
MAIN, HELDOUT = DATA / "behaviour", DATA / "behaviour_heldout"


@pytest.fixture(scope="module")
def main_set() -> list[dict[str, Any]]:
    return load_scenarios(MAIN)


@pytest.fixture(scope="module")
def heldout_set() -> list[dict[str, Any]]:
    return load_scenarios(HELDOUT)


def test_the_main_set_has_at_least_60_scenarios_and_7_of_each_kind(main_set: list[dict[str, Any]]) -> None:
    assert len(main_set) >= 60
    counts = Counter(s["kind"] for s in main_set)
    assert {k: counts[k] for k in KINDS if counts[k] < 7} == {}


def test_the_heldout_set_is_separate_and_covers_every_kind(
    main_set: list[dict[str, Any]], heldout_set: list[dict[str, Any]]
) -> None:
    assert len(heldout_set) >= 15
    assert {s["kind"] for s in heldout_set} == set(KINDS)
    assert not {s["id"] for s in main_set} & {s["id"] for s in heldout_set}
    # written apart: no user turn of the held-out set is copied from the main set
    said = {t["content"].lower() for s in main_set for t in s["turns"] if t["role"] == "user"}
    assert not [t["content"] for s in heldout_set for t in s["turns"] if t["content"].lower() in said]


def test_every_probe_has_an_expectation_and_every_scenario_checks_something(
    main_set: list[dict[str, Any]], heldout_set: list[dict[str, Any]]
) -> None:
    for s in main_set + heldout_set:
        assert 1 <= len(s["turns"]) <= 8, s["id"]
        for p in s.get("probes", []):
            assert p.get("expect_top") or p.get("stale") or p.get("expect_empty") is True, s["id"]
        assert validate_scenario({k: v for k, v in s.items() if k != "_file"}) == [], s["id"]


def test_small_talk_stores_nothing_and_abstention_asks_unrelated_questions(
    main_set: list[dict[str, Any]],
) -> None:
    for s in main_set:
        if s["kind"] == "smalltalk":
            assert s["store"]["max_facts"] == 0, s["id"]
        if s["kind"] == "abstention":
            assert any(p.get("expect_empty") for p in s["probes"]), s["id"]
            assert any(p.get("expect_top") for p in s["probes"]), s["id"]  # precision needs both
        if s["kind"] == "assistant":
            assert s.get("note"), s["id"]


def _scenario(**over: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "id": "x-001",
        "kind": "correction",
        "turns": [{"role": "user", "content": "I live in Lisbon.", "at": "2026-03-01T09:00:00+00:00"}],
        "probes": [{"query": "Where?", "at": "2026-03-02T09:00:00+00:00", "expect_top": ["Lisbon"]}],
    }
    s.update(over)
    return s


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "gossip"}, "kind 'gossip'"),
        ({"turns": [{"role": "user", "content": "hi", "at": "2026-03-01 09:00"}]}, "no time zone"),
        ({"turns": [{"role": "user", "content": "hi", "at": "yesterday"}]}, "turn 0"),
        ({"probes": [{"query": "Where?", "at": "2026-03-02T09:00:00+00:00"}]}, "no expectation"),
        (
            {"probes": [{"query": "Q", "at": "2026-03-02T09:00:00Z", "expect_empty": True, "stale": ["a"]}]},
            "cannot go with",
        ),
        ({"probes": [{"query": "Q", "at": "2026-02-01T09:00:00Z", "stale": ["a"]}]}, "before the last turn"),
        ({"probes": [{"query": "Q", "at": "2026-03-02T09:00:00Z", "expect-top": ["a"]}]}, "unknown keys"),
        ({"store": {"categories": [{"contains": "x", "category": ["hobby"]}]}}, "must be among"),
        ({"store": {"max_facts": -1}}, "max_facts"),
        ({"kind": "category"}, "note"),
        ({"probes": []}, "nothing is checked"),
    ],
)
def test_validation_names_what_is_wrong(change: dict[str, Any], message: str) -> None:
    errors = validate_scenario(_scenario(**change))
    assert any(message in e for e in errors), errors


def test_a_valid_scenario_passes_and_z_timestamps_parse() -> None:
    probe = {"query": "Where?", "at": "2026-03-02T09:00:00Z", "expect_top": ["Lisbon"], "stale": ["Rome"]}
    assert validate_scenario(_scenario(probes=[probe], store={"must_store": [["Lisbon", "Lisboa"]]})) == []


def test_loading_fails_on_duplicate_ids_and_main_exits_2(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([_scenario()]))
    (tmp_path / "b.json").write_text(json.dumps([_scenario()]))
    with pytest.raises(DataError, match=r"also used in a\.json"):
        load_scenarios(tmp_path)
    assert main(["--data", str(tmp_path)]) == 2
    (tmp_path / "b.json").write_text("{not json")
    with pytest.raises(DataError, match="not readable JSON"):
        load_scenarios(tmp_path)


def _turn(role: str, at: str, text: str = "x") -> dict[str, str]:
    return {"role": role, "content": text, "at": at}


def test_a_user_turn_is_added_with_the_assistant_turn_just_before_it_on_the_same_day() -> None:
    turns = [
        _turn("user", "2026-03-01T09:00:00+00:00", "I want a trip."),
        _turn("assistant", "2026-03-01T09:00:05+00:00", "Maybe Rome?"),
        _turn("user", "2026-03-01T09:01:00+00:00", "Yes, book it."),
        _turn("assistant", "2026-03-01T09:01:05+00:00", "Booked."),
        _turn("user", "2026-03-04T10:00:00+00:00", "Back home."),  # another day: not paired
        _turn("assistant", "2026-03-04T10:00:05+00:00", "Welcome back!"),
        _turn("assistant", "2026-03-04T10:00:06+00:00", "Anything else?"),
    ]
    calls = exchanges(turns)
    assert [([m["content"] for m in msgs], at[:10]) for msgs, at in calls] == [
        (["I want a trip."], "2026-03-01"),
        (["Maybe Rome?", "Yes, book it."], "2026-03-01"),
        (["Booked."], "2026-03-01"),
        (["Back home."], "2026-03-04"),
        (["Welcome back!"], "2026-03-04"),
        (["Anything else?"], "2026-03-04"),
    ]
    assert calls[1][1] == "2026-03-01T09:01:00+00:00"  # the user turn's time
    assert calls[1][0][0] == {"role": "assistant", "content": "Maybe Rome?"}


def _hit(text: str, score: float) -> Hit:
    at = datetime(2026, 3, 1, tzinfo=timezone.utc)
    return Hit(
        id=text[:8],
        text=text,
        score=score,
        source="semantic",
        category=Category.OTHER,
        concepts=[],
        metadata={},
        created_at=at,
    )


def test_block_items_reads_back_the_rendered_texts() -> None:
    texts = ['She said "hi" & left <fast>', "I live in Porto."]
    block = Recall(query="q", hits=[_hit(texts[0], 0.9), _hit(texts[1], 0.5)]).to_prompt()
    assert block_items(block) == texts
    assert block_items(Recall(query="q", hits=[]).to_prompt()) == []


def test_judge_probe_rank1_stale_and_empty() -> None:
    probe = {"query": "Where?", "expect_top": ["Porto"], "stale": ["Lisbon"]}
    ok = judge_probe(probe, "I moved to porto.", ["I moved to porto.", "I moved from Lisbon to Porto."])
    assert ok["rank1_ok"] is True and ok["stale_in_block"] is False  # states the current value
    bad = judge_probe(probe, "I live in Lisbon.", ["I live in Lisbon.", "Moved to Porto."])
    assert bad["rank1_ok"] is False and bad["stale_in_block"] is True
    assert bad["stale_items"] == ["I live in Lisbon."]
    assert judge_probe(probe, None, [])["rank1_ok"] is False
    empty = judge_probe({"query": "asdf", "expect_empty": True}, None, [])
    assert empty["empty"] and empty["expect_empty"] and empty["rank1_ok"] is None
    assert empty["stale_in_block"] is None
    assert not judge_probe({"query": "asdf", "expect_empty": True}, "x", ["x"])["empty"]


def test_judge_store_kept_alternatives_suggestions_max_and_categories() -> None:
    store = {
        "must_store": ["vegan", ["two cats", "2 cats"], "Porto"],
        "must_not_store": ["Rome", "pottery"],
        "max_facts": 1,
        "categories": [
            {"contains": "vegan", "category": ["preference"]},
            {"contains": ["cats", "kittens"], "category": ["other", "relationship"]},
            {"contains": "Porto", "category": ["biography"]},
        ],
    }
    facts = [("The user is VEGAN.", "health"), ("Has 2 cats", "other"), ("Flying to Rome", "plan")]
    out = judge_store(store, facts)
    assert [k["found"] for k in out["kept"]] == [True, True, False]
    assert out["must_not_store_found"] == ["Rome"] and out["must_not_store_n"] == 2
    assert out["over_max"] is True and out["n_facts"] == 3
    assert [c["ok"] for c in out["categories"]] == [False, True, None]  # None: not stored
    assert judge_store({}, facts)["over_max"] is None


def _result(
    kind: str, probes: list[dict[str, Any]], store: dict[str, Any], pending: int = 0
) -> dict[str, Any]:
    return {"kind": kind, "probes": probes, "store": store, "pending": pending}


def _p(
    rank1: bool | None = None, stale: bool | None = None, empty: bool = False, expect_empty: bool = False
) -> dict[str, Any]:
    return {"rank1_ok": rank1, "stale_in_block": stale, "empty": empty, "expect_empty": expect_empty}


def _st(
    kept: tuple[bool, ...] = (),
    nots: int = 0,
    found: tuple[str, ...] = (),
    over: bool | None = None,
    cats: tuple[bool | None, ...] = (),
) -> dict[str, Any]:
    return {
        "kept": [{"entry": "e", "found": k} for k in kept],
        "must_not_store_n": nots,
        "must_not_store_found": list(found),
        "over_max": over,
        "n_facts": 0,
        "categories": [{"ok": c} for c in cats],
    }


def test_summarize_counts_each_metric_per_kind_and_overall() -> None:
    results = [
        _result("correction", [_p(rank1=True, stale=True), _p(rank1=False, stale=False)], _st(kept=(True,))),
        _result(
            "abstention", [_p(empty=True, expect_empty=True), _p(expect_empty=True), _p(rank1=True)], _st()
        ),
        _result("short", [_p(rank1=False, empty=True)], _st(kept=(False, True)), pending=1),
        _result("smalltalk", [], _st(over=True)),
        _result("smalltalk", [], _st(over=False)),
        _result("assistant", [], _st(nots=2, found=("Rome",))),
        _result("category", [], _st(cats=(True, False, None))),
    ]
    s = summarize(results)
    assert list(s) == ["correction", "abstention", "smalltalk", "short", "assistant", "category", "overall"]
    o = s["overall"]
    assert o["scenarios"] == 7 and o["probes"] == 6 and o["pending"] == 1
    assert (o["rank1"]["k"], o["rank1"]["n"]) == (2, 4)
    assert (o["stale"]["k"], o["stale"]["n"]) == (1, 2)
    assert (o["abst_recall"]["k"], o["abst_recall"]["n"]) == (1, 2)
    # two probes got an empty block, one of them expected it
    assert (o["abst_precision"]["k"], o["abst_precision"]["n"]) == (1, 2)
    assert o["abst_precision"]["share"] == 0.5
    assert (o["smalltalk_stored"]["k"], o["smalltalk_stored"]["n"]) == (1, 2)
    assert (o["kept"]["k"], o["kept"]["n"]) == (2, 3)
    assert (o["suggestions_stored"]["k"], o["suggestions_stored"]["n"]) == (1, 2)
    assert (o["category"]["k"], o["category"]["n"]) == (1, 2) and o["category_missing"] == 1
    assert s["short"]["abst_precision"] == {"k": 0, "n": 1, "share": 0.0}
    assert s["smalltalk"]["rank1"] == {"k": 0, "n": 0, "share": None}


def test_markdown_table_has_a_row_per_kind_and_a_dash_where_untested() -> None:
    s = summarize([_result("correction", [_p(rank1=True)], _st())])
    table = markdown_table(s).splitlines()
    assert table[0].startswith("| kind | scenarios | rank-1 correct ↑ | stale in block ↓")
    assert table[2].startswith("| correction | 1 | 1.00 (1/1) | – |")
    assert table[3].startswith("| **overall** | 1 | 1.00 (1/1) |")


def test_an_item_saying_the_stale_value_ended_is_not_stale() -> None:
    probe = {"query": "Where do I work?", "expect_top": ["Pennylane"], "stale": ["Deloitte"]}
    ended = judge_probe(probe, "I quit my job at Deloitte.", ["I quit my job at Deloitte."])
    assert ended["stale_in_block"] is False
    still = judge_probe(probe, "I work at Deloitte.", ["I work at Deloitte."])
    assert still["stale_in_block"] is True and still["rank1_ok"] is False
    gym = {"query": "Where do I exercise?", "expect_top": ["swim"], "stale": ["PureGym"]}
    for item in ("I cancelled my PureGym membership.", "PureGym didn't work out."):
        assert judge_probe(gym, "I swim now.", ["I swim now.", item])["stale_in_block"] is False
    assert judge_probe(gym, "I swim now.", ["I swim now.", "I go to PureGym."])["stale_in_block"] is True
