"""A short answer to the assistant's question about the user is the user's statement, worded by
the question (``write.answers``), and reaches the memory through the offline extractor."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.write.answers import MAX_WORDS, answered

T0 = datetime(2026, 2, 3, 18, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("question", "reply", "statement"),
    [
        ("What's your name?", "Ngozi", "My name is Ngozi."),
        ("Nice to meet you! What should I call you?", "Just Sam", "Call me Sam."),
        ("Where are you from originally?", "Kiwi", "I am from Kiwi."),
        ("Which city do you live in?", "Leeds", "I live in Leeds."),
        ("Where are you based these days?", "oh, Porto", "I am based in Porto."),
        ("Which city are you in?", "Leeds", "I am in Leeds."),
        ("How old are you?", "41", "I am 41."),
        ("What do you do for work?", "nurse", "I work as a nurse."),
        ("What do you do for a living?", "software engineer", "I work as software engineer."),
        ("Do you have any pets?", "two cats", "I have two cats."),
        ("Any allergies I should know about?", "shellfish", "My allergies: shellfish."),
        ("What's your partner's name?", "Tomás", "My partner's name is Tomás."),
        ("So, what kind of music do you like?", "jazz mostly", "What kind of music do I like? Jazz mostly."),
        # the question after a lead-in of the assistant's
        ("For the blood donation form: what's your blood type?", "O neg.", "My blood type is O neg."),
        ("Quick one, where are you based?", "Leeds", "I am based in Leeds."),
        # a form's field asked by its name, and what the assistant says it needs
        ("Quick one for your insurance quote: age?", "27.", "I am 27."),
        ("Name?", "Sam", "My name is Sam."),
        (
            "The blood drive form asks for your blood type, do you know it?",
            "o neg 🩸",
            "My blood type is o neg.",
        ),
        # the question one sentence before the end, and "anything" questions
        ("What's your blood type? It's on the donor form.", "O neg", "My blood type is O neg."),
        ("Anything I should account for?", "wheelchair", "Anything I should account for? Wheelchair."),
        ("Do you make anything from it?", "Soap, mostly.", "Do I make anything from it? Soap, mostly."),
        # what only accepts after the answer is not part of it, nor is an emoji
        ("And what should I call you?", "jo works", "Call me jo."),
        ("What should I call you?", "Mags is fine 😊", "Call me Mags."),
        ("Which city do you live in?", "Hull, thanks!", "I live in Hull."),
        # what the assistant should pick for the user is the user's own to say
        (
            "Which seat should I book for you on the coach?",
            "aisle please",
            "Which seat to book for me on the coach? Aisle.",
        ),
        (
            "What size should I order in the rain jacket?",
            "medium",
            "What size to order in the rain jacket? Medium.",
        ),
    ],
)
def test_an_answer_is_worded_by_the_question(question: str, reply: str, statement: str) -> None:
    assert answered(question, reply) == statement


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("What's your name?", "no"),
        ("What's your name?", "rather not say"),
        ("What's your name?", "why?"),
        ("What's your name?", "haha"),
        ("What's your name?", "one two three four five six seven"),  # a longer reply is read as sentences
        ("How are you today?", "good thanks"),  # a mood, not a fact
        ("How was your weekend?", "pretty chill"),
        ("Pretty good here. How about you?", "not bad"),
        ("What do you think?", "sounds good"),
        ("What would you like me to cook?", "pasta"),
        ("Are you vegetarian?", "pescatarian"),  # a yes/no question: the yes rule's
        ("Coffee?", "black"),  # an offer, no field of a form
        ("The museum opens at 10.", "great"),  # no question
        ("What is the capital of Peru?", "Lima"),  # not about the user
        ("What do you call a fake noodle? An impasta.", "ok ok that one got me"),  # a riddle
        ("Why don't skeletons fight? They don't have the guts.", "lol"),
    ],
)
def test_what_is_no_answer(question: str, reply: str) -> None:
    assert answered(question, reply) is None
    assert MAX_WORDS == 6


@pytest.mark.parametrize("assistant", ["", "   ", "?", "...", "\n\n"])
def test_an_assistant_message_with_no_sentence_asks_nothing(assistant: str) -> None:
    from mem_pipeline.write.answers import question_about_user

    assert question_about_user(assistant) is None
    assert answered(assistant, "Leeds") is None


def test_an_answer_is_stored_and_found(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [{"role": "assistant", "content": "What's your name?"}, {"role": "user", "content": "Ngozi"}],
            user_id="u",
            timestamp=T0,
        ).events
        assert [(e.event, e.text) for e in events] == [("ADD", "My name is Ngozi.")]
        hits = m.search("what's my name?", user_id="u", now=T0 + timedelta(days=2)).hits
        assert hits and "Ngozi" in hits[0].text
        # the same fragment said with no question before it states nothing
        assert m.add([{"role": "user", "content": "Ngozi"}], user_id="v", timestamp=T0).events == []


def test_a_bare_answer_followed_by_statements_is_kept_with_them(tmp_path: Path) -> None:
    """ "Piranesi. Oh and ..." to "What are you reading?": the fragment answers the question,
    grounded on the question it answers, and the statements after it are read as usual."""
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [
                {"role": "assistant", "content": "Fun! What are you reading at the moment?"},
                {
                    "role": "user",
                    "content": "Piranesi. Oh and our book club moved to the last Thursday of the month.",
                },
            ],
            user_id="u",
            timestamp=T0,
        ).events
        texts = [e.text for e in events if e.event == "ADD"]
        assert "What am I reading at the moment? Piranesi." in texts
        # "the last Thursday of the month" is a day of each month, not a date counted from the turn
        assert any("the last Thursday of the month" in t for t in texts)
        hits = m.search("What book am I reading?", user_id="u", now=T0 + timedelta(days=2)).hits
        assert hits and "Piranesi" in hits[0].text
        # a reaction first is no answer: "Oh wow." states nothing
        events = m.add(
            [
                {"role": "assistant", "content": "What are you reading at the moment?"},
                {"role": "user", "content": "Oh wow. I adopted a beagle called Brisket."},
            ],
            user_id="v",
            timestamp=T0,
        ).events
        assert [e.text for e in events] == ["I adopted a beagle called Brisket."]


def test_a_short_answer_to_a_yes_no_question_supports_nothing_of_the_question() -> None:
    """Only a wh-question about the user lends its words to a first-sentence answer: "Does he
    work long shifts?" / "24-hour shifts, yeah. ..." does not make the user work them."""
    from mem_pipeline.models import Message
    from mem_pipeline.write.ground import fact_sources

    asked = Message(role="assistant", content="Cool! What are you reading at the moment?")
    yes_no = Message(role="assistant", content="Does he work long shifts?")
    said = Message(role="user", content="Piranesi. We also meet monthly at my flat for the book club.")
    assert fact_sources([asked, said], [1]) == [said.content, "What are you reading at the moment"]
    assert fact_sources([yes_no, said], [1]) == [said.content]


def test_an_answer_the_memorable_filter_doubts_is_kept_as_the_answer(tmp_path: Path) -> None:
    """ "tam is fine" to "what should I call you?" reads as a statement ("Tam is fine") that the
    learned filter doubts; it is the answer, worded by the question. Only a question the
    templates know is read so: an accepted offer with a question back stays out."""
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [
                {"role": "assistant", "content": "Hello! Before anything else, what should I call you?"},
                {"role": "user", "content": "tam is fine 👍"},
            ],
            user_id="u",
            timestamp=T0,
        ).events
        assert [(e.event, e.text) for e in events] == [("ADD", "Call me tam.")]
        hits = m.search("what's my name?", user_id="u", now=T0 + timedelta(days=1)).hits
        assert hits and "tam" in hits[0].text


def test_a_size_asked_for_the_user_is_stored_as_theirs(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [
                {"role": "assistant", "content": "Sure. What size should I search for in the running shoes?"},
                {"role": "user", "content": "UK 9."},
            ],
            user_id="u",
            timestamp=T0,
        ).events
        assert [e.text for e in events] == ["What size to search for in the running shoes? UK 9."]
        hits = m.search("what shoe size am I?", user_id="u", now=T0 + timedelta(days=1)).hits
        assert hits and "UK 9" in hits[0].text


def test_what_the_user_says_to_a_question_about_them_is_kept(tmp_path: Path) -> None:
    """A reply to the assistant's question about the user is about the user, even when the
    learned filter, reading the sentence alone, doubts it."""
    turns = [
        {"role": "assistant", "content": "Sounds like a full week! Anyone at home keeping you company?"},
        {"role": "user", "content": "A grumpy old tortoise and two goldfish."},
    ]
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        assert m.extractor.judge is not None  # type: ignore[attr-defined]
        assert m.extractor.judge.drop([turns[1]["content"]]) == [True]  # type: ignore[attr-defined]
        events = m.add(turns, user_id="u", timestamp=T0).events
        assert [e.text for e in events] == ["A grumpy old tortoise and two goldfish."]
        hits = m.search("what pets do I have?", user_id="u", now=T0 + timedelta(days=1)).hits
        assert hits and "tortoise" in hits[0].text


def test_a_short_reply_of_two_fragments_answers_whole(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [
                {"role": "assistant", "content": "How do you get to work these days?"},
                {"role": "user", "content": "No bus. Walk mostly."},
            ],
            user_id="u",
            timestamp=T0,
        ).events
        assert [e.text for e in events] == ["How do I get to work these days? No bus. Walk mostly."]


def test_an_offer_taken_up_in_a_yes_of_its_own_rests_on_the_offer(tmp_path: Path) -> None:
    """The extractor reads "omg yes pls, put me down for thursday" as a yes; the agreed fact it
    frames rests on the assistant's offer, which says what was agreed, and is not rejected as
    unsupported by the user's words alone."""
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        events = m.add(
            [
                {
                    "role": "assistant",
                    "content": "A pottery taster at Clayworks runs on Thursdays at 6pm. Want me to book it?",
                },
                {"role": "user", "content": "omg yes pls, put me down for thursday"},
            ],
            user_id="u",
            timestamp=T0,
        ).events
        agreed = [e for e in events if e.text.startswith("I agreed:")]
        assert [e.event for e in agreed] == ["ADD"] and "Clayworks" in agreed[0].text
