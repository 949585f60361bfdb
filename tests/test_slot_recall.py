"""A first-person question about an attribute ("am I still working?", "can I eat salmon?")
finds the fact that sets it, however far apart their words embed; a fact that says the value
ended, or was superseded, is not lifted."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.read.newer import set_aside
from mem_pipeline.read.rank import rank
from mem_pipeline.store import Candidate

T0 = datetime(2025, 11, 5, 10, tzinfo=timezone.utc)


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = Memory(MemoryConfig(path=str(tmp_path / "store")))  # a config passed first is the config
    yield m
    m.close()


def _say(m: Memory, *texts: str) -> None:
    for i, text in enumerate(texts):
        m.add([{"role": "user", "content": text}], user_id="u", timestamp=T0 + timedelta(minutes=i))


def _months_later(m: Memory, before: str, after: str, question: str) -> list[str]:
    """``before`` said months ago, ``after`` today: the texts of the hits for ``question``."""
    m.add(before, user_id="u", timestamp=T0 - timedelta(days=200))
    m.add(after, user_id="u", timestamp=T0)
    return [h.text for h in m.search(question, user_id="u", now=T0 + timedelta(days=1)).hits]


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


def test_what_a_message_turned_from_comes_after_what_it_says_holds_now(tmp_path: Path) -> None:
    from mem_pipeline.text.opinion import turns_from

    said = (
        "I always cycle to work with a true crime podcast on.",
        "Podcasts just distract me now on the bike. Audiobooks are what I listen to these days.",
    )
    firsts = {}
    for on in (False, True):
        with Memory(MemoryConfig(path=str(tmp_path / str(on)), history_last=on)) as m:
            m.add(said[0], user_id="u", timestamp=T0 - timedelta(days=90))
            m.add(said[1], user_id="u", timestamp=T0)
            hits = m.search("What do I listen to on the bike?", user_id="u", now=T0 + timedelta(days=1)).hits
            firsts[on] = hits[0].text
    assert "distract" in firsts[False]  # worded like the question, the turning away wins without the rule
    assert "Audiobooks" in firsts[True]
    # what only turns from something, and what gives the value that holds instead
    assert turns_from("Night shifts weren't for me in the end.") and turns_from("Not feeling techno lately")
    assert not turns_from("I've gone off lager, craft IPAs are my go-to now.")
    assert not turns_from("Quit the bakery, I'm a barista now.") and not turns_from("I'm over the moon!")
    # a move gives where one lives now, however it is worded
    assert not turns_from("We don't live in utrecht anymore, ended up moving to rotterdam in april.")


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


def _later(m: Memory, days: int, text: str) -> None:
    m.add([{"role": "user", "content": text}], user_id="u", timestamp=T0 + timedelta(days=days))


def _facts(m: Memory) -> list[str]:
    return [f.text for f in m.get_all(user_id="u") if f.kind == "fact"]


def test_a_remark_on_how_a_job_feels_does_not_answer_what_the_job_is(memory: Memory) -> None:
    _say(memory, "I'm a postman in Dundee. Long walks, easy job.")
    _later(memory, 60, "I'm not a postman anymore. I started as a lab tech for the university in March.")
    hits = memory.search("what do I do for work?", user_id="u", now=T0 + timedelta(days=61)).hits
    assert hits and "lab tech" in hits[0].text, [h.text for h in hits]


def test_a_day_corrected_by_contrast_rewrites_the_date_and_keeps_the_rest(memory: Memory) -> None:
    _say(memory, "Our housewarming is on 4 May at the new flat in Leith.")
    _later(memory, 3, "Oops, the housewarming is on the 11th, not the 4th.")
    texts = _facts(memory)
    assert "Our housewarming is on 11 May at the new flat in Leith." in texts, texts
    assert not any("4 May" in t for t in texts)
    for q in ("when is the housewarming?", "where is our housewarming?"):
        hits = memory.search(q, user_id="u", now=T0 + timedelta(days=4)).hits
        assert hits and "11 May" in hits[0].text, (q, [h.text for h in hits])


def test_a_switch_from_one_thing_to_another_changes_only_that_thing(memory: Memory) -> None:
    _say(memory, "My son Teo is 9 and plays rugby for the Wanderers.")
    _later(memory, 120, "Teo switched from rugby to hockey over the summer.")
    texts = _facts(memory)
    assert "My son Teo is 9 and plays hockey for the Wanderers." in texts, texts
    hits = memory.search("how old is Teo?", user_id="u", now=T0 + timedelta(days=121)).hits
    assert hits and "9" in hits[0].text


def test_a_new_count_rewrites_the_old_one_and_keeps_the_names(memory: Memory) -> None:
    _say(memory, "We keep 2 hens, Dot and Mabel.")
    _later(memory, 40, "A neighbour gave us another one so 3 hens now!")
    texts = _facts(memory)
    assert "We keep 3 hens, Dot and Mabel." in texts, texts
    assert not any("2 hens" in t for t in texts)


def test_a_new_job_in_another_trade_keeps_nothing_of_the_old_employer(memory: Memory) -> None:
    _say(memory, "I'm a cashier at Lidl on Mill Road, weekends mostly.")
    _later(memory, 90, "New job! I'm a trainee electrician now.")
    assert not any("Lidl" in t for t in _facts(memory)), _facts(memory)


def test_a_restriction_adds_to_the_diet_it_does_not_replace_it(memory: Memory) -> None:
    _say(memory, "I don't eat beef, never have.", "I'm on a low-fat diet since my gallbladder op.")
    texts = _facts(memory)
    assert any("beef" in t for t in texts) and any("low-fat" in t for t in texts), texts
    _later(memory, 30, "I'm vegan now.")
    _later(memory, 31, "I'm vegetarian again.")
    assert not any("vegan" in t for t in _facts(memory))


def test_leaving_an_employer_drops_the_phrase_that_described_it(memory: Memory) -> None:
    _say(memory, "I'm a designer. Took a contract job at Pixelwerk, a branding studio in Leipzig.")
    _later(memory, 200, "Left Pixelwerk after a year.")
    assert not any("studio" in t for t in _facts(memory)), _facts(memory)


def test_what_sets_a_slot_and_what_only_says_how_it_is() -> None:
    from mem_pipeline.text.lexical import has_clause_verb
    from mem_pipeline.text.slots import states_value

    assert states_value("I'm a welder at Harland's yard.") and states_value("i work like sommelier")
    assert states_value("Got taken on as a runner at the Hilton.")
    assert not states_value("Stressful job, good pay though.") and not states_value("Work is mad lately.")
    assert not has_clause_verb("a printing shop in Deptford") and has_clause_verb("my dad printed it")
    # the first days of a new job name it, and say that it changed
    from mem_pipeline.text.slots import changes, slot_of

    for said in ("Day one as pastry-chef at Rosa's done!", "first shift over as a porter at St Mary's"):
        found = slot_of(said)
        assert found is not None and found.family == "work" and changes(said), said
    assert slot_of("one week as a tourist in Lisbon") is None
    # a job said bare with where, or with a hyphenated title, is work; one met there is not
    from mem_pipeline.write.categories import slot_category

    assert slot_category("Tram driver for Metrolink, 11 years in March.") == "work"
    assert slot_category("I'm a co-pilot at Loganair") == "work"
    assert slot_of("Nurse at the walk-in centre told me to rest.") is None


def test_a_date_that_moved_rewrites_the_date_and_keeps_where_and_who(memory: Memory) -> None:
    _say(memory, "My brother Idris is getting married on 3rd of May in Cardiff, I'm his best man.")
    _later(memory, 20, "The registry office double-booked, so Idris's wedding got postponed to 14 June.")
    texts = _facts(memory)
    assert "My brother Idris is getting married on 14 June in Cardiff." in texts, texts
    assert not any("3rd of May" in t for t in texts)
    # what moved may stand between the verb and the new date
    _later(memory, 31, "My dentist appointment is on 20 June, the check-up.")
    _later(memory, 32, "ugh they pushed the dentist appointment back to 1 July")
    assert any("1 July" in t and "check-up" in t for t in _facts(memory)), _facts(memory)


def test_where_one_is_now_is_where_one_lives(memory: Memory) -> None:
    _say(memory, "I live in Galway with my two cats.")
    _later(memory, 100, "Galway got too pricey, I'm in Limerick these days.")
    hits = memory.search("which city do I live in?", user_id="u", now=T0 + timedelta(days=101)).hits
    assert hits and "Limerick" in hits[0].text, [h.text for h in hits]
    from mem_pipeline.text.slots import slot_of

    assert slot_of("we're in a meeting now") is None and slot_of("I'm in bed now") is None


def test_a_move_said_as_it_happened_answers_where_one_lives(memory: Memory) -> None:
    """ "ended up moving to rotterdam" and "since we moved up to tromsø" say where one lives now:
    neither is put behind the job the same message kept, nor left without a slot."""
    from mem_pipeline.text.slots import slot_of

    assert (slot_of("First winter since we moved up to Tromsø, the polar night is rough.") or ()) and (
        slot_of("First winter since we moved up to Tromsø, the polar night is rough.").family == "residence"
    )
    hits = _months_later(
        memory,
        "I'm a sous chef at a little bistro in utrecht.",
        "Update, we don't live in utrecht anymore, ended up moving to rotterdam at the start of april. "
        "Still a sous chef tho, just at a different place down by the harbour",
        "where do i live these days?",
    )
    assert "rotterdam" in hits[0]


def test_someone_elses_new_job_is_not_the_users_and_a_subject_taught_is_a_job(memory: Memory) -> None:
    """ "Andrés got a job in the Guggenheim" sets Andrés's work, not the asker's; "I teach English"
    is the asker's work, and "I still teach English but online now" answers "what do I do"."""
    from mem_pipeline.text.slots import slot_of

    other = slot_of("Since october we are in Bilbao, Andrés got a job in the Guggenheim.")
    assert other is not None and (other.family, other.subject) == ("work", "andrés")
    assert slot_of("She got a job at Tesco.").subject == "she"  # type: ignore[union-attr]
    assert slot_of("I got a job at Tesco.").subject == "the user"  # type: ignore[union-attr]
    assert slot_of("I teach English in an academy near the beach.").family == "work"  # type: ignore[union-attr]
    assert slot_of("I teach my kids to swim") is None
    hits = _months_later(
        memory,
        "I teach English in an academy near the beach.",
        "Since october we are in Bilbao, Andrés got a job in the Guggenheim. "
        "I still teach English but online now",
        "What do I do for work?",
    )
    assert "teach English" in hits[0]


def test_a_move_said_in_the_same_add_leaves_no_older_place_behind(memory: Memory) -> None:
    """What a correction of the job keeps of where the old job was ("I'm based in Seoul") is not
    kept when the same add says where one lives now."""
    hits = _months_later(
        memory,
        "I teach English at a hagwon in Seoul, been here three years now.",
        "Moved back home to Manchester in June. I'm a freelance Korean-English translator now.",
        "Where do I live?",
    )
    assert "Manchester" in hits[0]
    valid = [f.text for f in memory.get_all(user_id="u", kind="fact")]
    assert not any("Seoul" in t for t in valid), valid


def test_a_question_about_my_relation_finds_the_fact_that_names_it(memory: Memory) -> None:
    """ "what's my husband called?" is about what the memory holds when a fact speaks of "my
    husband", however far the long fact's embedding is from the question; an unrelated question
    still gets nothing."""
    from mem_pipeline.text.slots import asked_relation, names_relation

    memory.add(
        "My husband Anselm and i run a little goat farm in the auvergne, we make cheese and sell it "
        "at the saturday market in clermont-ferrand",
        user_id="u",
        timestamp=T0,
    )
    later = T0 + timedelta(days=2)
    hits = memory.search("what's my husband called?", user_id="u", now=later).hits
    assert hits and "Anselm" in hits[0].text
    assert memory.search("what's the tallest mountain in africa", user_id="u", now=later).hits == []
    assert asked_relation("what's my husband called?") == "husband" and asked_relation("who won?") is None
    assert names_relation("Our dog Bún chews cables", "dog") and not names_relation("A dog barked", "dog")


def test_a_question_of_what_something_is_called_prefers_the_text_that_names_it(memory: Memory) -> None:
    """ "Named him Bún" answers "what's my dog called?" before "Just adopted a Shiba Inu puppy!",
    which names something too but gives no name."""
    from mem_pipeline.text.phrases import asks_called, gives_name

    memory.add(
        "Just adopted a Shiba Inu puppy! Named him Bún after my favourite noodle dish 😂",
        user_id="u",
        timestamp=T0,
    )
    said = "Chewing every cable in my flat. I work from home as a backend dev in Hanoi so I'm watching him"
    memory.add(said, user_id="u", timestamp=T0)
    hits = memory.search("what's my dog called?", user_id="u", now=T0 + timedelta(days=1)).hits
    assert "Bún" in hits[0].text
    assert asks_called("What's my partner's name?") and not asks_called("where do I live?")
    assert gives_name("a big grey boy called Pistachio") and not gives_name("we called the plumber")


def test_where_one_works_from_is_one_arrangement_at_a_time(memory: Memory) -> None:
    """Remote, then five office days, then remote again: "Do I work from home or in the office?"
    gets the last, and the office days leave the prompt; where one lives, said beside it ("Fully
    remote, so still in Leicester"), is another slot: the later fact does not set it aside."""
    from mem_pipeline.text.slots import asked_slot, slot_of

    said = [
        (-300, "I work fully remote, haven't seen the office since 2021 😂"),
        (-150, "New manager, new rules: back in the office 5 days a week."),
        (-10, "REMOTE AGAIN 🙌 half the team threatened to quit so they caved"),
    ]
    for days, text in said:
        memory.add(text, user_id="u", timestamp=T0 + timedelta(days=days))
    recall = memory.search("Do I work from home or in the office?", user_id="u", now=T0)
    assert "REMOTE AGAIN" in recall.hits[0].text
    assert "5 days" not in recall.to_prompt()
    assert asked_slot("Do I commute to an office these days?") == "the user/arrangement"
    assert slot_of("The remote control is broken") is None and slot_of("Love it, no commute") is None
    # "threatened to quit" ends nothing; "gone back to fully remote" gives the value now
    gone = slot_of("After half the team handed in their notice, the company has gone back to fully remote.")
    assert gone is not None and gone.family == "arrangement" and not gone.stopped
    # a new arrangement keeps the employer said with the old one
    from mem_pipeline.write.clauses import BESIDE, remainder, sets

    left = remainder(
        "I'm working from home for an insurance company.",
        lambda c: sets(c, "arrangement"),
        beside=BESIDE["arrangement"],
    )
    assert left == "I'm working for an insurance company."
    found = [
        _fact("a", "I live in Leicester.", "the user/residence", T0 - timedelta(days=200)),
        _fact("b", "Fully remote, so still in Leicester.", "the user/arrangement", T0),
    ]
    same = [0.6, 0.8]
    ranked = rank(found, now=T0, half_lives={}, dense_weight=1.0, decay_floor=0.0)
    assert set_aside(ranked, {"a": same, "b": same})[1] == {}
    found[1].payload["slot"] = "the user/residence"  # the same slot: the later one sets it aside
    ranked = rank(found, now=T0, half_lives={}, dense_weight=1.0, decay_floor=0.0)
    assert set_aside(ranked, {"a": same, "b": same})[1] == {"a": "b"}


def _fact(fid: str, text: str, slot: str, at: datetime) -> Candidate:
    payload = {
        "kind": "fact",
        "text": text,
        "slot": slot,
        "created_ts": at.timestamp(),
        "category": "biography",
    }
    return Candidate(id=fid, payload=payload, dense=0.5, lexical=0.0)


def test_how_one_wants_to_be_addressed_is_one_value_at_a_time(memory: Memory) -> None:
    """ "Please address me as Professor Adeyemi", months later "Just call me Funmi from now on":
    the first name answers, and the title leaves the prompt; a call one asks for is no name."""
    from mem_pipeline.text.slots import asked_slot, slot_of

    memory.add("Please address me as Professor Adeyemi.", user_id="u", timestamp=T0 - timedelta(days=100))
    memory.add("Just call me Funmi from now on, please.", user_id="u", timestamp=T0)
    recall = memory.search("How should you address me?", user_id="u", now=T0 + timedelta(days=1))
    assert "Funmi" in recall.hits[0].text and "Professor" not in recall.to_prompt()
    assert asked_slot("What should you call me?") == "the user/address"
    assert slot_of("Call me tomorrow at 5") is None and slot_of("call me when you land") is None
    dropped = slot_of("We've been talking for months now, you can drop the title.")
    assert dropped is not None and dropped.family == "address"


def _first_after(m: Memory, text: str, days: int, question: str) -> str:
    """``text`` said ``days`` after T0: the text of the first hit for ``question`` a day later."""
    m.add(text, user_id="u", timestamp=T0 + timedelta(days=days))
    return m.search(question, user_id="u", now=T0 + timedelta(days=days + 1)).hits[0].text


def test_a_question_about_a_relation_finds_what_is_later_said_of_them_by_name(memory: Memory) -> None:
    """ "My wife Ngozi is a midwife", months later "Ngozi swapped the ward for a lecturing job":
    the second names no wife and embeds far from "what does my wife do for work?", but the
    name the user gave the wife is hers, and the later fact is the answer."""
    _say(memory, "My wife Ngozi is a midwife at St Thomas', so she's on nights half the month.")
    memory.add(
        [
            {
                "role": "assistant",
                "content": "That's demanding work. How do you two manage the night shifts?",
            },
            {"role": "user", "content": "Lots of coffee and a shared calendar. We live in Brixton."},
        ],
        user_id="u",
        timestamp=T0 + timedelta(minutes=5),
    )
    said = "Ngozi swapped the ward for a lecturing job at King's College in March, daytime hours at last."
    assert "King's College" in _first_after(memory, said, 150, "What does my wife do for work?")
    from mem_pipeline.text.slots import relation_names

    assert relation_names("my big sister ngozi is a midwife in leicester", "sister") == ["ngozi"]
    assert relation_names("My wife, Folake, teaches chemistry.", "wife") == ["folake"]
    assert relation_names("my wife teaches chemistry and I build", "wife") == []
    assert relation_names("My wife and I live in Yaba.", "wife") == []


def test_a_correction_is_found_by_the_words_of_the_fact_it_replaced(memory: Memory) -> None:
    """The successor's lexical entry holds its predecessor's words as context: "violin"
    reaches the new lesson day although the correction says only "lesson"."""
    memory.add("Freya's violin lesson is on Wednesday at 4.", user_id="u", timestamp=T0)
    later = memory.add(
        "Actually Freya's lesson moved, it is on Thursday at 4 now.",
        user_id="u",
        timestamp=T0 + timedelta(days=30),
    )
    assert [e.event for e in later.events][:1] == ["SUPERSEDE"], later.events
    hits = memory.search("violin", user_id="u", now=T0 + timedelta(days=31), min_score=0).hits
    new = next(h for h in hits if "Thursday" in h.text and h.kind == "fact")
    assert new.parts.lexical > 0


def test_a_workplace_one_started_at_or_went_back_to_sets_the_work_slot(memory: Memory) -> None:
    """ "Started at the public library in Observatory" after "I'm a barista at Copper Kettle" and
    "Quit the café!": the new workplace answers "where do I work?", not the job that ended."""
    from mem_pipeline.text.slots import slot_of

    memory.add("I'm a barista at Copper Kettle on Bree Street, 6am starts.", user_id="u", timestamp=T0)
    said = "Quit the café! Started at the public library in Observatory last week, shelving."
    assert "library" in _first_after(memory, said, 120, "Where do I work?")
    for said in ("I'm back at IKEA on my old team.", "First week at Dangote done, site safety manager now"):
        found = slot_of(said)
        assert found is not None and found.family == "work", said
    for said in ("I started at 9 today", "I started at the gym in May", "back at uni next week"):
        found = slot_of(said)
        assert found is None or found.family != "work", said


def test_the_value_of_a_slot_said_last_leads_for_a_question_about_now() -> None:
    """Two facts set where the user works; the slot lift puts both first in the order of their
    words, and ``latest_in_slot`` puts the one said last first, with the lead's score; a fact of
    no value ("Quit the café!") and the rest keep their places."""
    from mem_pipeline.read.rank import latest_in_slot

    found = [
        _fact("old", "Started a new job at Tetra Pak in Lund.", "the user/work", T0 - timedelta(days=200)),
        _fact("other", "Love it, great people.", "", T0 - timedelta(days=100)),
        _fact("new", "I'm back at IKEA on my old kitchen team.", "the user/work", T0),
    ]
    found[0] = Candidate(id="old", payload=found[0].payload, dense=0.9, lexical=0.0)
    ranked = rank(
        found,
        now=T0,
        half_lives={},
        dense_weight=1.0,
        decay_floor=0.0,
        use_decay=False,
        slot="the user/work",
        slot_boost=1.0,
    )
    assert [r.id for r in ranked] == ["old", "new", "other"]
    latest = latest_in_slot(ranked, "the user/work")
    assert [r.id for r in latest] == ["new", "old", "other"]
    assert [r.score for r in latest] == [r.score for r in ranked]
    assert latest_in_slot(ranked, "the user/residence") == ranked


def test_leaving_the_place_a_fact_says_one_is_in_keeps_the_rest_of_it(memory: Memory) -> None:
    """ "Wait no, she left coventry in april, she's in swansea now." after "My big sister adaeze is
    a midwife in coventry, she's delivered hundreds of babies": the place goes, the job stays
    with her (the change's words give the place as a stem, "coventri"). Leaving a
    place one worked *at* ("left Pixelwerk") still takes the job with it."""
    from mem_pipeline.write.clauses import left_place

    assert left_place("she left york in march", "york", "a paramedic in york")
    assert not left_place("left Pixelwerk after a year", "Pixelwerk", "a contract job at Pixelwerk")
    assert not left_place("she left york in march", "york")  # the fact must say one is in it
    _say(memory, "My big sister adaeze is a midwife in coventry, she's delivered hundreds of babies")
    memory.add(
        [{"role": "user", "content": "Wait no, she left coventry in april, she's in swansea now."}],
        user_id="u",
        timestamp=T0 + timedelta(minutes=3),
    )
    facts = _facts(memory)
    assert "My big sister adaeze is a midwife, she's delivered hundreds of babies." in facts, facts


def test_a_day_corrected_in_words_rewrites_the_day_and_keeps_the_rest(memory: Memory) -> None:
    """Dictated dates come in words: "Correction Tobias arrives on the sixth of March not the
    fourth" rewrites the stored day, in the fact's own writing, and keeps where he comes from
    and how long he stays; a day written in digits is rewritten in digits."""
    from mem_pipeline.write.clauses import day_number, instead, substituted

    assert day_number("twenty-first") == 21 and day_number("ninth") == 9 and day_number("12th") == 12
    said = instead("Tobias arrives on the sixth of March not the fourth", "fourth")
    assert said == "sixth"
    assert substituted("landing on the 4th of March", "fourth", said) == "landing on the 6th of March"
    _say(
        memory,
        "Reminder: my nephew Tobias is coming over from Graz on the fourth of March and staying a week.",
    )
    memory.add(
        [
            {
                "role": "user",
                "content": "Correction Tobias arrives on the sixth of March not the fourth, train changed",
            }
        ],
        user_id="u",
        timestamp=T0 + timedelta(days=2),
    )
    facts = _facts(memory)
    assert any("Graz on the sixth of March and staying a week" in t for t in facts), facts
    assert not any("fourth of March and staying" in t for t in facts), facts


def test_a_date_said_wrong_and_put_right_rewrites_the_date_and_keeps_the_rest(memory: Memory) -> None:
    """ "I got the date wrong, she lands on 5 March." after "My cousin Ilse lands in Dublin on
    3 March, she's staying with us for ten days": a slip put right is a rewrite of the one date,
    as a date moved is; who, where and how long still hold."""
    _say(memory, "My cousin Ilse lands in Dublin on 3 March, she's staying with us for ten days.")
    res = memory.add(
        [{"role": "user", "content": "I got the date wrong, she lands on 5 March."}],
        user_id="u",
        timestamp=T0 + timedelta(minutes=4),
    )
    assert [e.event for e in res.events] == ["UPDATE"], res.events
    assert _facts(memory) == [
        "My cousin Ilse lands in Dublin on 5 March, she's staying with us for ten days."
    ]


def test_an_amount_corrected_by_contrast_rewrites_the_amount_and_keeps_the_rest(memory: Memory) -> None:
    """ "Sorry, scratch that, it's £2,150, not £2,510." after "The deposit on the flat in
    Hackney is £2,510, due Friday": an amount with its currency sign and thousands separator
    is a value like a name; the stored fact gets the right amount and keeps the rest."""
    from mem_pipeline.write.clauses import instead

    assert instead("rent is $1,540, not $1,450.", "1,450") == "1,540"
    _say(memory, "The deposit on the flat in Hackney is £2,510, due Friday.")
    res = memory.add(
        [{"role": "user", "content": "Sorry, scratch that, the deposit is £2,150, not £2,510."}],
        user_id="u",
        timestamp=T0 + timedelta(minutes=2),
    )
    assert [e.event for e in res.events] == ["UPDATE"], res.events
    assert _facts(memory) == ["The deposit on the flat in Hackney is £2,150, due Friday."]


def test_a_place_taken_instead_rewrites_the_place_and_keeps_who_and_when(memory: Memory) -> None:
    """ "We're taking mum to Annecy instead for her 70th weekend." after "For my mum's 70th in
    June, my brother Kofi and I are taking her to Lucerne for a long weekend": the one place of
    the plan is rewritten; who goes and when still hold (a month is no place)."""
    _say(
        memory,
        "For my mum's 70th in June, my brother Kofi and I are taking her to Lucerne for a long weekend.",
    )
    res = memory.add(
        [{"role": "user", "content": "We're taking mum to Annecy instead for her 70th weekend."}],
        user_id="u",
        timestamp=T0 + timedelta(days=6),
    )
    assert [e.event for e in res.events] == ["UPDATE"], res.events
    assert _facts(memory) == [
        "For my mum's 70th in June, my brother Kofi and I are taking her to Annecy for a long weekend."
    ]
