"""What a person said later on the same thing sets the earlier items aside (``read.newer``):
for a question about the present that finds both, the later statement answers, and the
earlier one stays stored and valid."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mem_pipeline import Memory, MemoryConfig
from mem_pipeline.read.newer import CUED, FAR_CUED, GAP_S, SIMILAR, set_aside
from mem_pipeline.read.rank import Parts, Ranked
from mem_pipeline.store import Candidate

T0 = datetime(2025, 5, 20, 19, tzinfo=timezone.utc)
DAY = 86400.0


def _ranked(
    pid: str,
    kind: str,
    said: float,
    speaker: str = "",
    text: str = "",
    dense: float = 0.5,
    **more: str,
) -> Ranked:
    payload = {
        "kind": kind,
        "text": text or pid,
        "created_ts": said,
        "metadata": {"speaker": speaker} if speaker else {},
        **more,
    }
    return Ranked(Candidate(pid, payload, dense=dense), 1.0, Parts())


def _vectors(**angles: float) -> dict[str, np.ndarray]:
    """Unit vectors in the plane at these angles (degrees): cosine = cos(difference)."""
    return {k: np.array([np.cos(np.radians(a)), np.sin(np.radians(a))]) for k, a in angles.items()}


def test_a_later_similar_fact_sets_an_earlier_fact_and_turn_aside() -> None:
    ranked = [
        _ranked("old-fact", "fact", 0.0),
        _ranked("old-turn", "turn", 0.0),
        _ranked("other", "fact", 0.0),
        _ranked("new-fact", "fact", 100 * DAY),
    ]
    vecs = _vectors(**{"old-fact": 0, "old-turn": 10, "other": 120, "new-fact": 30})  # cos .87, .94, 0
    kept, aside = set_aside(ranked, vecs)
    assert [r.id for r in kept] == ["other", "new-fact"]
    assert aside == {"old-fact": "new-fact", "old-turn": "new-fact"}


def test_an_answer_about_what_a_later_statement_ends_goes_aside_with_it() -> None:
    later = 100 * DAY
    found = [
        _ranked("snack", "fact", 0.0, text="Fave snack rn is salt n vinegar crisps"),
        _ranked("brand", "turn", 60.0, text="walkers or nothing", about="snack"),
        _ranked("now", "fact", later, text="I've gone off crisps, roasted chickpeas are my thing now."),
    ]
    vecs = _vectors(snack=0, brand=-60, now=40)  # the answer alone is far from the change (cos .17)
    kept, aside = set_aside(found, vecs)
    assert [r.id for r in kept] == ["now"] and aside == {"snack": "now", "brand": "now"}
    # a later statement that ends nothing (a new value) leaves the answer about the rest
    found[2] = _ranked("now", "fact", later, text="These days it's roasted chickpeas for me.")
    assert set_aside(found, vecs)[1] == {"snack": "now"}
    # nor does an end of a fact that sets a slot: only that attribute of it changed
    found = [
        _ranked(
            "home", "fact", 0.0, text="We rent in Leeds with Biscuit the greyhound", slot="the user/residence"
        ),
        _ranked("dog", "fact", 60.0, text="He sleeps 20 hours a day", about="home"),
        _ranked("moved", "fact", later, text="We don't live in Leeds anymore, we bought in York."),
    ]
    assert set_aside(found, _vectors(home=0, dog=-60, moved=40))[1] == {"home": "moved"}


def test_what_sets_nothing_aside() -> None:
    vecs = _vectors(a=0, b=20)
    # in a raw-turn store (no fact among what was found)
    assert set_aside([_ranked("a", "turn", 0), _ranked("b", "turn", 9 * DAY)], vecs)[1] == {}
    # a fact of the same day (a same-day correction is the write rules' to find)
    assert set_aside([_ranked("a", "fact", 0), _ranked("b", "fact", GAP_S / 2)], vecs)[1] == {}
    # another named speaker's fact
    pair = [_ranked("a", "fact", 0, "Caroline"), _ranked("b", "fact", 9 * DAY, "Melanie")]
    assert set_aside(pair, vecs)[1] == {}
    # a fact about something else (cosine below the threshold)
    far = _vectors(a=0, b=70)
    assert set_aside([_ranked("a", "fact", 0), _ranked("b", "fact", 9 * DAY)], far)[1] == {}
    # an item whose vector was not read
    assert set_aside([_ranked("a", "fact", 0), _ranked("b", "fact", 9 * DAY)], {"b": vecs["b"]})[1] == {}
    # the threshold is the caller's
    assert set_aside([_ranked("a", "fact", 0), _ranked("b", "fact", 9 * DAY)], vecs, similar=0.99)[1] == {}


def test_a_later_turn_sets_aside_where_facts_are_extracted() -> None:
    """What the person said later counts whether or not a fact was made of it."""
    ranked = [_ranked("a", "fact", 0), _ranked("b", "turn", 9 * DAY)]
    assert set_aside(ranked, _vectors(a=0, b=20))[1] == {"a": "b"}


def test_restating_a_fact_makes_it_the_later_one() -> None:
    """A reversal: what was restated last is current."""
    first = _ranked("oat", "fact", 0.0)
    first.cand.payload["last_seen_ts"] = 200 * DAY  # said again after the switch
    kept, aside = set_aside([first, _ranked("soya", "fact", 100 * DAY)], _vectors(oat=0, soya=25))
    assert [r.id for r in kept] == ["oat"] and aside == {"soya": "oat"}


def _say(m: Memory, text: str, at: datetime, infer: bool = True) -> None:
    m.add([{"role": "user", "content": text}], user_id="u", timestamp=at, infer=infer)


LATER = T0 + timedelta(days=160)
FIRST = "Korean food is my favourite, could eat bibimbap every day."
SECOND = "Ethiopian food is my whole thing lately, injera at least once a week."


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = Memory(MemoryConfig(path=str(tmp_path / "store")))
    yield m
    m.close()


def test_a_change_of_taste_without_a_cue_answers_for_the_present(memory: Memory) -> None:
    _say(memory, FIRST, T0)
    _say(memory, SECOND, LATER)
    assert all(f.is_valid for f in memory.get_all(user_id="u"))  # the write rules saw no change
    recall = memory.search("what's my favourite cuisine?", user_id="u", now=LATER + timedelta(days=1))
    texts = [h.text for h in recall.hits]
    assert texts and "Ethiopian" in texts[0]
    assert not any("Korean" in t for t in texts)
    assert "Korean" not in recall.to_prompt()
    shown = {h.id for h in recall.hits} | {t for h in recall.hits for t in h.sources}
    assert recall.set_aside and set(recall.set_aside.values()) <= shown
    assert recall.to_json()["set_aside"] == recall.set_aside
    # a question about how things were, or about a date, keeps both
    for question in ("what cuisine did I use to love?", "what food did I love in May 2025?"):
        before = memory.search(question, user_id="u", now=LATER + timedelta(days=1))
        assert any("Korean" in h.text for h in before.hits) and before.set_aside == {}, question


def test_what_has_become_ones_own_sets_aside_the_one_before(memory: Memory) -> None:
    # their cosine is .32: only the cue ("has become my") tells that the second replaces the first
    _say(memory, "Mac and cheese is my ultimate comfort food, I could eat it every day.", T0)
    _say(memory, "Honestly pho has become my go-to comfort meal.", LATER)
    recall = memory.search("what's my comfort food?", user_id="u", now=LATER + timedelta(days=1))
    assert recall.hits and "Pho" in recall.hits[0].text
    assert "Mac and cheese" not in recall.to_prompt()


def test_turned_off_both_are_returned(tmp_path: Path) -> None:
    with Memory(MemoryConfig(path=str(tmp_path / "s"), newer_sets_aside=0)) as m:
        _say(m, FIRST, T0)
        _say(m, SECOND, LATER)
        recall = m.search("what's my favourite cuisine?", user_id="u", now=LATER + timedelta(days=1))
        assert any("Korean" in h.text for h in recall.hits) and recall.set_aside == {}


def test_a_raw_turn_store_keeps_every_turn(memory: Memory) -> None:
    _say(memory, FIRST, T0, infer=False)
    _say(memory, SECOND, LATER, infer=False)
    recall = memory.search("what's my favourite cuisine?", user_id="u", now=LATER + timedelta(days=1))
    assert len(recall.hits) == 2 and recall.set_aside == {}


def test_a_later_statement_of_a_change_sets_aside_what_it_is_less_close_to() -> None:
    """ "ok back on oat milk for good" after "Switched to soya milk" (their cosine .37, below
    :data:`SIMILAR`): a later statement that gives what holds after a change sets an earlier
    item aside from :data:`CUED` cosine on, when the question finds it at least half as close;
    a plain statement, one that only says something ended, or one the question hardly finds
    does not."""
    deg = float(np.degrees(np.arccos((CUED + SIMILAR) / 2)))  # a cosine between the two
    vecs = _vectors(old=0, new=deg)
    old = _ranked("old", "fact", 0, text="Switched to soya milk, it's half the price")

    def later(text: str, dense: float = 0.5) -> Ranked:
        return _ranked("new", "fact", 9 * DAY, text=text, dense=dense)

    assert set_aside([old, later("ok back on oat milk for good")], vecs)[1] == {"old": "new"}
    assert set_aside([old, later("Oat milk is on my list")], vecs)[1] == {}
    assert set_aside([old, later("I don't drink soya milk anymore")], vecs)[1] == {}
    assert set_aside([old, later("ok back on oat milk for good", dense=0.2)], vecs)[1] == {}
    far = _vectors(old=0, new=float(np.degrees(np.arccos(CUED - 0.05))))
    assert set_aside([old, later("ok back on oat milk for good")], far)[1] == {}


def test_the_best_answer_a_change_sets_aside_what_came_before_however_far_its_words() -> None:
    """ "weirdly these days it's mostly jazz for me" ranks first for "what music am I into?";
    "Slipknot, gojira, the heavier the better" (cosine .12: band names carry no genre) was said
    months before: the change sets it aside. Not when the change is not the best answer, not a
    fact that sets a slot (its own rules decide), not another person's, not one of the same
    day, and not for a best answer that says no change."""
    far = _vectors(new=0, old=85)  # cosine .09
    new = _ranked("new", "fact", 200 * DAY, text="Weirdly these days it's mostly jazz for me")
    old = _ranked("old", "fact", 0.0, text="Slipknot, gojira, the heavier the better")
    kept, aside = set_aside([new, old], far)
    assert [r.id for r in kept] == ["new"] and aside == {"old": "new"}
    assert set_aside([old, new], far)[1] == {}  # the change ranks second
    slot = _ranked("old", "fact", 0.0, text="I'm vegetarian", slot="the user/diet")
    assert set_aside([new, slot], far)[1] == {}
    other = _ranked("old", "fact", 0.0, "Melanie", text="Slipknot, the heavier the better")
    said = _ranked("new", "fact", 200 * DAY, "Caroline", text="These days it's mostly jazz for me")
    assert set_aside([said, other], far)[1] == {}
    same_day = _ranked("old", "fact", 200 * DAY - GAP_S / 2, text="Slipknot, the heavier the better")
    assert set_aside([new, same_day], far)[1] == {}
    plain = _ranked("new", "fact", 200 * DAY, text="Jazz is on while I work")
    assert set_aside([plain, old], far)[1] == {}


def test_history_told_later_never_sets_aside_the_change_it_looks_back_past() -> None:
    """ "When I lived in Wellington I'd walk up Mount Victoria" (August) is close to "We moved
    down to Dunedin" (May), and later: it tells history, so it does not set the move aside;
    it may still set aside what it looks back on ("I'm studying law at Trinity")."""
    vecs = _vectors(move=0, old=10, memory=20)
    move = _ranked("move", "fact", 100 * DAY, text="We moved down to Dunedin last month")
    memory = _ranked("memory", "fact", 200 * DAY, text="When I lived in Wellington I'd walk up every weekend")
    assert set_aside([move, memory], vecs)[1] == {}
    law = _ranked("old", "fact", 0.0, text="I'm studying law at Trinity")
    looked_back = _ranked("memory", "fact", 200 * DAY, text="when I was doing law I was bored")
    assert set_aside([law, looked_back], vecs)[1] == {"old": "memory"}


def test_a_question_after_several_things_keeps_what_a_change_of_one_left(memory: Memory) -> None:
    """ "These days I'm really into pottery" changes no hobby but the one it replaced: "What are
    my hobbies?" keeps hiking and the crime novels (before ``asks_many`` the cue set both
    aside); a question about one thing still gets what holds now first."""
    from mem_pipeline.text.slots import asks_many

    assert asks_many("What are my hobbies?") and asks_many("tell me about myself")
    assert asks_many("What am I into?") and not asks_many("What music am I into?")
    _say(memory, "I love hiking in the Alps on weekends.", T0)
    _say(memory, "I read a lot of crime novels, Tana French is my favourite.", T0 + timedelta(days=30))
    _say(memory, "These days I'm really into pottery, I go to a class on Thursdays.", LATER)
    found = memory.search("What are my hobbies?", user_id="u", limit=5, now=LATER + timedelta(days=5))
    texts = " | ".join(h.text for h in found.hits)
    assert "hiking" in texts and "Tana French" in texts and "pottery" in texts, texts
    # the same cue, a question about one thing: what came before is set aside
    narrow = memory.search("What am I really into now?", user_id="u", limit=5, now=LATER + timedelta(days=5))
    assert narrow.hits and "pottery" in narrow.hits[0].text


def test_what_a_correction_leaves_standing_is_as_new_as_the_correction(tmp_path: Path) -> None:
    """ "I'm a junior developer at Spotify, on the payments team.", then months later "Got
    promoted today! I'm a senior developer now.": the employer the correction left standing was
    last said with it, so the new role does not set it aside."""
    with Memory(config=MemoryConfig(path=str(tmp_path / "m"))) as mem:
        mem.add("I'm a junior developer at Spotify, on the payments team.", user_id="u", timestamp=T0)
        later = T0 + timedelta(days=200)
        res = mem.add("Got promoted today! I'm a senior developer now.", user_id="u", timestamp=later)
        rest = [e for e in res.events if e.event == "ADD" and "still says" in (e.reason or "")]
        if not rest:
            pytest.skip("the offline rules did not split this correction")
        kept = mem.get(rest[0].id, user_id="u")
        assert kept.last_seen_at == later
        hits = mem.search("Which company do I work for?", user_id="u", now=later + timedelta(days=3)).hits
        assert hits and "Spotify" in hits[0].text


def test_what_names_the_place_asked_for_is_not_set_aside_for_what_names_none() -> None:
    """ "Where are my parents flying in from?": "My parents are flying in from Manila for it",
    then weeks later "Mum and Dad had to change their flights, ugh." (a change, close to it).
    The later one changed the flights and names no place: for a "where?" question the earlier
    one stays. A later statement that may name a place ("back at fairview") still sets aside
    one that does ("a lab technician at Pfizer"), and without the question's kind both rules
    apply as before."""
    from mem_pipeline.text.phrases import asks_where, gives_place

    assert asks_where("Where are my parents flying in from?") and not asks_where("What do I do?")
    assert gives_place("My parents are flying in from Manila for it") == 2
    assert gives_place("A Spanish conversation group at Didsbury library.") == 2
    assert gives_place("I'm back at fairview teaching chem") == 1
    assert gives_place("Mum and Dad had to change their flights, ugh.") == 0
    assert gives_place("Spanish is on Wednesday afternoons from February 2026.") == 0
    vecs = _vectors(old=0, new=40)  # cosine .77
    old = _ranked("old", "fact", 0.0, text="My parents are flying in from Manila for it")
    new = _ranked("new", "fact", 20 * DAY, text="Mum and Dad had to change their flights, ugh.")
    assert set_aside([new, old], vecs)[1] == {"old": "new"}
    kept, aside = set_aside([new, old], vecs, answers=gives_place)
    assert aside == {} and [r.id for r in kept] == ["new", "old"]
    pfizer = _ranked("old", "fact", 0.0, text="I'm a lab technician at Pfizer now.")
    back = _ranked("new", "fact", 200 * DAY, text="I'm back at fairview teaching chem since january.")
    assert set_aside([back, pfizer], vecs, answers=gives_place)[1] == {"old": "new"}
    far = _vectors(new=0, old=85)  # the change leads and sets aside however far: not a place
    changed = _ranked("new", "fact", 200 * DAY, text="Weirdly these days it's mostly jazz gigs for me")
    venue = _ranked("old", "fact", 0.0, text="We go to gigs at the Brudenell most weekends")
    assert set_aside([changed, venue], far)[1] == {"old": "new"}
    assert set_aside([changed, venue], far, answers=gives_place)[1] == {}


def test_a_where_question_keeps_the_place_a_later_change_does_not_name(memory: Memory) -> None:
    """Through ``Memory.search``: the ceremony moves and the parents change their flights; the
    parents' origin stays in the answer to "where from?"."""
    _say(
        memory,
        "My Australian citizenship ceremony is on 12 March at the Darebin town hall!! "
        "My parents are flying in from Manila for it",
        T0,
    )
    later = T0 + timedelta(days=16)
    _say(
        memory,
        "Bit of a change: the council rescheduled my citizenship ceremony, it's on 2 April now. "
        "Mum and Dad had to change their flights, ugh.",
        later,
    )
    asked = "Where are my parents flying in from?"
    hits = memory.search(asked, user_id="u", now=later + timedelta(days=1)).hits
    assert hits and "Manila" in hits[0].text, [h.text for h in hits]


def test_a_change_worded_far_from_a_taste_sets_it_aside_but_not_a_slot() -> None:
    """ "Tastes change I suppose, these days it's a crisp Albariño or a Sancerre for me" after
    "I'm strictly a red wine person, a big Rioja is my idea of heaven" (cosine .24: grape names
    the embedding hardly knows): the change sets the taste aside from :data:`CUED` on. Below
    :data:`FAR_CUED`, a fact that sets a slot the later one does not ("I'm now a software tester",
    then "Now I get 25 days' leave") is left to the slot's rules."""
    assert CUED < 0.24 < FAR_CUED <= SIMILAR
    vecs = _vectors(old=0, new=float(np.degrees(np.arccos(0.24))))
    red = _ranked(
        "old", "fact", 0.0, text="I'm strictly a red wine person, a big Rioja is my idea of heaven."
    )
    white = _ranked(
        "new", "fact", 150 * DAY, text="Tastes change I suppose, these days it's a crisp Albariño for me."
    )
    assert set_aside([red, white], vecs)[1] == {"old": "new"}
    job = _ranked(
        "old", "fact", 0.0, text="I'm now a software tester at a logistics company.", slot="the user/work"
    )
    leave = _ranked("new", "fact", 60 * DAY, text="Now I get 25 days' leave and have to actually plan them.")
    assert set_aside([job, leave], vecs)[1] == {}
    close = _vectors(old=0, new=float(np.degrees(np.arccos((FAR_CUED + SIMILAR) / 2))))
    assert set_aside([job, leave], close)[1] == {"old": "new"}  # as before, from FAR_CUED on


def test_a_question_on_how_to_treat_the_asker_is_about_their_present(memory: Memory) -> None:
    """ "Which language should you reply in?" names the asker in no word, but asks what they
    want now: "From now on answer me in German" two months after "Please always reply in
    English" answers it, and the English request is set aside."""
    from mem_pipeline.text.slots import asks_now

    assert asks_now("Which language should you reply in?") and asks_now("What should you call me?")
    assert not asks_now("What did you suggest last time?")
    _say(memory, "Please always reply in English, it's easier for me with work stuff.", T0)
    _say(memory, "From now on answer me in German, I need the practice.", T0 + timedelta(days=60))
    hits = memory.search("Which language should you reply in?", user_id="u", now=T0 + timedelta(days=61)).hits
    assert hits and "German" in hits[0].text, [h.text for h in hits]
    assert not any("English" in h.text for h in hits), [h.text for h in hits]


def test_what_names_the_person_asked_for_is_not_set_aside_for_what_names_none() -> None:
    """ "Who am I travelling with?": a trip rebooked elsewhere ("Booked Madeira instead") set
    aside the destination, not who goes: the earlier item that names the person stays for a
    "who?" question, while a later one that names someone too still sets it aside."""
    from mem_pipeline.text.phrases import asks_who, gives_person

    assert asks_who("Who am I travelling with in September?") and asks_who("Whose party is it?")
    assert not asks_who("Where are we going?")
    assert gives_person("We're off to Lisbon in September, me and my wife Dana.") == 2
    assert gives_person("Theo and i are going to a cabin") == 2
    assert gives_person("my sister is coming too") == 1
    assert gives_person("Booked Madeira instead, the hotel deals were way better.") == 0
    vecs = _vectors(old=0, new=70)  # cosine .34: close enough on the cue
    old = _ranked("old", "fact", 0.0, text="We're off to Lisbon in September, me and my wife Dana.")
    new = _ranked("new", "fact", 10 * DAY, text="Booked Madeira instead, the hotel deals were way better.")
    assert set_aside([new, old], vecs)[1] == {"old": "new"}
    assert set_aside([new, old], vecs, answers=gives_person)[1] == {}
    other = _ranked(
        "new", "fact", 10 * DAY, text="Dana can't come now, so it's me and my sister Ines instead."
    )
    assert set_aside([other, old], vecs, answers=gives_person)[1] == {"old": "new"}


def test_a_question_about_a_plan_is_about_its_latest_telling(memory: Memory) -> None:
    """ "Where are we flying in September?" names when the plan is for, not when it was said:
    the trip rebooked a week later answers it, and the first destination is set aside; "who
    with?" still finds the person only the first telling names."""
    from mem_pipeline.text.dates import asks_plan

    assert asks_plan("Where are we going in September?") and asks_plan("What am I doing in June?")
    assert not asks_plan("What did I do in June?") and not asks_plan("When am I flying?")
    _say(memory, "We're flying to Lisbon in September for my 40th, me and my wife Dana.", T0)
    _say(memory, "We switched the flights to Madeira, they were half the price.", T0 + timedelta(days=9))
    now = T0 + timedelta(days=10)
    hits = memory.search("Where are we flying in September?", user_id="u", now=now).hits
    assert hits and "Madeira" in hits[0].text, [h.text for h in hits]
    hits = memory.search("Who am I travelling with in September?", user_id="u", now=now).hits
    assert hits and "Dana" in hits[0].text, [h.text for h in hits]


def test_a_question_about_how_someone_else_stands_now_is_answered_by_the_later_statement(
    memory: Memory,
) -> None:
    """ "What colour is Pepper?" asks how things stand now, about someone else: what the user
    said later of Pepper sets aside what it put right. A question about the past does not."""
    from mem_pipeline.text.slots import asks_now, asks_state

    assert asks_state("What colour is Pepper?") and not asks_now("What colour is Pepper?")
    assert asks_state("where does my brother live?")
    assert not asks_state("What did Caroline research?") and not asks_state("Is he still at Leeds?")
    _say(memory, "Our cat Pepper is a grey tabby, she sleeps on the radiator all winter.", T0)
    _say(
        memory,
        "The vet looked at her properly today: Pepper is not grey at all, she's a British shorthair mix.",
        T0 + timedelta(days=30),
    )
    now = T0 + timedelta(days=31)
    recall = memory.search("What breed is Pepper?", user_id="u", now=now)
    assert recall.hits and "shorthair" in recall.hits[0].text, [h.text for h in recall.hits]
    assert not any("tabby" in h.text for h in recall.hits), [h.text for h in recall.hits]
    assert recall.set_aside  # stored and valid still, set aside for this question only
    assert any("tabby" in f.text for f in memory.get_all(user_id="u") if f.kind == "fact" and f.is_valid)
