"""A plan or an event by when it is (``write.categories.timed``): what happened is an event,
what is ahead a plan, whatever the word rules or the model said."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.models import Category
from mem_pipeline.write.categories import timed

NOW = datetime(2026, 6, 24, 16, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("given", "text", "want"),
    [
        (Category.PLAN, "Passed my driving test on 24 June 2026!!!", Category.EVENT),  # today, done
        (Category.PLAN, "My son took his first steps on 23 June 2026", Category.EVENT),
        (Category.EVENT, "Taking my gran for afternoon tea at the Ritz on Sunday", Category.PLAN),
        (Category.EVENT, "My mum is flying in from Durban on the 3rd", Category.PLAN),
        (Category.EVENT, "We'll be in Lisbon next week", Category.PLAN),
        # a weekday said as "last Saturday" is written with its date: the date says it is past
        (Category.PLAN, "Passed my karate brown belt grading on Saturday 20 June 2026!", Category.EVENT),
        # left as they are
        (Category.PLAN, "My flight to Rome is on 3 July 2026", Category.PLAN),  # ahead
        (Category.PLAN, "The boiler service is booked for the 3rd of April", Category.PLAN),  # no year
        (Category.EVENT, "I went hiking on Sunday", Category.EVENT),  # a past verb
        (Category.EVENT, "I ran the Valencia half marathon on 21 June 2026", Category.EVENT),
        (Category.HEALTH, "I will start physio on 1 July 2026", Category.HEALTH),  # not a plan or event
    ],
)
def test_a_plan_or_an_event_by_when_it_is(given: Category, text: str, want: Category) -> None:
    assert timed(given, text, NOW) is want


def test_the_offline_extractor_files_what_happened_as_an_event(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m.add([{"role": "user", "content": "passed my driving test yesterday!!"}], user_id="u", timestamp=NOW)
        m.add(
            [{"role": "user", "content": "my mum is flying in from Durban on the 3rd"}],
            user_id="u",
            timestamp=NOW + timedelta(minutes=1),
        )
        got = {f.text: f.category for f in m.get_all(user_id="u") if f.kind == "fact"}
        assert got["Passed my driving test on 23 June 2026!!"] is Category.EVENT
        assert [c for t, c in got.items() if "Durban" in t] == [Category.PLAN]
