"""A first-person question about an attribute ("am I still working?", "can I eat salmon?")
finds the fact that sets it, however far apart their words embed; a fact that says the value
ended, or was superseded, is not lifted."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mem_pipeline import Memory, MemoryConfig

T0 = datetime(2025, 11, 5, 10, tzinfo=timezone.utc)


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = Memory(MemoryConfig(path=str(tmp_path / "store")))  # a config passed first is the config
    yield m
    m.close()


def _say(m: Memory, *texts: str) -> None:
    for i, text in enumerate(texts):
        m.add([{"role": "user", "content": text}], user_id="u", timestamp=T0 + timedelta(minutes=i))


def test_the_fact_that_sets_the_asked_slot_ranks_first(memory: Memory) -> None:
    _say(memory, "i'm 61", "retired since 2022")
    hits = memory.search("am i still working?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "Retired" in hits[0].text
    hits = memory.search("how old am i", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "61" in hits[0].text


def test_a_bare_attribute_is_stored_and_answers_a_question_it_shares_no_word_with(memory: Memory) -> None:
    _say(memory, "pescatarian btw")
    assert [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"] == ["Pescatarian"]
    hits = memory.search("can i eat salmon?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert [h.text for h in hits][:1] == ["Pescatarian"]


def test_without_the_slot_signal_the_floor_keeps_such_a_fact_out(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"), slot_boost=0)) as m:
        _say(m, "pescatarian btw")
        assert m.search("can i eat salmon?", user_id="u", now=T0 + timedelta(days=1)).hits == []


def test_a_value_that_ended_is_not_lifted(memory: Memory) -> None:
    _say(memory, "I quit my job at Deloitte.", "I'm a pharmacist at a small chain now.")
    hits = memory.search("what's my job?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "pharmacist" in hits[0].text


def test_two_configs_are_refused(tmp_path: Path) -> None:
    cfg = MemoryConfig(path=str(tmp_path / "s"))
    with pytest.raises(TypeError, match="two configs"):
        Memory(cfg, config=cfg)


@pytest.mark.parametrize(
    ("said", "question", "current"),
    [
        (("I've gone off Radiohead.", "Big fan of Fontaines D.C."), "Which band do I like?", "Fontaines"),
        (
            ("I cancelled my Netflix subscription.", "I watch everything on Mubi."),
            "Which streaming service do I use?",
            "Mubi",
        ),
    ],
)
def test_what_ended_comes_after_what_holds_for_a_question_about_now(
    tmp_path: Path, said: tuple[str, str], question: str, current: str
) -> None:
    firsts = {}
    for on in (False, True):
        with Memory(MemoryConfig(path=str(tmp_path / str(on)), history_last=on)) as m:
            _say(m, *said)
            hits = m.search(question, user_id="u", now=T0 + timedelta(days=1)).hits
            assert len(hits) == 2 and hits[0].score >= hits[1].score
            firsts[on] = hits[0].text
    assert current not in firsts[False]  # the ending is the closer match: without the signal it wins
    assert current in firsts[True]


def test_a_question_about_the_past_still_gets_the_ending_first(memory: Memory) -> None:
    _say(memory, "I've gone off Radiohead.", "Big fan of Fontaines D.C.")
    hits = memory.search("Which band did I use to like?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "Radiohead" in hits[0].text


def test_a_transfer_to_another_branch_tells_where_the_user_is_now(memory: Memory) -> None:
    _say(
        memory,
        "Quick intro: i'm a pharmacist in pune, been doing it 6 yrs now",
        "Update: got transferred to the mumbai branch so not in pune anymore.",
    )
    facts = {f.text: f for f in memory.get_all(user_id="u", include_invalid=True) if f.kind == "fact"}
    moved = next(f for t, f in facts.items() if "mumbai" in t)
    assert moved.slot == "the user/residence" and moved.is_valid
    assert not next(f for t, f in facts.items() if "in pune" in t).is_valid
    hits = memory.search("which city am i in?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "mumbai" in hits[0].text
    hits = memory.search("what's my profession?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "pharmacist" in hits[0].text


def test_a_correction_by_contrast_rewrites_the_fact_and_keeps_the_old_text_in_history(memory: Memory) -> None:
    _say(
        memory,
        "My cousin Ines works as a nurse at Guy's Hospital.",
        "Sorry, wrong one: Ines is at St Thomas', not Guy's.",
    )
    facts = [f for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert [f.text for f in facts] == ["My cousin Ines works as a nurse at St Thomas'."]
    old = [h.old_text for h in memory.history(facts[0].id, user_id="u")]
    assert "My cousin Ines works as a nurse at Guy's Hospital." in old
    hits = memory.search("where does my cousin work?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "St Thomas" in hits[0].text


def test_a_move_keeps_the_job_said_with_the_old_city(memory: Memory) -> None:
    _say(memory, "I'm a midwife in Leeds, mostly night shifts.")
    memory.add(
        [{"role": "user", "content": "I don't live in Leeds anymore. We moved to York in May."}],
        user_id="u",
        timestamp=T0 + timedelta(days=90),
    )
    texts = [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert "I'm a midwife, mostly night shifts." in texts
    hits = memory.search("what do i do for work?", user_id="u", now=T0 + timedelta(days=91)).hits
    assert hits and "midwife" in hits[0].text


def test_a_role_corrected_by_contrast_rewrites_the_fact_of_the_same_person(memory: Memory) -> None:
    _say(
        memory,
        "My husband Tomasz is a paramedic, so his shifts are all over the place.",
        "Sorry, he's a firefighter, not a paramedic. Long day.",
        "I'm a nurse, not a paramedic.",  # the person's own role: not Tomasz's fact to rewrite
    )
    texts = [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert "My husband Tomasz is a firefighter, so his shifts are all over the place." in texts
    assert not any("Tomasz is a paramedic" in t for t in texts)
    hits = memory.search("what does my husband do?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert hits and "firefighter" in hits[0].text


def test_leaving_an_employer_cuts_its_whole_name_and_what_described_it(memory: Memory) -> None:
    _say(memory, "I'm an accountant at Baker & Moss, a mid-size audit firm in town.")
    _say(memory, "I'm not at Baker & Moss anymore.")
    texts = [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert "I'm an accountant." in texts
    assert not any("Moss" in t and "not" not in t for t in texts)


def test_a_new_job_in_the_same_add_replaces_what_leaving_the_old_one_left(memory: Memory) -> None:
    _say(memory, "I'm an accountant at Baker & Moss, a mid-size audit firm in town.")
    memory.add(
        [
            {
                "role": "user",
                "content": "Quick update: I'm not at Baker & Moss anymore. "
                "I started last week as a data analyst at Northwind Bank.",
            }
        ],
        user_id="u",
        timestamp=T0 + timedelta(days=60),
    )
    texts = [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert not any("accountant" in t for t in texts)
    hits = memory.search("what's my job?", user_id="u", now=T0 + timedelta(days=61)).hits
    assert hits and "data analyst" in hits[0].text


@pytest.mark.parametrize(
    "ending",
    [
        "so i handed in my notice at nopa, last shift was saturday",
        "I resigned from Nopa last month.",
        "Got made redundant from Nopa in March, gutted.",
    ],
)
def test_resigning_or_being_let_go_ends_the_job(memory: Memory, ending: str) -> None:
    _say(memory, "I'm a line cook at Nopa in the Mission, been there two years.")
    memory.add([{"role": "user", "content": ending}], user_id="u", timestamp=T0 + timedelta(days=90))
    current = [f.text for f in memory.get_all(user_id="u") if f.kind == "fact"]
    assert not any("line cook" in t for t in current), current
    hits = memory.search("what's my job?", user_id="u", now=T0 + timedelta(days=91)).hits
    assert hits and "line cook" not in hits[0].text
