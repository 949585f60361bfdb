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
    Message(
        role="user",
        name="Caroline",
        content="I went to a LGBTQ support group yesterday and it was so powerful.",
    ),
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
    extractor = _Fixed(
        [
            (FACT, [0]),
            ("Caroline went to the support group yesterday.", [0]),
            ("Caroline adopted a golden retriever named Biscuit.", [0]),
        ]
    )
    with Memory(config=MemoryConfig(path=":memory:"), extractor=extractor) as mem:
        res = mem.add([m.model_dump() for m in CHAT], user_id="c", timestamp=when)
        assert res.widened == 1
        assert [e.text for e in res.rejected] == ["Caroline adopted a golden retriever named Biscuit."]
        facts = {f.text: f for f in mem.get_all(user_id="c") if f.kind == "fact"}
        turns = {f.id: f.text for f in mem.get_all(user_id="c") if f.kind == "turn"}
        assert sorted(turns[s] for s in facts[FACT].sources) == sorted([CHAT[0].content, CHAT[2].content])
        # the extractor wrote "yesterday"; what is stored is the day it means
        assert "Caroline went to the support group on 7 May 2023." in facts


def test_a_superseded_fact_takes_the_turn_that_says_it_not_the_one_that_completed_it() -> None:
    first = [
        Message(role="user", name="Caroline", content="I live in Boston and I love it."),
        Message(role="user", name="Melanie", content="Nice! What do you like most?"),
        Message(role="user", name="Caroline", content="The harbour views are great."),
    ]
    fact = "Caroline lives in Boston and loves the harbour views from her flat."
    extractor = _Fixed([(fact, [0])])
    with Memory(config=MemoryConfig(path=":memory:"), extractor=extractor) as mem:
        assert mem.add([m.model_dump() for m in first], user_id="c").widened == 1
        extractor.facts = [("Caroline moved to Denver.", [0])]
        moved = [Message(role="user", name="Caroline", content="Actually I moved to Denver now.")]
        res = mem.add([m.model_dump() for m in moved], user_id="c")
        assert res.events[0].event == "SUPERSEDE"  # (and what the old fact still says, as its own)
        valid = {f.text for f in mem.get_all(user_id="c")}  # current facts and turns
        assert fact not in valid and first[0].content not in valid  # it said Boston
        assert first[2].content in valid  # the harbour views are still true


def test_a_one_word_proposal_the_user_took_up_is_grounded_without_its_frame() -> None:
    proposal = "What about bouldering? There's a climbing gym near you that runs beginner nights."
    # the frame's "agreed" is the pipeline's word: it must not count as a claim
    assert ground("I agreed: bouldering.", [proposal, "Ooh yes, I just signed up!"]) is None
    assert ground("I agreed: bouldering.", ["Ooh yes, I just signed up!"]) is not None
    with Memory(MemoryConfig(path=":memory:")) as m:
        msgs = [
            {"role": "assistant", "content": proposal},
            {"role": "user", "content": "Ooh yes, I just signed up for their intro class on Saturday!"},
        ]
        m.add(msgs, user_id="u", timestamp=datetime(2025, 11, 2, 18, tzinfo=timezone.utc))
        facts = [f.text for f in m.get_all(user_id="u") if f.kind == "fact"]
        assert "I agreed: bouldering." in facts


def test_a_reply_that_puts_the_suggestion_off_lends_it_nothing() -> None:
    from mem_pipeline.write.ground import fact_sources

    offer = Message(role="assistant", content="How about a spa voucher? Most mums love a day off.")
    for reply in ("Hmm, let me think about it.", "Maybe later, thanks.", "Not sure yet."):
        msgs = [offer, Message(role="user", content=reply)]
        assert fact_sources(msgs, [1]) == [reply], reply
        assert ground("The user thought about getting a spa voucher.", fact_sources(msgs, [1])) is not None
    # a short answer still rests on the question it answers
    asked = [
        Message(role="assistant", content="What is your dog called?"),
        Message(role="user", content="Pepper."),
    ]
    assert fact_sources(asked, [1]) == ["Pepper.", "What is your dog called?"]


def test_every_reply_the_rules_read_as_an_acceptance_lends_the_offer_to_a_fact() -> None:
    """The offline rules and grounding read a reply with one rule (``ground.accepts``): a fact
    the extractor rests on an accepted offer is never rejected for want of that offer."""
    from mem_pipeline.write.ground import accepts, fact_sources, without_symbols

    offer = Message(role="assistant", content="Shall I pencil in the pottery taster on Thursday at six?")
    for reply in (
        "Absolutely, thursdays are my free evening anyway",
        "yup, and I'll bring my sister 🙂",
        "Lovely, lock it in!",
        "We'll take that one, thanks",
    ):
        msgs = [offer, Message(role="user", content=reply)]
        assert accepts(without_symbols(reply), says_more=True), reply
        assert fact_sources(msgs, [1]) == [reply, offer.content], reply
        fact = "The user booked the pottery taster on Thursday at six."
        assert ground(fact, fact_sources(msgs, [1])) is None, reply
    # (a short reply still rests on the question it answers: these are longer)
    for reply in (
        "Absolutely not, thursdays are impossible for me this month",
        "Hmm, I would rather wait until the new year starts",
    ):
        assert not accepts(without_symbols(reply), says_more=True), reply
        assert fact_sources([offer, Message(role="user", content=reply)], [1]) == [reply], reply
