"""The learned second opinion on what is worth remembering (``write.memorable``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from mem_pipeline.write.memorable import WEIGHTS, MemorableFilter, exempt, load_weights

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


class _Axis:
    """Embeds a text on one axis: 1 when it says "keep", else -1 (a fixed, known model)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[1.0 if "keep" in t else -1.0] for t in texts], dtype=np.float32)


def test_it_only_drops_below_its_threshold_never_what_a_rule_knows() -> None:
    weights = {"model_id": "axis", "w": [4.0], "b": 0.0, "threshold": 0.5}
    f = MemorableFilter(_Axis(), "axis", weights)
    assert f.drop(["ugh what a day", "keep this one", "I live in Leeds", "Due in October."]) == [
        True,
        False,
        False,  # a slot: the rules know it
        False,  # a date
    ]
    assert f.keep_probability(["keep"])[0] > 0.98
    # weights for another embedder: never drops
    assert MemorableFilter(_Axis(), "another-model", weights).drop(["ugh what a day"]) == [False]
    assert exempt("Sold the Civic last week.") and exempt("Allergic to shellfish")
    assert not exempt("Hmm, let me think about it.")


def test_the_shipped_weights_come_from_the_committed_data() -> None:
    weights = load_weights(WEIGHTS)
    assert weights is not None and len(weights["w"]) == 384  # type: ignore[arg-type]
    train = ROOT / "eval" / "data" / "memorable" / "train.jsonl"
    assert weights["train"]["sha256"] == hashlib.sha256(train.read_bytes()).hexdigest()  # type: ignore[index]
    report = json.loads((ROOT / "eval" / "results" / "memorable.json").read_text())
    assert abs(report["threshold"] - float(weights["threshold"])) < 1e-3  # type: ignore[arg-type]


def test_the_offline_path_drops_small_talk_the_word_lists_miss(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from mem_pipeline import Memory, MemoryConfig

    said = "Hmm, let me think about it. I'm vegan. I shall give it some thought."
    with Memory(MemoryConfig(path=str(tmp_path / "on"))) as m:
        m.add([{"role": "user", "content": said}], user_id="u", timestamp=NOW)
        assert [f.text for f in m.get_all(user_id="u") if f.kind == "fact"] == ["I'm vegan."]
    with Memory(MemoryConfig(path=str(tmp_path / "off"), memorable_filter=False)) as m:
        m.add([{"role": "user", "content": said}], user_id="u", timestamp=NOW)
        assert len([f for f in m.get_all(user_id="u") if f.kind == "fact"]) == 3


def test_the_category_model_comes_from_the_committed_data_and_labels_by_what_a_fact_says(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from mem_pipeline import Memory, MemoryConfig
    from mem_pipeline.models import Category
    from mem_pipeline.write.categories import CATEGORY_WEIGHTS

    weights = json.loads(CATEGORY_WEIGHTS.read_text())
    train = ROOT / "eval" / "data" / "categories" / "train.jsonl"
    assert weights["train"]["sha256"] == hashlib.sha256(train.read_bytes()).hexdigest()
    assert [Category(c) for c in weights["labels"]] == list(Category)
    said = "I teach myself the charango in the evenings. My sister Ana is a nurse. I own a narrowboat."
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m.add([{"role": "user", "content": said}], user_id="u", timestamp=NOW)
        got = {f.text: f.category for f in m.get_all(user_id="u") if f.kind == "fact"}
        model = m.extractor.categories  # type: ignore[attr-defined]
        assert model is not None
        free = ["I teach myself the charango in the evenings.", "I own a narrowboat."]
        assert [got[t] for t in free] == model.predict(free)  # the model's label, as it gives it
    assert got["I teach myself the charango in the evenings."] == Category.SKILL
    assert got["My sister Ana is a nurse."] == Category.RELATIONSHIP  # the slot's, before the model
    with Memory(MemoryConfig(path=str(tmp_path / "off"), category_model=False)) as m:
        assert m.extractor.categories is None  # type: ignore[attr-defined]
