from __future__ import annotations

from datetime import datetime, timezone


def test_paraphrase_merges_unrelated_adds(mem) -> None:
    mem.add("I am vegetarian.", user_id="ana")
    res = mem.add("Just so you know, I'm vegetarian.", user_id="ana")
    assert res.count("REINFORCE") == 1 and res.count("ADD") == 0
    facts = mem.get_all(user_id="ana", kind="fact")
    assert len(facts) == 1 and facts[0].confirmations == 2
    # the paraphrase's wording (without its filler) is kept in history, not lost; and each
    # turn that said it is kept as a turn
    assert mem.history(facts[0].id, user_id="ana")[-1].new_text == "I'm vegetarian."
    turns = mem.get_all(user_id="ana", kind="turn")
    assert [t.text for t in turns] == ["I am vegetarian.", "Just so you know, I'm vegetarian."]

    res = mem.add("My car is a red Fiat Panda.", user_id="ana")
    assert res.count("ADD") == 1
    assert len(mem.get_all(user_id="ana", kind="fact")) == 2


def test_different_specifics_do_not_merge(mem) -> None:
    mem.add("My rent is 1,200 euros per month.", user_id="ana")
    res = mem.add("My rent is 1,500 euros per month.", user_id="ana")
    assert res.count("REINFORCE") == 0
    assert len(mem.get_all(user_id="ana", kind="fact")) == 2


def test_dedupe_is_scoped(mem) -> None:
    mem.add("I am vegetarian.", user_id="ana")
    res = mem.add("I am vegetarian.", user_id="bob")
    assert res.count("ADD") == 1


def test_offline_correction_supersedes_and_keeps_history(mem, clock) -> None:
    (old,) = mem.add("My sister Ana lives in Lisbon.", user_id="u").ids
    clock.advance(days=30)
    res = mem.add("Actually, my sister Ana lives in Porto now.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old
    valid = mem.get_all(user_id="u", kind="fact")
    assert [f.text for f in valid] == ["My sister Ana lives in Porto now."]
    # the turn that said the old fact is superseded with it; the correcting turn is kept
    assert [t.text for t in mem.get_all(user_id="u", kind="turn")] == [
        "Actually, my sister Ana lives in Porto now."
    ]
    everything = mem.get_all(user_id="u", include_invalid=True)
    superseded = next(f for f in everything if f.id == old)
    assert superseded.invalid_at == clock.now and superseded.superseded_by == valid[0].id
    # superseded facts never rank unless asked for
    assert old not in [h.id for h in mem.search("where does my sister live", user_id="u").hits]
    assert old in [
        h.id for h in mem.search("where does my sister live", user_id="u", include_invalid=True).hits
    ]
    assert [e.event for e in mem.history(old, user_id="u")] == ["ADD", "SUPERSEDE"]


def test_a_change_of_the_same_thing_supersedes_without_a_slot(mem, clock) -> None:
    (old,) = mem.add("My go-to coffee is a flat white, every single morning.", user_id="u").ids
    clock.advance(days=40)
    res = mem.add("These days I'm all about cold brew, flat whites feel too milky for me now.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old
    assert "a change of" in res.events[0].reason
    # a change cue alone, about something else, replaces nothing
    res = mem.add("These days I walk to work.", user_id="u")
    assert res.count("ADD") == 1 and res.count("SUPERSEDE") == 0


def test_a_new_employer_keeps_where_the_old_fact_said_one_is_based(mem, clock) -> None:
    said = "I am employed as a procurement officer at Maersk, based in Copenhagen."
    (old,) = mem.add(said, user_id="u").ids
    clock.advance(days=160)
    res = mem.add("I have left Maersk and have joined Novo Nordisk as an analyst.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old, res.events
    valid = [f.text for f in mem.get_all(user_id="u", kind="fact")]
    assert "Based in Copenhagen." in valid and not any("procurement" in t for t in valid)
    # a clause of fewer words that says nothing of where one lives is left behind
    from mem_pipeline.write.reconcile import _stands_alone

    assert _stands_alone("Based in Copenhagen.") and not _stands_alone("Stress at work.")


def test_a_new_job_keeps_the_city_the_old_job_was_said_in(mem, clock) -> None:
    """A correction of the job that says nothing of where one is keeps the place the old fact
    named, as a statement of its own; one that names a place, or moves, does not."""
    from mem_pipeline.write.clauses import based

    mem.add(
        "I'm a sound engineer at a small recording studio in Ljubljana, mostly folk and jazz.", user_id="u"
    )
    clock.advance(days=190)
    res = mem.add("Left the studio in september. I do live sound for the Mladinsko theatre now.", user_id="u")
    assert res.count("SUPERSEDE") == 1, res.events
    valid = [f.text for f in mem.get_all(user_id="u", kind="fact")]
    assert "I'm based in Ljubljana." in valid and not any("recording" in t or "folk" in t for t in valid)
    hits = mem.search("Which city do I live in?", user_id="u").hits
    assert "Ljubljana" in hits[0].text
    # a new job said with its own city leaves the old city behind
    mem.add("I'm a test engineer at Siemens in Erlangen, mostly MRI scanner software.", user_id="v")
    clock.advance(days=190)
    mem.add("Actually I'm a test engineer at Schaeffler in Nuremberg now.", user_id="v")
    assert not any("Erlangen" in f.text for f in mem.get_all(user_id="v", kind="fact"))
    # who the place is said of, and what is no place
    assert based("My sister is a midwife at the LRI in Leicester") == "My sister is based in Leicester"
    assert based("I work like software tester in Totvs here in Curitiba") == "I'm based in Curitiba"
    assert based("I work at Google in Marketing") is None and based("I started at Siemens in March") is None
    assert based("We are getting married at St Mary's in Whitby") is None  # not a clause of work
    # a move keeps what the same clause said beside where one lived
    mem.add("The user is a marine biologist based in Bergen, mostly studying cod stocks.", user_id="w")
    clock.advance(days=180)
    mem.add("First winter since we moved up to Tromsø, the polar night is rough.", user_id="w")
    valid = [f.text for f in mem.get_all(user_id="w", kind="fact")]
    assert "The user is a marine biologist, mostly studying cod stocks." in valid, valid
    assert not any("Bergen" in t for t in valid)


def test_a_change_of_one_clause_keeps_the_clauses_it_does_not_touch(mem, clock) -> None:
    (old,) = mem.add("I drive forklifts at the Daventry distribution centre, night shifts.", user_id="u").ids
    clock.advance(days=30)
    res = mem.add("Moved onto day shifts, finally get to have dinner with the kids.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old, res.events
    valid = [f.text for f in mem.get_all(user_id="u") if f.kind == "fact"]
    assert "I drive forklifts at the Daventry distribution centre." in valid  # the job and the place stay
    assert not any("night" in t for t in valid)
    # a taste is one thing: a change of it keeps none of its clauses
    mem.add("I only read paper books, e-readers feel weird to me.", user_id="v")
    clock.advance(days=30)
    mem.add("Got a Kindle and honestly I'm converted, I read everything on it now.", user_id="v")
    assert not any("weird" in f.text for f in mem.get_all(user_id="v") if f.kind == "fact")
    # what is left of one's own trade stays, however short: "I'm a physiotherapist"
    mem.add(
        "I'm a physiotherapist, and most evenings after work I'm out on the lake with the Harbour Lane "
        "Rowing Club",
        user_id="w",
    )
    clock.advance(days=30)
    res = mem.add("I'm not with Harbour Lane any more, the knee is done.", user_id="w")
    assert res.count("SUPERSEDE") == 1 and "a change of" in res.events[0].reason, res.events
    valid = [f.text for f in mem.get_all(user_id="w") if f.kind == "fact"]
    assert "I'm a physiotherapist." in valid, valid
    assert not any("Rowing" in t for t in valid), valid


def test_a_change_rule_stays_with_its_person_and_never_takes_something_new_for_an_end(mem, clock) -> None:
    said = [
        {"role": "user", "name": "Gina", "content": "I got mentored by a business coach yesterday."},
        {"role": "user", "name": "Jon", "content": "I run a dance studio in town."},
    ]
    mem.add(said, user_id="c")
    clock.advance(days=20)
    # a new start about the same business is no end of the mentoring, and Jon's change is his
    for text, who in (
        ("I started learning new marketing tools for my business.", "Gina"),
        ("These days I run a dance studio in town too.", "Gina"),
    ):
        res = mem.add([{"role": "user", "name": who, "content": text}], user_id="c")
        assert res.count("SUPERSEDE") == 0, res.events
    assert all(t.is_valid for t in mem.get_all(user_id="c", kind="turn", include_invalid=True))


def test_a_memory_of_childhood_and_work_that_is_no_job_replace_nothing(mem, clock) -> None:
    said = [
        {"role": "user", "name": "Caroline", "content": "I can't wait to build a family for kids."},
        {"role": "user", "name": "Jon", "content": "I lost my job as a banker yesterday."},
        {"role": "user", "name": "Jon", "content": "I'm working at a dance studio as a teacher."},
    ]
    mem.add(said, user_id="c")
    clock.advance(days=20)
    for text, who in (
        ("I used to go horseback riding with my dad when I was a kid.", "Caroline"),  # history
        ("I'm working on new dance routines for the show.", "Jon"),  # a task, not a job
        ("I'm determined to make it work, it's all hard work.", "Jon"),
    ):
        res = mem.add([{"role": "user", "name": who, "content": text}], user_id="c")
        assert res.count("SUPERSEDE") == 0, res.events
    # a job is still a job, and a change of it still supersedes
    res = mem.add([{"role": "user", "name": "Jon", "content": "I work at a bank again now."}], user_id="c")
    assert res.count("SUPERSEDE") == 1, res.events


def test_saying_the_old_value_stopped_after_the_move_is_no_second_fact(mem, clock) -> None:
    (old,) = mem.add("I'm based in Manchester.", user_id="u").ids
    clock.advance(days=30)
    res = mem.add("We finally moved to Leeds last weekend. I don't live in Manchester anymore.", user_id="u")
    assert [e.event for e in res.events] == ["SUPERSEDE", "NOOP"]
    assert "already replaced" in res.events[1].reason
    facts = [f.text for f in mem.get_all(user_id="u", kind="fact")]
    assert len(facts) == 1 and "Leeds" in facts[0]
    assert not mem.get(old, user_id="u").is_valid


def test_a_subject_of_two_stays_one_fact_and_the_break_up_ends_it(mem, clock) -> None:
    res = mem.add("My boyfriend Marco and I have been together for three years.", user_id="u")
    assert [e.text for e in res.events] == ["My boyfriend Marco and I have been together for three years."]
    (old,) = res.ids
    clock.advance(days=150)
    res = mem.add("Marco and I broke up last month.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old
    # a clause of its own after the "and" still splits
    res = mem.add("My sister lives in Porto and I work in Braga.", user_id="u")
    assert res.count("ADD") == 2


def test_a_cancelled_membership_ends_the_fact_that_names_it(mem, clock) -> None:
    (old,) = mem.add("I go to PureGym on Deansgate four times a week.", user_id="u").ids
    clock.advance(days=140)
    res = mem.add("I cancelled my PureGym membership.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old
    assert "puregym" in res.events[0].reason


def test_how_the_user_wants_answers_is_one_setting_replaced_whole(mem, clock) -> None:
    (old,) = mem.add("Please keep your answers short, bullet points if possible.", user_id="u").ids
    clock.advance(days=120)
    res = mem.add("I prefer longer, detailed explanations from you now.", user_id="u")
    assert [e.event for e in res.events] == ["SUPERSEDE"] and res.events[0].previous_id == old
    # no remainder ("Bullet points if possible.") survives: every clause was about the replies
    assert [f.text for f in mem.get_all(user_id="u", kind="fact")] == [
        "I prefer longer, detailed explanations from you now."
    ]
    hits = mem.search("How do I like your answers?", user_id="u").hits
    assert hits and hits[0].text.startswith("I prefer longer")
    # telling a story about an answer is no setting
    res = mem.add("I gave a detailed answer to my boss.", user_id="u")
    assert res.count("ADD") == 1


def test_a_new_title_keeps_the_employer_it_does_not_name(mem, clock) -> None:
    (old,) = mem.add("I'm a junior analyst at Barclays, in the risk team.", user_id="u").ids
    clock.advance(days=200)
    res = mem.add("I'm a senior analyst now.", user_id="u")
    assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == old
    facts = {f.text for f in mem.get_all(user_id="u", kind="fact")}
    assert facts == {"I'm employed at Barclays, in the risk team.", "I'm a senior analyst now."}
    # a new title at a new employer keeps nothing of the old one
    clock.advance(days=200)
    mem.add("I'm a data scientist at Monzo now.", user_id="u")
    assert not any("Barclays" in f.text for f in mem.get_all(user_id="u", kind="fact"))


def test_a_reply_to_the_assistants_suggestion_is_merged_into_the_statement_it_answers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from mem_pipeline import Memory, MemoryConfig

    at = datetime(2026, 3, 10, 20, tzinfo=timezone.utc)
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        first = m.add(
            [{"role": "user", "content": "I need a new hobby for the winter."}], user_id="u", timestamp=at
        )
        reply = m.add(
            [
                {"role": "assistant", "content": "What about bouldering? There's a climbing gym near you."},
                {"role": "user", "content": "Ooh yes, I just signed up for their intro class on Saturday!"},
            ],
            user_id="u",
            timestamp=at + timedelta(minutes=2),
        )
        (update,) = [e for e in reply.events if e.event == "UPDATE"]
        (fact_id,) = [e.id for e in first.events if e.kind == "fact"]
        assert (
            update.id == fact_id and update.text == "I need a new hobby for the winter; I agreed: bouldering."
        )
        merged = m.get(fact_id, user_id="u")
        assert len(merged.sources) == 2  # the turn of the need and the turn that took the suggestion up
        assert [h.event for h in m.history(fact_id, user_id="u")] == ["ADD", "UPDATE"]
        hits = m.search("What new hobby am I trying?", user_id="u", now=at + timedelta(days=8)).hits
        assert hits and "bouldering" in hits[0].text
        # hours later, a reply carries on nothing: it is a fact of its own
        later = m.add(
            [
                {"role": "assistant", "content": "Maybe try a pottery class?"},
                {"role": "user", "content": "Nah, I'm doing yoga instead."},
            ],
            user_id="u",
            timestamp=at + timedelta(hours=5),
        )
        assert "UPDATE" not in [e.event for e in later.events]


def test_a_new_diet_keeps_nothing_of_the_foods_the_old_one_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from mem_pipeline import Memory, MemoryConfig

    at = datetime(2025, 11, 4, 12, tzinfo=timezone.utc)
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        m.add(
            [{"role": "user", "content": "I eat meat every day, big fan of steak, love cycling to work."}],
            user_id="u",
            timestamp=at,
        )
        r = m.add(
            [{"role": "user", "content": "I went vegetarian in January."}],
            user_id="u",
            timestamp=at + timedelta(days=90),
        )
        assert [e.event for e in r.events if e.kind == "fact"] == ["SUPERSEDE", "ADD"]
        facts = sorted(f.text for f in m.get_all(user_id="u", kind="fact"))
        assert facts == ["I went vegetarian in January.", "Love cycling to work."]  # no steak left
    # a restriction that does not rule meat out adds to the diet: the steak, and all the rest, stay
    with Memory(MemoryConfig(path=str(tmp_path / "t"))) as m:
        m.add(
            [{"role": "user", "content": "I eat meat every day, big fan of steak, love cycling to work."}],
            user_id="u",
            timestamp=at,
        )
        m.add(
            [{"role": "user", "content": "I went dairy-free in January."}],
            user_id="u",
            timestamp=at + timedelta(days=90),
        )
        assert sorted(f.text for f in m.get_all(user_id="u", kind="fact")) == [
            "I eat meat every day, big fan of steak, love cycling to work.",
            "I went dairy-free in January.",
        ]


def test_a_slip_corrected_minutes_later_keeps_the_rest_of_the_fact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from mem_pipeline import Memory, MemoryConfig

    at = datetime(2025, 10, 7, 19, 30, tzinfo=timezone.utc)
    said = "Our son Kwame is in Year 3 at St Mary's, he's loving it so far."
    with Memory(MemoryConfig(path=str(tmp_path / "s"))) as m:
        first = m.add([{"role": "user", "content": said}], user_id="u", timestamp=at)
        (fid,) = [e.id for e in first.events if e.kind == "fact"]
        fix = "Small correction to what I said, he's at Oakfield Primary. St Mary's was his old school."
        r = m.add([{"role": "user", "content": fix}], user_id="u", timestamp=at + timedelta(minutes=2))
        (update,) = [e for e in r.events if e.event == "UPDATE"]
        assert update.id == fid and "Kwame is in Year 3 at Oakfield Primary" in update.text
        assert m.history(fid, user_id="u")[-1].old_text == said  # what was said first is kept
        r = m.search("Which school does Kwame go to?", user_id="u", now=at + timedelta(days=3))
        assert r.hits and "Oakfield" in r.hits[0].text
        # the first turn, which says what no longer holds, comes back neither as a hit nor beside them
        shown = [*r.hits, *r.associations]
        assert said not in [h.text for h in shown] and said not in r.to_prompt()
        # a day later the same words correct nothing they could name
        later = m.add(
            [{"role": "user", "content": "Correction: he's at Hillside now."}],
            user_id="u",
            timestamp=at + timedelta(days=1),
        )
        assert "UPDATE" not in [e.event for e in later.events]


def test_an_answer_about_a_statement_goes_with_it(mem, clock) -> None:
    snack = "Fave snack rn is salt n vinegar crisps, could eat a family bag a day."
    ids = {u: mem.add(snack, user_id=u).ids[0] for u in ("u", "v")}
    asked = {"role": "assistant", "content": "Ha, a classic! Any particular brand?"}
    mem.add([asked, {"role": "user", "content": "walkers or nothing"}], user_id="u")  # no fact of its own
    (brand,) = [t for t in mem.get_all(user_id="u", kind="turn") if t.text == "walkers or nothing"]
    assert brand.about == ids["u"]
    asked = {"role": "assistant", "content": "Where do you buy them?"}
    (shop,) = mem.add([asked, {"role": "user", "content": "The corner shop on Leith Walk."}], user_id="v").ids
    # an answer that says something of the user's own stands alone
    clock.advance(minutes=2)
    asked = {"role": "assistant", "content": "Any allergies I should know about?"}
    (allergy,) = mem.add([asked, {"role": "user", "content": "I'm allergic to peanuts."}], user_id="u").ids
    assert mem.get(shop, user_id="v").about == ids["v"] and mem.get(allergy, user_id="u").about is None
    clock.advance(days=40)
    for u in ("u", "v"):
        res = mem.add("Ive gone off crisps, roasted chickpeas are my thing now.", user_id=u)
        assert res.count("SUPERSEDE") == 1 and res.events[0].previous_id == ids[u], res.events
    valid = [f.id for u in ("u", "v") for f in mem.get_all(user_id=u)]
    assert not {*ids.values(), brand.id, shop} & set(valid) and allergy in valid
    old = {f.id: f for u in ("u", "v") for f in mem.get_all(user_id=u, include_invalid=True)}
    assert old[brand.id].superseded_by == old[ids["u"]].superseded_by
    assert old[shop].superseded_by == old[ids["v"]].superseded_by
    (_, ended) = mem.history(shop, user_id="v")
    assert ended.event == "SUPERSEDE" and "answered a question about" in ended.detail["reason"]
