"""The arithmetic of ``eval.extraction_locomo``: the match and support rules, coverage and
precision, recall through a fact's source turns, the threshold fit, the turn mapping and the
gold extractor. No network, no LLM; the one LoCoMo check skips without the data."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from eval.extraction_locomo import (
    LABELS,
    Fact,
    GoldExtractor,
    Observation,
    choose_threshold,
    coverage_precision,
    first_rank,
    map_turns,
    match_matrix,
    names_someone,
    observations,
    recall_at,
    support_score,
    supported,
)
from eval.retrieval import Turn, load
from mem_pipeline.models import Message

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
WHEN = datetime(2023, 5, 8, tzinfo=timezone.utc)


def _obs(oid: str, *dias: str) -> Observation:
    return Observation(oid, 1, "A", oid, frozenset(dias))


def _fact(key: str, *dias: str) -> Fact:
    return Fact(key=key, session=1, text=key, dia_ids=frozenset(dias))


def test_a_match_needs_a_shared_source_turn_and_the_cosine() -> None:
    facts = [_fact("f0", "D1:1"), _fact("f1", "D1:2"), _fact("f2")]
    obs = [_obs("o0", "D1:1"), _obs("o1", "D1:2", "D1:3")]
    sims = np.array([[0.9, 0.9], [0.9, 0.5], [0.9, 0.9]])
    m = match_matrix(facts, obs, sims, threshold=0.6)
    # f0: same turn as o0 and similar; o1 similar but another turn. f1: o1's turn, too far.
    # f2 cites no turn: it matches nothing however similar
    assert m.tolist() == [[True, False], [False, False], [False, False]]


def test_coverage_counts_observations_and_precision_counts_facts() -> None:
    match = np.array([[True, False, False], [True, False, False], [False, False, False]])
    out = coverage_precision(match, supported([0.2, -1.0, 0.7], threshold=0.5))
    assert out["observation_coverage"] == pytest.approx(1 / 3, abs=1e-4)
    assert out["precision_observed"] == pytest.approx(2 / 3, abs=1e-4)
    assert out["precision"] == 1.0  # the third fact is supported by its turn
    assert out["supported_only"] == 1
    empty = coverage_precision(np.zeros((0, 2), dtype=bool), [])
    assert empty["observation_coverage"] == 0.0 and empty["precision"] is None


def test_support_needs_a_named_person_and_a_cited_turn() -> None:
    assert names_someone("melanie paints.", ["Caroline", "Melanie"])
    assert not names_someone("You're doing amazing!", ["Caroline", "Melanie"])
    assert support_score(0.8, named=True) == 0.8
    assert support_score(0.8, named=False) == -1.0 and support_score(None, named=True) == -1.0


def test_a_fact_hit_counts_through_its_source_turns() -> None:
    hits = [{"D1:9"}, set(), {"D1:2", "D1:3"}]  # a turn, a fact with no sources, a fact
    assert first_rank(hits, ["D1:3"]) == 3
    assert first_rank(hits, ["D2:1"]) is None
    assert recall_at([1, 3, None, 7], ks=(1, 5, 10)) == {"R@1": 0.25, "R@5": 0.5, "R@10": 0.75}
    assert recall_at([], ks=(5,)) == {"R@5": None}


def test_the_threshold_fit_picks_the_best_agreement() -> None:
    scores = [0.9, 0.8, 0.72, 0.5, 0.3, -1.0]
    labels = [True, True, False, False, False, False]
    t, agreement = choose_threshold(scores, labels)
    assert 0.75 <= t <= 0.8 and agreement == 1.0


def test_stored_turns_map_to_dia_ids_in_order_past_small_talk() -> None:
    turns = [
        Turn(f"D1:{i}", "A", text, 1, WHEN)
        for i, text in enumerate(["Hi!", "I moved to Leeds.", "Hi!", "I like tea."], start=1)
    ]
    stored = [("t1", "I moved to Leeds."), ("t2", "I like tea."), ("t9", "never said")]
    dias, missing = map_turns(stored, turns)
    assert dias == {"t1": {"D1:2"}, "t2": {"D1:4"}} and missing == 1
    # an exact repeat stored once: the same id for both of its dia_ids
    dias, _ = map_turns([("t1", "Hi!"), ("t1", "Hi!")], turns)
    assert dias == {"t1": {"D1:1", "D1:3"}}


def test_the_gold_extractor_cites_the_messages_of_its_dia_ids() -> None:
    gold = GoldExtractor()
    gold.obs = [
        Observation("1:A:0", 1, "A", "A moved to Leeds.", frozenset({"D1:2"})),
        Observation("1:A:1", 1, "A", "A lives abroad.", frozenset({"D1:7"})),
    ]
    gold.dia_ids = ["D1:1", "D1:2"]
    msgs = [Message(role="user", name="A", content="Hi"), Message(role="user", name="A", content="x")]
    out = gold.extract(msgs, WHEN)
    assert [(f.text, f.source_turns, f.subject) for f in out.facts] == [("A moved to Leeds.", [1], "A")]
    assert out.llm_calls == 0


def test_observations_read_lists_and_fix_id_typos() -> None:
    raw = {
        "observation": {
            "session_2_observation": {"B": [["B has a cat.", "D2:05"], ["B walks.", ["D2:1", "D2:3"]]]}
        }
    }
    got = observations(raw, [1, 2])
    assert [(o.id, sorted(o.dia_ids)) for o in got] == [("2:B:0", ["D2:5"]), ("2:B:1", ["D2:1", "D2:3"])]


def test_the_labelled_pairs_hold_ids_and_labels_only() -> None:
    for line in LABELS.read_text().splitlines():
        item = json.loads(line)
        assert set(item) <= {"extractor", "fact", "sha", "obs", "match", "supported", "stratum", "labeller"}
        assert ("match" in item) != ("supported" in item)


@pytest.mark.skipif(not DATA.exists(), reason="LoCoMo dev data not at ../shared/data/locomo")
def test_locomo_observations_cite_turns_of_their_session() -> None:
    raw = json.loads(DATA.read_text())
    conv = load(DATA, ["conv-26"])[0]
    dias = {t.dia_id for t in conv.turns}
    obs = observations(next(c for c in raw if c["sample_id"] == "conv-26"), range(1, 40))
    assert len(obs) > 100
    assert sum(1 for o in obs if o.dia_ids <= dias) / len(obs) > 0.98
