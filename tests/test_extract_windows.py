"""The LLM extractor's windows and the checks on what the model returns, with a scripted
client in place of the model (real model answers are replayed in ``test_llm_cassettes``)."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from _llm_server import ScriptedLLM

from mem_pipeline.errors import LLMRetryError
from mem_pipeline.llm import Completion, LLMClient, complete_prefix
from mem_pipeline.models import ExtractionOutput, Message
from mem_pipeline.write.extract import LLMExtractor, estimate_tokens, lines_of, rest_of, windows

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


class Scripted:
    """Answers each ``complete`` with the next scripted reply (a dict, or an exception), and
    keeps the prompts it was sent."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, schema: Any, prompt: str, **_: Any) -> Completion[Any]:
        self.prompts.append(prompt)
        reply = self.replies.pop(0) if self.replies else {"facts": []}
        if isinstance(reply, Exception):
            raise reply
        cut = isinstance(reply, tuple)  # ("cut", reply): the answer hit max_tokens
        if cut:
            reply = reply[1]
        value = ExtractionOutput.model_validate(reply)
        return Completion(value, json.dumps(reply), 1, 100, 20, truncated=cut)


def _chat(n: int, words: int = 12) -> list[Message]:
    names = ["Caroline", "Melanie"]
    return [
        Message(role="user", name=names[i % 2], content=f"Line {i} " + " ".join(["word"] * words) + ".")
        for i in range(n)
    ]


def test_windows_cover_every_line_once_with_overlap() -> None:
    lines = lines_of(_chat(40), budget=200)
    wins = windows(lines, budget=200, overlap=2)
    assert len(wins) > 1
    new = [ln for w in wins for ln in w.new]
    assert new == lines  # every line is new in exactly one window, in order
    for before, w in itertools.pairwise(wins):
        assert w.context == 2 and w.lines[:2] == before.lines[-2:]
    for w in wins:
        assert sum(estimate_tokens(ln.render()) + 1 for ln in w.lines) <= 200


def test_a_turn_longer_than_a_window_is_split_never_cut() -> None:
    long = "This is a sentence about my garden and my tomatoes. " * 80
    msgs = [Message(role="user", content="Hello there."), Message(role="user", content=long)]
    lines = lines_of(msgs, budget=150)
    pieces = [ln for ln in lines if ln.index == 1]
    assert len(pieces) > 1 and all(ln.number == 2 for ln in pieces)
    assert " ".join(ln.text for ln in pieces) == " ".join(long.split())  # nothing lost
    wins = windows(lines, budget=150, overlap=1)
    assert [ln for w in wins for ln in w.new] == lines


def test_a_session_is_a_few_calls_and_no_fact_is_taken_twice() -> None:
    msgs = _chat(60)
    llm = Scripted([])
    ex = LLMExtractor(llm, context_tokens=1600, output_tokens=256, overlap=2)  # type: ignore[arg-type]
    n_windows = len(windows(lines_of(msgs, ex.budget), ex.budget, 2))
    assert 1 < n_windows < 60 * 0.15
    # the second window repeats two lines of the first: a fact from those only is dropped
    first = windows(lines_of(msgs, ex.budget), ex.budget, 2)
    ctx = first[1].lines[0]
    own = first[1].new[0]
    llm.replies = [
        {"facts": []},
        {
            "facts": [
                {"text": f"{ctx.speaker} said line {ctx.index} word.", "lines": [ctx.number]},
                {"text": f"{own.speaker} said line {own.index} word.", "lines": [own.number]},
            ]
        },
    ]
    out = ex.extract(msgs, WHEN)
    assert out.windows == n_windows == len(llm.prompts) == out.llm_calls
    assert [f.source_turns for f in out.facts] == [[own.index]]
    assert "were read before" in llm.prompts[1] and "were read before" not in llm.prompts[0]


def test_facts_name_their_person_with_absolute_dates_and_cite_real_lines() -> None:
    msgs = [
        Message(role="user", name="Caroline", content="Hey Mel! Good to see you!"),
        Message(role="user", name="Melanie", content="Hi! I'm swamped with the kids and work."),
        Message(role="user", name="Caroline", content="I went to a LGBTQ support group yesterday."),
    ]
    llm = Scripted(
        [
            {
                "facts": [
                    # first person, a relative date, the right line
                    {"text": "I went to a LGBTQ support group yesterday.", "about": "Caroline", "lines": [3]},
                    # "the user" in a named chat, citing a line that does not say it
                    {"text": "The user is swamped with the kids and work.", "lines": [1]},
                    # a line number outside the conversation
                    {"text": "Melanie is swamped with work.", "about": "Melanie", "lines": [99]},
                    # supported by no line at all
                    {"text": "Caroline owns a sailing boat.", "about": "Caroline", "lines": [3]},
                ]
            }
        ]
    )
    out = LLMExtractor(llm).extract(msgs, WHEN)  # type: ignore[arg-type]
    texts = [(f.text, f.source_turns, f.subject) for f in out.facts]
    assert texts[0] == ("Caroline went to a LGBTQ support group on 7 May 2023.", [2], "Caroline")
    assert texts[1] == ("Melanie is swamped with the kids and work.", [1], "Melanie")  # regrounded
    assert texts[2] == ("Melanie is swamped with work.", [1], "Melanie")  # regrounded
    assert texts[3][1] == [2]  # left as cited: the writer's grounding rejects it
    assert out.regrounded == 2
    assert "Caroline and Melanie" in llm.prompts[0] and "[3] Caroline: I went to" in llm.prompts[0]


def test_a_plain_chat_keeps_the_user() -> None:
    msgs = [
        Message(role="user", content="I moved to Porto last month."),
        Message(role="assistant", content="How exciting! Do you like it?"),
    ]
    llm = Scripted([{"facts": [{"text": "I moved to Porto last month.", "lines": [1]}]}])
    (fact,) = LLMExtractor(llm).extract(msgs, WHEN).facts  # type: ignore[arg-type]
    assert fact.text == "The user moved to Porto in April 2023." and fact.subject is None
    assert "[2] Assistant: How exciting!" in llm.prompts[0] and 'Start it with "The user"' in llm.prompts[0]


def test_the_rules_outrank_the_models_category_and_leave_it_what_they_cannot_tell() -> None:
    msgs = [
        Message(role="user", content="I hate mushrooms, I will never order them."),
        Message(role="user", content="I've been learning Portuguese for a year."),
        Message(role="user", content="The blue one was nicer."),
    ]
    reply = {
        "facts": [
            {
                "text": "The user hates mushrooms and will never order them.",
                "lines": [1],
                "category": "health",
            },
            {"text": "The user has been learning Portuguese for a year.", "lines": [2], "category": "work"},
            {"text": "The user found the blue one nicer.", "lines": [3], "category": "preference"},
        ]
    }
    got = [f.category.value for f in LLMExtractor(Scripted([reply])).extract(msgs, WHEN).facts]  # type: ignore[arg-type]
    assert got == ["preference", "skill", "preference"]  # the last: no rule matches, the model's
    trusting = LLMExtractor(Scripted([reply]), rule_categories=False)  # type: ignore[arg-type]
    assert [f.category.value for f in trusting.extract(msgs, WHEN).facts] == ["health", "work", "preference"]


def test_the_models_work_label_needs_a_word_of_work() -> None:
    from mem_pipeline.embed import EmbeddingCache, LocalEmbedder
    from mem_pipeline.write.categories import CategoryModel

    msgs = [
        Message(role="user", content="Passed my judo black belt grading on Saturday!"),
        Message(role="user", content="I fix bikes for a living."),
    ]
    reply = {
        "facts": [
            {"text": "The user passed their judo black belt grading.", "lines": [1], "category": "work"},
            {"text": "The user fixes bikes for a living.", "lines": [2], "category": "work"},
        ]
    }
    # no word of work in the first: not work, whatever the model said; the second says it is
    got = [f.category.value for f in LLMExtractor(Scripted([reply])).extract(msgs, WHEN).facts]  # type: ignore[arg-type]
    assert got == ["other", "work"]
    model = LocalEmbedder()
    learned = CategoryModel.shipped(EmbeddingCache(model), model.model_id)  # what a Memory passes it
    assert learned is not None
    ex = LLMExtractor(Scripted([reply]), categories=learned)  # type: ignore[arg-type]
    first, second = ex.extract(msgs, WHEN).facts
    assert first.category.value not in ("work", "other") and second.category.value == "work"


def test_a_failed_window_does_not_lose_the_others() -> None:
    msgs = _chat(60)
    fail = LLMRetryError("the LLM gave no valid ExtractionOutput", attempts=3, last_output="{")
    llm = Scripted([fail])
    ex = LLMExtractor(llm, context_tokens=1600, output_tokens=256)  # type: ignore[arg-type]
    wins = windows(lines_of(msgs, ex.budget), ex.budget, 2)
    second = wins[1].new[0]
    llm.replies = [
        fail,
        {"facts": [{"text": f"{second.speaker} said line {second.index}.", "lines": [second.number]}]},
    ]
    out = ex.extract(msgs, WHEN)
    assert [idx for idx, _ in out.failed] == [wins[0].indexes]
    assert len(out.facts) == 1
    # every window failing is the extraction failing
    with pytest.raises(LLMRetryError):
        LLMExtractor(Scripted([fail]), context_tokens=4096).extract(msgs[:3], WHEN)  # type: ignore[arg-type]


def test_a_context_too_small_for_the_prompt_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        LLMExtractor(Scripted([]), context_tokens=1024, output_tokens=900)  # type: ignore[arg-type]


def test_an_add_whose_window_failed_keeps_the_rest_and_pends_that_window(embedder, clock) -> None:
    from mem_pipeline import Memory, MemoryConfig
    from mem_pipeline.errors import ExtractionPendingError

    msgs = [
        Message(role="user", name=n, content=f"I have {i} red bicycles in my garage number {i}.")
        for i, n in enumerate(["Ann", "Bob"] * 30)
    ]
    fail = LLMRetryError("the LLM gave no valid ExtractionOutput", attempts=3, last_output="{")
    llm = Scripted([])
    ex = LLMExtractor(llm, context_tokens=1600, output_tokens=256)  # type: ignore[arg-type]
    wins = windows(lines_of(msgs, ex.budget), ex.budget, 2)
    ln = wins[1].new[0]
    llm.replies = [
        fail,
        {"facts": [{"text": f"{ln.speaker} has {ln.index} red bicycles.", "lines": [ln.number]}]},
    ]
    llm.replies += [{"facts": []}] * (len(wins) - 2)
    m = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock, extractor=ex)
    try:
        with pytest.raises(ExtractionPendingError) as err:
            m.add([x.model_dump() for x in msgs], user_id="u")
        result = err.value.result
        assert len(result.ids) == 1 and len(result.turn_ids) == 60  # the fact of window 2, all turns
        (pending,) = m.pending(user_id="u")
        assert [x["content"] for x in pending["messages"]] == [msgs[i].content for i in wins[0].indexes]
        # the retry reads only those messages; their turns are not stored twice
        llm.replies = [{"facts": [{"text": "Ann has 0 red bicycles.", "lines": [1]}]}]
        (again,) = m.retry_pending(user_id="u")
        assert len(again.ids) == 1 and m.pending(user_id="u") == []
        assert len(m.get_all(user_id="u", kind="turn")) == 60
        assert len(m.get_all(user_id="u", kind="fact")) == 2
    finally:
        m.close()


# -- answers cut off by the output limit -----------------------------------------------------------
def test_complete_prefix_keeps_the_finished_elements() -> None:
    whole = '{"facts": [{"text": "A {b} [c]", "lines": [1]}, {"text": "say \\"hi\\"", "lines": [2]}]}'
    for cut in range(len(whole)):
        kept = complete_prefix(whole[:cut])
        if kept is not None:
            facts = json.loads(kept)["facts"]
            assert facts == json.loads(whole)["facts"][: len(facts)] and facts
    assert json.loads(complete_prefix(whole[:-3]) or "") == {"facts": [{"text": "A {b} [c]", "lines": [1]}]}
    assert complete_prefix('{"facts": [{"text": "A') is None
    assert complete_prefix("not json ]") is None


def test_the_client_keeps_what_a_cut_answer_finished() -> None:
    cut = '{"facts": [{"text": "Caroline paints.", "about": "Caroline", "lines": [1]}, {"text": "Mel'
    server = ScriptedLLM(json_reply=cut, finish_reason="length")
    try:
        llm = LLMClient(model="m", base_url=server.url, api_key="k", structured_output="json_object")
        out = llm.complete(ExtractionOutput, "extract", max_tokens=50)
        assert out.truncated and [f.text for f in out.value.facts] == ["Caroline paints."]
        assert len(server.requests) == 1  # no re-ask: a longer prompt would be cut sooner
        server.finish_reason = "stop"  # the same text, not cut: invalid JSON is re-asked
        with pytest.raises(LLMRetryError):
            LLMClient(model="m", base_url=server.url, api_key="k", reasks=1).complete(ExtractionOutput, "x")
    finally:
        server.close()


def test_rest_of_a_cut_window() -> None:
    lines = lines_of(_chat(10), budget=10_000)
    win = windows(lines, budget=10_000, overlap=2)[0]
    (rest,) = rest_of(win, [1, 3], overlap=2)
    assert [ln.number for ln in rest.new] == list(range(4, 11))
    assert [ln.number for ln in rest.lines[: rest.context]] == [2, 3]
    halves = rest_of(win, [], overlap=2)  # nothing finished: split
    assert [[ln.number for ln in w.new] for w in halves] == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    assert rest_of(win, [10], overlap=2) == []
    assert rest_of(windows(lines[:1], 10_000, 2)[0], [], overlap=2) == []


def test_a_cut_answer_keeps_its_facts_and_the_rest_is_read_again() -> None:
    msgs = [
        Message(role="user", name="Caroline", content="I paint landscapes every weekend."),
        Message(role="user", name="Melanie", content="I run marathons with my brother."),
        Message(role="user", name="Caroline", content="I adopted a cat called Miso."),
        Message(role="user", name="Melanie", content="I work as a nurse in Leeds."),
    ]
    llm = Scripted(
        [
            ("cut", {"facts": [{"text": "Caroline paints landscapes every weekend.", "lines": [1]}]}),
            {"facts": [{"text": "Caroline adopted a cat called Miso.", "lines": [3]}]},
        ]
    )
    ex = LLMExtractor(llm, context_tokens=4096, output_tokens=256, overlap=1)  # type: ignore[arg-type]
    res = ex.extract(msgs, WHEN)
    assert res.windows == 2 and len(llm.prompts) == 2
    # line 1 is shown again for context only; lines 2 to 4, which the cut answer never reached, are new
    assert "Lines up to [1] were read before" in llm.prompts[1]
    assert "[2] Melanie" in llm.prompts[1] and "[4] Melanie" in llm.prompts[1]
    assert [f.text for f in res.facts] == [
        "Caroline paints landscapes every weekend.",
        "Caroline adopted a cat called Miso.",
    ]


def test_the_offline_rules_backfill_what_the_model_passed_over() -> None:
    from mem_pipeline.write.offline import OfflineExtractor

    msgs = [
        Message(role="assistant", content="I'll put together a meal plan. Anything to avoid?"),
        Message(role="user", content="pescatarian btw"),
        Message(role="user", content="Allergic to cats, sadly. My wife Lucía is from Oaxaca."),
        Message(role="user", content="all good, just procrastinating lol"),
    ]
    replies = [
        {
            "facts": [
                # grounded, covers the cats sentence of line 3 (but not Lucía)
                {"text": "The user is allergic to cats.", "lines": [3]},
                # unsupported by line 2: rejected, so line 2 counts as passed over
                {"text": "The user wants to avoid pescatarian food.", "lines": [2]},
                # cites only small talk: dropped
                {"text": "The user is procrastinating.", "lines": [4]},
            ]
        }
    ]
    with_rules = LLMExtractor(Scripted(list(replies)), backfill=OfflineExtractor())  # type: ignore[arg-type]
    out = with_rules.extract(msgs, WHEN)
    texts = [(f.text, f.origin) for f in out.facts]
    assert ("The user is allergic to cats.", None) in texts
    assert ("Pescatarian", "offline") in texts
    assert ("My wife Lucía is from Oaxaca.", "offline") in texts
    assert not any("cats" in t and o == "offline" for t, o in texts)  # the model said it already
    assert not any("procrastinat" in t for t, _ in texts)
    assert out.backfilled == 2
    bare = LLMExtractor(Scripted(list(replies))).extract(msgs, WHEN)  # type: ignore[arg-type]
    assert bare.backfilled == 0 and not any(f.origin == "offline" for f in bare.facts)


def test_the_users_words_replace_a_model_fact_that_dropped_the_change_they_tell() -> None:
    from mem_pipeline.write.offline import OfflineExtractor

    msgs = [
        Message(role="user", content="These days I'm all about cold brew, lattes feel too milky for me now."),
        Message(role="user", content="I've switched to a standing desk."),
    ]
    reply = {
        "facts": [
            {"text": "The user likes cold brew and finds lattes too milky.", "lines": [1]},  # "now" lost
            {"text": "The user has switched to a standing desk.", "lines": [2]},  # the cue kept
        ]
    }
    out = LLMExtractor(Scripted([reply]), backfill=OfflineExtractor()).extract(msgs, WHEN)  # type: ignore[arg-type]
    texts = [(f.text, f.origin) for f in out.facts]
    assert ("These days I'm all about cold brew, lattes feel too milky for me now.", "offline") in texts
    assert not any(t.startswith("The user likes cold brew") for t, _ in texts)
    assert ("The user has switched to a standing desk.", None) in texts
    assert not any("standing desk" in t and o == "offline" for t, o in texts)
    assert out.replaced == 1


def test_between_named_people_only_statements_about_the_speaker_are_backfilled() -> None:
    from mem_pipeline.write.offline import OfflineExtractor

    msgs = [
        Message(role="user", name="Rosa", content="Great to hear from you. Keep up the great work!"),
        Message(role="user", name="Tomás", content="I started a pottery class on Tuesday."),
    ]
    out = LLMExtractor(Scripted([{"facts": []}]), backfill=OfflineExtractor()).extract(msgs, WHEN)  # type: ignore[arg-type]
    assert [f.text for f in out.facts] == ["Tomás started a pottery class on Tuesday."]


def test_a_model_fact_over_two_of_ones_turns_covers_both_for_the_backfill() -> None:
    from mem_pipeline.write.offline import OfflineExtractor

    msgs = [
        Message(
            role="user",
            name="Caroline",
            content="I went to a LGBTQ support group yesterday and it was so powerful.",
        ),
        Message(role="user", name="Melanie", content="Wow, what happened there?"),
        Message(role="user", name="Caroline", content="The transgender stories were so inspiring!"),
    ]
    fact = "Caroline went to an LGBTQ support group and found the transgender stories inspiring."
    reply = {"facts": [{"text": fact, "lines": [1]}]}  # it cites the first of her two turns
    out = LLMExtractor(Scripted([reply]), backfill=OfflineExtractor()).extract(msgs, WHEN)  # type: ignore[arg-type]
    # the write path keeps the fact on both her turns (ground.widen): the rules add nothing it says
    assert [(f.text, f.origin) for f in out.facts] == [(fact, None)]
    assert out.backfilled == 0


def test_what_the_conversation_did_is_no_fact_and_a_reported_statement_is_told_as_itself() -> None:
    msgs = [
        Message(role="user", name="Gina", content="What kind of flooring do you like for the studio?"),
        Message(
            role="user", name="Jon", content="I'm considering Marley flooring, which studios usually use."
        ),
        Message(role="user", name="Gina", content="Sounds perfect. Jon asked me out last year, by the way!"),
    ]
    llm = Scripted(
        [
            {
                "facts": [
                    {
                        "text": "Gina asked Jon about the type of flooring he liked.",
                        "about": "Gina",
                        "lines": [1],
                    },
                    {"text": "Gina agreed with Jon's flooring plans.", "about": "Gina", "lines": [3]},
                    {
                        "text": "Jon mentioned that he was considering Marley flooring.",
                        "about": "Jon",
                        "lines": [2],
                    },
                    {"text": "Jon asked Gina out last year.", "about": "Gina", "lines": [3]},
                ]
            }
        ]
    )
    out = LLMExtractor(llm).extract(msgs, WHEN)  # type: ignore[arg-type]
    texts = [f.text for f in out.facts]
    assert texts == ["Jon was considering Marley flooring.", "Jon asked Gina out in 2022."]
    assert out.acts == 2


def test_the_backfill_asks_the_memorable_filter_as_the_offline_path_does() -> None:
    """What the rules keep and the learned filter doubts is no backfilled fact: it goes to
    ``doubtful``, which the writer stores only where it replaces a stored fact."""
    import numpy as np

    from mem_pipeline.write.memorable import MemorableFilter
    from mem_pipeline.write.offline import OfflineExtractor

    class Axis:  # one axis: 1 for a text that says "keep", else -1
        def embed(self, texts: Any) -> Any:
            return np.array([[1.0 if "keep" in t else -1.0] for t in texts], dtype=np.float32)

    judge = MemorableFilter(Axis(), "axis", {"model_id": "axis", "w": [4.0], "b": 0.0, "threshold": 0.5})
    msgs = [Message(role="user", content="Hmm, let me think about it. I'm vegan. I keep bees.")]
    out = LLMExtractor(Scripted([{"facts": []}]), backfill=OfflineExtractor(judge=judge)).extract(msgs, WHEN)  # type: ignore[arg-type]
    assert [f.text for f in out.facts] == ["I'm vegan.", "I keep bees."]
    assert [(f.text, f.origin) for f in out.doubtful] == [("Hmm, let me think about it.", "offline")]
    assert out.backfilled == 2
    plain = LLMExtractor(Scripted([{"facts": []}]), backfill=OfflineExtractor()).extract(msgs, WHEN)  # type: ignore[arg-type]
    assert len(plain.facts) == 3 and not plain.doubtful
