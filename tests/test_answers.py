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
        ("The museum opens at 10.", "great"),  # no question
        ("What is the capital of Peru?", "Lima"),  # not about the user
    ],
)
def test_what_is_no_answer(question: str, reply: str) -> None:
    assert answered(question, reply) is None
    assert MAX_WORDS == 6


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
