"""Grounding reads the same speaker's neighbouring turns when the cited ones fall short, and
nobody else's; and whatever the extractor, a stored fact's dates are absolute."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.models import ExtractedFact, Message
from mem_pipeline.write.extract import Extraction
from mem_pipeline.write.ground import ground, widen

CHAT = [
    Message(role="user", name="Caroline",
            content="I went to a LGBTQ support group yesterday and it was so powerful."),
    Message(role="user", name="Melanie", content="Wow, that sounds great! What happened there?"),
    Message(role="user", name="Caroline", content="The transgender stories were so inspiring!"),
    Message(role="user", name="Melanie", content="My kids loved the museum and the dinosaur exhibit."),
]
FACT = "Caroline went to an LGBTQ support group and found the transgender stories inspiring."
NAMES = ["Caroline", "Melanie"]


def test_a_fact_over_two_turns_of_one_speaker_rests_on_both() -> None:
    assert ground(FACT, [CHAT[0].content], speakers=NAMES) is not None  # the cited turn alone: no
    assert widen(FACT, CHAT, [0], speakers=NAMES) == [0, 2]  # her next turn completes it


def test_the_other_speakers_turns_and_the_assistants_support_nothing() -> None:
    invented = "Caroline went to an LGBTQ support group and loved the dinosaur exhibit at the museum."
    assert widen(invented, CHAT, [0], speakers=NAMES) is None  # those words are Melanie's
    chat = [
        Message(role="user", content="I need a new hobby for the winter."),
        Message(role="assistant", content="How about bouldering at the climbing gym?"),
        Message(role="user", content="Maybe, I'll think about it."),
    ]
    assert widen("The user took up bouldering at the climbing gym for the winter.", chat, [0]) is None
    # a fact of words nobody said stays rejected, whatever turns are read
    assert widen("Caroline adopted a golden retriever named Biscuit.", CHAT, [0], speakers=NAMES) is None


class _Fixed:
    """An extractor that proposes the given facts (text, cited message indexes)."""

    name = "fixed"

    def __init__(self, facts: Sequence[tuple[str, list[int]]]) -> None:
        self.facts = facts

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        facts = [ExtractedFact(text=t, source_turns=s, subject="Caroline") for t, s in self.facts]
        return Extraction(facts=facts)


def test_add_keeps_the_widened_fact_with_its_turns_and_writes_its_dates_out() -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    extractor = _Fixed([(FACT, [0]), ("Caroline went to the support group yesterday.", [0]),
                        ("Caroline adopted a golden retriever named Biscuit.", [0])])
    with Memory(config=MemoryConfig(path=":memory:"), extractor=extractor) as mem:
        res = mem.add([m.model_dump() for m in CHAT], user_id="c", timestamp=when)
        assert res.widened == 1
        assert [e.text for e in res.rejected] == ["Caroline adopted a golden retriever named Biscuit."]
        facts = {f.text: f for f in mem.get_all(user_id="c") if f.kind == "fact"}
        turns = {f.id: f.text for f in mem.get_all(user_id="c") if f.kind == "turn"}
        assert sorted(turns[s] for s in facts[FACT].sources) == sorted([CHAT[0].content, CHAT[2].content])
        # the extractor wrote "yesterday"; what is stored is the day it means
        assert "Caroline went to the support group on 7 May 2023." in facts
