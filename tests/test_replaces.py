"""The learned "does this statement replace that stored fact?" (``write.replaces``)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.write.replaces import WEIGHTS, ReplaceModel, pair_features, related_features, rule_features

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _always(dims: int, vocabulary: list[str] | None = None) -> dict[str, Any]:
    """Weights of a model that says every pair it is asked about is a replacement (p ~ 1), so
    that what decides is what the writer asks it, and what it may not cross."""
    vocabulary = vocabulary or []
    n_change = len(rule_features("a", "b", 0.0)) + len(vocabulary) + dims
    return {
        "change": {"w": [0.0] * n_change, "b": 12.0},
        "related": {"w": [0.0] * (3 + dims), "b": 12.0},
        "threshold": 0.5,
        "vocabulary": vocabulary,
    }


def _facts(m: Memory) -> dict[str, bool]:
    return {f.text: f.is_valid for f in m.get_all(user_id="u", include_invalid=True) if f.kind == "fact"}


def _say(m: Memory, *texts: str) -> list[str]:
    """Each text added on a day of its own; the reasons of what the adds did."""
    reasons = []
    for k, t in enumerate(texts):
        result = m.add([{"role": "user", "content": t}], user_id="u", timestamp=NOW + timedelta(days=k))
        reasons += [e.reason or "" for e in result.events]
    return reasons


def test_features_are_pure_and_shaped_by_the_vocabulary() -> None:
    u = np.eye(4)[:2]
    v = np.eye(4)[[0, 2]]
    x = pair_features(
        ["I like tea", "I live in Leeds"],
        ["back on coffee", "moved to York"],
        u,
        v,
        {"back on": 0, "york": 1},
    )
    assert x.shape == (2, len(rule_features("a", "b", 0.0)) + 2 + 4)
    assert x[0, len(rule_features("a", "b", 0.0))] == 1.0  # "back on" said by the first
    assert x[1, len(rule_features("a", "b", 0.0)) + 1] == 1.0  # "york" by the second
    assert x[0, 0] == 1.0 and x[1, 0] == 0.0  # the cosine
    r = related_features(["I like tea"], ["back on coffee"], u[:1], v[:1])
    assert r.shape == (1, 3 + 4) and r[0, 0] == 1.0


def test_a_statement_in_other_words_supersedes_the_fact_it_replaces(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m._writer.replaces = ReplaceModel(m.parts.embed, _always(m.embedder.dimensions))
        reasons = _say(m, "My go-to snack is salted popcorn.", "Roasted chickpeas are my thing.")
        assert _facts(m) == {
            "My go-to snack is salted popcorn.": False,
            "Roasted chickpeas are my thing.": True,
        }
        assert any(r.startswith("learned: replaces it") for r in reasons)


def test_what_the_model_may_not_cross(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m._writer.replaces = ReplaceModel(m.parts.embed, _always(m.embedder.dimensions))
        # a fact whose slot the rules know is replaced by a statement of that slot, not the model
        _say(m, "I live in Graz.", "Since January I am a paramedic trainee at the Red Cross.")
        assert _facts(m)["I live in Graz."]
    with Memory(MemoryConfig(path=str(tmp_path / "t"))) as m:
        m._writer.replaces = ReplaceModel(m.parts.embed, _always(m.embedder.dimensions))
        # a reply that puts a question off, and a question, change nothing
        _say(
            m, "We're in Kyoto for five days with my partner Aiko.", "hmm dunno, let me check with Aiko first"
        )
        _say(m, "Is Kyoto nicer than Osaka in spring?")
        assert _facts(m)["We're in Kyoto for five days with my partner Aiko."]


def test_a_doubted_sentence_is_kept_when_it_replaces_a_fact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    said = (
        "Switched to soya milk, it's half the price at Lidl.",
        "Back on oat milk for good, missed it too much",
    )
    with Memory(MemoryConfig(path=str(tmp_path / "off"))) as m:
        _say(m, *said)
        assert list(_facts(m)) == [said[0]]  # the memorable filter doubts the second: dropped
    with Memory(MemoryConfig(path=str(tmp_path / "on"))) as m:
        m._writer.replaces = ReplaceModel(m.parts.embed, _always(m.embedder.dimensions))
        _say(m, *said)
        assert _facts(m) == {said[0]: False, said[1]: True}


def test_the_shipped_weights_come_from_the_committed_data(tmp_path) -> None:  # type: ignore[no-untyped-def]
    weights = json.loads(WEIGHTS.read_text())
    digest = hashlib.sha256()
    for name in weights["train"]["files"]:
        digest.update((ROOT / "eval" / "data" / "replaces" / name).read_bytes())
    assert weights["train"]["sha256"] == digest.hexdigest()
    report = json.loads((ROOT / "eval" / "results" / "train_replaces.json").read_text())
    assert abs(report["threshold"] - weights["threshold"]) < 1e-6
    with Memory(MemoryConfig(path=str(tmp_path / "s"), replace_model=True)) as m:
        assert m._writer.replaces is not None  # the default local embedder's weights
    with Memory(MemoryConfig(path=str(tmp_path / "t"))) as m:
        assert m._writer.replaces is None  # off by default (eval/README.md, "Behaviour")
