"""What the user settled with the assistant ranks before what they said to start it
(``read.rank.agreed_first``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from mem_pipeline import Memory, MemoryConfig

T0 = datetime(2026, 5, 4, 19, tzinfo=timezone.utc)
CHAT = [
    {"role": "user", "content": "I need new hiking boots, my old ones split at the sole."},
    {
        "role": "assistant",
        "content": "The Scarpa Rush Mid is light and grippy. Want me to order a pair in your size?",
    },
    {"role": "user", "content": "yes go for it"},
]


def _top(tmp_path: Path, share: float, query: str) -> str:
    with Memory(MemoryConfig(path=str(tmp_path / f"s{share}"), agreed_first=share)) as m:
        m.add(CHAT[:1], user_id="u", timestamp=T0)
        # three hours on: past the hour in which the reply would carry the statement on
        m.add(CHAT[1:], user_id="u", timestamp=T0 + timedelta(hours=3))
        hits = m.search(query, user_id="u", now=T0 + timedelta(days=3)).hits
        assert hits
        return hits[0].text


def test_the_proposal_taken_up_answers_before_the_need_that_started_it(tmp_path: Path) -> None:
    top = _top(tmp_path, 0.5, "which hiking boots did I get?")
    assert top.startswith("I agreed:") and "Scarpa" in top
    # off, the need (worded like the question) comes first
    assert _top(tmp_path, 0.0, "which hiking boots did I get?").startswith("I need new hiking boots")


def test_a_proposal_taken_up_days_later_does_not_jump_the_queue(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m.add(CHAT[:1], user_id="u", timestamp=T0)
        m.add(CHAT[1:], user_id="u", timestamp=T0 + timedelta(days=4))
        hits = m.search("which hiking boots did I get?", user_id="u", now=T0 + timedelta(days=6)).hits
        assert hits and hits[0].text.startswith("I need new hiking boots")
