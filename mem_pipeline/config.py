"""One frozen configuration. The environment is read here and nowhere else (:meth:`from_env`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from .errors import ConfigError
from .models import Category

__all__ = ["DEFAULT_HALF_LIVES_DAYS", "ENV_VARS", "MemoryConfig", "default_data_path"]

#: The environment variables :meth:`MemoryConfig.from_env` reads, and the field each sets.
ENV_VARS: dict[str, str] = {
    "MEM_PIPELINE_PATH": "path",
    "QDRANT_URL": "url",
    "QDRANT_API_KEY": "qdrant_api_key",
    "MEM_PIPELINE_LLM": "llm",
    "OPENAI_API_KEY": "llm_api_key",
    "OPENAI_BASE_URL": "llm_base_url",
    "MEM_PIPELINE_LLM_MODEL": "llm_model",
    "MEM_PIPELINE_EMBEDDER": "embedder",
    "MEM_PIPELINE_EMBEDDING_MODEL": "embedding_model",
    "MEM_PIPELINE_STRUCTURED_OUTPUT": "llm_structured_output",
    "MEM_PIPELINE_ENGINE": "engine",
}
_VAR_OF = {field: var for var, field in ENV_VARS.items()}
_SECRET = {"llm_api_key", "qdrant_api_key"}


def _config_error(e: ValidationError) -> ConfigError:
    """Our words for pydantic's: each bad setting with its variable, the value and what is
    allowed (never a secret's value, never a documentation link)."""
    problems = []
    for err in e.errors():
        field = str(err["loc"][0]) if err.get("loc") else "?"
        name = f"{_VAR_OF[field]} (MemoryConfig.{field})" if field in _VAR_OF else f"MemoryConfig.{field}"
        if err.get("type") == "extra_forbidden":
            problems.append(f"MemoryConfig has no setting {field!r}")
            continue
        msg = str(err.get("msg", "invalid")).replace("Input should", "it should")
        hidden = field in _SECRET or err.get("type") == "missing"
        value = "" if hidden else f" is {err.get('input')!r:.60}"
        problems.append(f"{name}{value}: {msg}")
    return ConfigError("invalid configuration: " + "; ".join(problems))


#: Half-life (days) of a fact's recency factor, per category. The reasoning: who a person is and
#: whom they know changes over years (biography, relationship: ~3 years); tastes and skills over
#: a year or two; work and health over months; plans are about a near future and go stale within
#: weeks; an event is remembered but its relevance to "now" fades within a season.
DEFAULT_HALF_LIVES_DAYS: dict[str, float] = {
    Category.BIOGRAPHY.value: 1095.0,
    Category.RELATIONSHIP.value: 1095.0,
    Category.PREFERENCE.value: 540.0,
    Category.SKILL.value: 540.0,
    Category.WORK.value: 270.0,
    Category.HEALTH.value: 180.0,
    Category.EVENT.value: 120.0,
    Category.PLAN.value: 45.0,
    Category.OTHER.value: 180.0,
}


def default_data_path() -> Path:
    """Where the embedded store lives when no path is given: the user's data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("mem_pipeline", appauthor=False)) / "qdrant"


class MemoryConfig(BaseModel):
    """Configuration of a :class:`~mem_pipeline.Memory`. Frozen; build a new one to change it.

    Store: ``path`` (embedded Qdrant on disk, ``":memory:"`` for a throwaway store) or ``url``
    (a Qdrant server). Neither: the embedded store at :func:`default_data_path`.

    Dedupe thresholds (cosine of the local all-MiniLM-L6-v2 int8 embedder, facts compared in
    the third person), measured with ``python -m eval.dedupe_threshold`` on
    ``eval/data/paraphrase_pairs.jsonl`` (hand-written: 60 paraphrases, 60 related-but-different
    facts such as "rent is 1,200" / "rent is 1,500", 30 unrelated). Cosine alone cannot separate
    them: related pairs have a *higher* median cosine (0.869) than paraphrases (0.894 after the
    voice rewrite, 0.699 before). So a merge needs cosine >= ``dedupe_threshold`` AND no
    conflicting specifics (numbers, negations, dates, names). Measured, paraphrases merged /
    wrong merges out of 90: 0.86 -> 65.0% / 10; 0.88 -> 53.3% / 7; **0.90 -> 46.7% / 4**;
    0.92 -> 31.7% / 2. We take 0.90: a missed merge costs a near-copy, a wrong merge only
    bumps a confirmation count (the new wording is kept in the REINFORCE history event).
    ``dedupe_threshold``: at or above, a new fact reinforces the stored one instead of adding.
    ``related_threshold``: between this and ``dedupe_threshold``, a fact is "related": the LLM
    reconciler (when configured) decides ADD / UPDATE / SUPERSEDE / NOOP, and the offline
    reconciler supersedes only when the new text carries an explicit correction cue.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # store
    path: str | None = None
    url: str | None = None
    qdrant_api_key: str | None = None
    collection_prefix: str = "mem_pipeline"
    #: embedded engine of a new store: "edge" (Qdrant's Rust engine in process, the default)
    #: or "local" (qdrant-client's pure-Python mode). None: an existing store keeps its own,
    #: a new one gets ``store.DEFAULT_ENGINE``. Ignored with ``url``.
    engine: Literal["edge", "local"] | None = None
    #: how many facts' fields (not their vectors or indexed texts) an embedded store keeps in
    #: memory, least recently used leaving first: a search asks the engine for ids and scores
    #: and reads the fields of only the facts this misses (``store._briefs``). Memory stays
    #: flat past it, however large the store (about 2 KB a fact). A server store keeps none.
    payload_cache: int = Field(default=20_000, ge=0)

    # embedder
    embedder: Literal["local", "openai"] = "local"
    embedding_model: str = "text-embedding-3-small"
    #: intra-op threads of the local embedder; None: the machine's cores, up to 4
    embedding_threads: int | None = Field(default=None, ge=1)

    # LLM extraction and reconciliation on add: opt-in. "none" (the default) runs the offline
    # extractor whatever keys the environment holds, so a key exported for something else never
    # turns every add into a paid call; "openai" (MEM_PIPELINE_LLM=openai) calls the
    # OpenAI-compatible endpoint below and needs llm_api_key or llm_base_url.
    llm: Literal["none", "openai"] = "none"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_structured_output: Literal["auto", "json_schema", "json_object"] = "auto"
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=4, ge=0)
    llm_reasks: int = Field(default=2, ge=0)
    # the model's context window (tokens): extraction splits a long add into windows that fit
    # it, with room for the prompt and extract_output_tokens of answer. 4096 is the smallest
    # context of the servers we test with (llama.cpp's default); gpt-4o-mini has 128k.
    llm_context_tokens: int = Field(default=4096, ge=1024)
    extract_output_tokens: int = Field(default=1024, ge=128)
    # turns an extraction window repeats from the window before it, for context (no fact is
    # taken from them twice)
    extract_overlap: int = Field(default=2, ge=0, le=10)
    # user turns the LLM took no fact from are read by the offline rules too (a small model
    # passes over "pescatarian btw"); their facts count in ``AddResult.backfilled``. A model
    # fact that says a turn without the change it tells ("now", "no longer", "correction") is
    # replaced by the rules' statement of it (``AddResult.replaced``), so that reconciliation
    # sees the cue
    extract_backfill: bool = True
    # the offline extractor asks a learned second opinion before it keeps a sentence: a
    # logistic regression on the sentence's embedding may drop small talk the word lists miss
    # (``write.memorable``; weights for the default local embedder only, else it is off).
    # Measured with ``python -m eval.train_memorable`` and ``eval.behaviour``
    memorable_filter: bool = True
    # the offline extractor's categories come from a learned model (multinomial logistic
    # regression on the fact's embedding, ``write.categories.CategoryModel``; weights for the
    # default local embedder only, else the word rules). Measured with ``python -m
    # eval.train_categories``: .944 against the word rules' .706 on 177 held-out sentences
    category_model: bool = True
    # with no LLM reconciler, a learned model (``write.replaces``) says where the rules would
    # ADD whether a statement replaces one of its nearest stored facts ("these days it's
    # Albariño for me" after "I'm strictly a red wine person"); weights for the default local
    # embedder only. Off by default: on 180 held-out pairs it lifts the rules' recall of
    # replacements from .35 to .54 at about their precision (``python -m eval.train_replaces``),
    # but in the pipeline it fixed one development probe and cost one rank-1 probe and one
    # abstention on the fifth blind behaviour set (``eval/README.md``, "Behaviour")
    replace_model: bool = False

    # dedupe / reconcile
    dedupe_threshold: float = Field(default=0.90, gt=0, le=1)
    related_threshold: float = Field(default=0.70, gt=0, le=1)

    # raw turns (infer=False): how many neighbouring turns each side lend their words to a
    # turn's lexical index entry (same scope, same metadata["session"] when given); lent words
    # count half as much as the turn's own (``_text.CONTEXT_WEIGHT``). LoCoMo tuning split
    # (conv-26/30/41), R@5/R@10: window 1 .73/.84, **2 .76/.86**, 3 .76/.85.
    context_window: int = Field(default=2, ge=0, le=10)
    # a query that names a speaker (metadata["speaker"]) multiplies that speaker's turns'
    # relevance by 1 + speaker_boost: "what did Mel paint?" is about Mel's turns, though the
    # other speaker's "Mel, your painting..." can still win on a clearly better match.
    # Tuning split R@5 (names still in the dense query): 0.1 .75, 0.2 .75, 0.3 .76, 0.5 .77.
    # Once the dense query left the names out (``dense_without_speakers``) the boost alone
    # matches the person, and 0.3 -> 0.5 gained on both sets: LoCoMo (all 7) R@5/R@10
    # .801/.868 -> .808/.873,
    # hand-written .88/.98 -> .90/.98 (0.7 no better on either: a strong hint, not a filter).
    # A possessive names the speaker too ("Maya's job", ``_text.name_tokens``).
    speaker_boost: float = Field(default=0.5, ge=0, le=1)
    # with the speaker boost on, a query that names speakers of the scope is embedded without
    # their names (``Memory._dense_query``): the boost matches the person, the dense vector what
    # is asked. A name in the vector ranks short turns that only say it ("Thanks, Caroline!")
    # as answers. LoCoMo (all 7) R@5/R@10/MRR .792/.863/.607 -> .801/.868/.621 (dense only
    # .496/.585 -> .626/.741); hand-written set .84/.96/.574 -> .88/.98/.605. Scopes with more
    # than 1,000 speakers match only the 1,000 most frequent (``QdrantStore.speakers``).
    dense_without_speakers: bool = True
    # a query that names a calendar date ("on 1 May, 2022", "in July 2022", "in May") multiplies
    # the relevance of what was said on that date (or up to 3 days after) by 1 + date_boost.
    # LoCoMo R@5/R@10, tuning split: none .761/.860, 0.2 .766/.868, **0.4 .774/.870**;
    # held-out: none .742/.817, 0.4 .758/.829 (12% of questions name a date). A named date is
    # nearly a filter: the gold turn was said in the named range for 28 of the tuning split's
    # 34 dated questions (115 of 128 over all 7). Retuned once the lexical fill was in, tuning
    # split R@5/R@10/MRR: 0.4 .831/.901/.669, **0.7 .831/.901/.671** (dated questions' MRR
    # .710 -> .729), 1.0 .829/.901/.669; held-out 0.4 .809/.872, 0.7 .815/.875. The
    # hand-written set is the same at all three (3 of its 50 questions name a date).
    date_boost: float = Field(default=0.7, ge=0, le=1)
    # a query that asks when ("When did...", "What year...": ``_text.asks_when``) multiplies by
    # 1 + when_boost the relevance of what places something in time ("yesterday", "last week",
    # "in May", "2019": ``_text.says_when``): the turn that answers "when?" says when, and its
    # date resolves it. LoCoMo (all 7) R@5/R@10/MRR .808/.873/.626 -> .813/.874/.632 (temporal
    # R@10 .865 -> .869, MRR .677 -> .705); hand-written set MRR .611 -> .621 (temporal MRR
    # .833 -> .869), recall at 5/10/20 unchanged.
    when_boost: float = Field(default=0.2, ge=0, le=1)
    # a stored fact (not a turn) that says something ended ("I've gone off Arctic Monkeys", "I
    # cancelled my PureGym membership": ``text.slots.says_ended``) tells history: for a question
    # to the asker about their present (``text.slots.asks_now``) such facts come after the others
    # (``read.rank.history_last``), so that what still holds comes first ("who is my favourite
    # band?"), and so do the turns only such facts come from. Behaviour sets and LoCoMo:
    # eval/README.md, "What ended".
    history_last: bool = True
    # in a store that extracts facts, an item a search found that a later item it also found is
    # about (cosine >= this, said on another day, by the same person) is set aside for it, for
    # a question to the asker about their present that names no date and does not ask "when"
    # (``read.newer``): a correction worded without any cue the write rules know still ends the
    # value it replaced, for the questions that find both. 0 turns it off. Behaviour sets and
    # LoCoMo: eval/README.md, "What was said later".
    newer_sets_aside: float = Field(default=0.45, ge=0, le=1)
    # a proposal of the assistant's the user took up ("I agreed: book a table at Dishoom ...")
    # ranks before the statement that started it ("It's our anniversary on Saturday"), stored
    # up to a day before, when it is at least this share as close to the question in meaning
    # (``read.rank.agreed_first``). 0 turns it off. Behaviour sets: eval/README.md, "What was
    # settled".
    agreed_first: float = Field(default=0.5, ge=0, le=1)
    # for the same kind of question, 1 + current_boost multiplies the relevance of what says it
    # holds now ("I'm into korean dramas now", "these days I'm all about cold brew":
    # ``text.slots.says_current``): of two statements about as relevant, the one that tells
    # the present wins. A factor, so it only settles near ties ("big fan of marvel films" .98
    # against .97). Behaviour sets: eval/README.md, "What holds now"
    current_boost: float = Field(default=0.1, ge=0, le=1)
    # a query that asks for a name ("Where...", "Which city / book / game...":
    # ``_text.asks_name``) multiplies by 1 + name_boost the relevance of what names something
    # other than the conversation's speakers (a capitalised word inside a sentence, a quoted
    # title: ``_text.names_something``): the turn that answers "where?" says the place.
    # LoCoMo (all 7) R@5/R@10/R@20/MRR .814/.876/.920/.637 -> .813/.878/.921/.645; hand-written
    # set unchanged (.880/.980/1.000/.642). With "who" and "what is the name" questions too, the
    # hand-written MRR fell to .636 (see ``asks_name``).
    name_boost: float = Field(default=0.2, ge=0, le=1)
    # a candidate whose metadata names a session gains session_boost x the best relevance in its
    # session (see ``recall.rank``): where one turn matches strongly, its neighbours in the same
    # conversation are likelier to hold the rest of the answer. LoCoMo (all 7 conversations)
    # R@5/R@10: none .773/.840, **0.2 .782/.853**; hand-written set R@5 .80 -> .82.
    session_boost: float = Field(default=0.2, ge=0, le=1)
    # a valid fact that sets the attribute a first-person question asks about (``text.slots``:
    # "which city am I in?" -> where the user lives; "am I still working?" -> their work) gains
    # slot_boost x the best relevance (1: such facts come first) and passes the relevance floor
    slot_boost: float = Field(default=1.0, ge=0, le=2)
    # a raw turn that answers a question (the turn before it, said by someone else, asked one:
    # ``StoredFact.reply_to``) gains reply_boost x that question's relevance when both are
    # candidates (``recall.reply_lift``): the question holds a later query's words, the answer
    # what it wants. LoCoMo (all 7) R@5/R@10/MRR: none .779/.852/.585, **0.2 .792/.863/.607**
    # (held-out split .766/.839 -> .783/.849); hand-written set R@5/R@10/R@20 .86/.96/.96 ->
    # .84/.96/.98 (one question each way; 0.1, 0.15 and 0.3 give the same)
    reply_boost: float = Field(default=0.2, ge=0, le=1)

    # concept links (see mem_pipeline.concepts). concept_match_threshold: a query n-gram matches
    # a stored concept by name embedding at or above this cosine. Measured with
    # `python -m eval.concept_threshold` on 30 hand-written pairs (eval/data/concept_pairs.jsonl):
    # at 0.70, 15/15 pairs that must match do ("timed out"/"timeout" 0.735, "doggy"/"dog" 0.719)
    # and 2/15 that must not also do ("vegetarian"/"vegan" 0.751); 0.72 loses "doggy"/"dog",
    # 0.66 adds "running"/"marathon" and "dog"/"cat". A wrong match only adds a query concept.
    expand_links: bool = True
    # a direct hit tagged with a concept the query names: score x (1 + concept_boost x match)
    concept_boost: float = Field(default=0.3, ge=0, le=2)
    concept_match_threshold: float = Field(default=0.70, gt=0, le=1)
    link_floor: float = Field(default=0.2, ge=0, le=1)
    link_min_count: int = Field(default=2, ge=1)
    link_half_life_days: float = Field(default=180.0, gt=0)
    max_hops: int = Field(default=2, ge=1, le=3)
    link_fanout: int = Field(default=3, ge=1)
    max_expanded_concepts: int = Field(default=8, ge=0)
    association_limit: int = Field(default=3, ge=0, le=50)
    # seconds the concept counts and links a write changes, its history rows and the context
    # its turns lend the turns before them wait, to be written in one batch with those of the
    # writes that follow (mem_pipeline.links, "Write-behind"): an add returns sooner, reads
    # never see them late, a crash leaves a journal entry that recovery completes. 0 writes
    # them with each fact. eval.compare_mem0: add p50 1.00x mem0's (three runs; counts and
    # links alone waiting: 1.06x-1.11x; nothing waiting: 1.36x / 1.46x), recall identical
    # (eval/README.md)
    link_write_delay: float = Field(default=0.1, ge=0, le=60)

    # an extracting add also keeps the turns it read, as turns (searchable, and the sources of
    # its facts); False keeps facts only, for deployments that must not keep raw text
    keep_turns: bool = True

    # input limits: one message, and one add call (turns, characters in all). An add holds the
    # store's write lock while it writes, so these bound how long one request can make
    # every other tenant wait (a 420-turn add once held it for 12 s).
    max_message_chars: int = Field(default=32_000, ge=1)
    max_add_turns: int = Field(default=100, ge=1)
    max_add_chars: int = Field(default=64_000, ge=1)

    # scoring
    half_lives_days: Mapping[str, float] = Field(default_factory=lambda: dict(DEFAULT_HALF_LIVES_DAYS))
    # decay_floor: the share of its score an old fact always keeps. Decay is a tie-breaker
    # between similarly relevant facts, not a filter: relevance is min-max scaled per query, so
    # at 0.35 a year-old exact answer lost to a fresh half-match. LoCoMo (months-long chats,
    # "when did X..." questions about old sessions) tuning split R@10 vs --no-decay:
    # 0.35 -.03, 0.7 -.02, 0.8 -.01; held-out split: 0.8 = no decay. Once the lexical scores
    # of dense-only candidates were filled (``FactStore.search(fill=True)``) the relevance spread
    # narrowed and 0.8 cost more (tuning split R@10 .909 without decay: 0.8 .896, 0.85 .899,
    # **0.9 .901**; held-out .871 without decay, .872 at 0.9).
    decay_floor: float = Field(default=0.9, ge=0, le=1)
    # the relevance floor: a hit whose confidence (a calibrated probability that it is relevant
    # at all, from its cosine and whether the question is about the person; see
    # ``read.rank.confidence``) is below min_score is not returned, so an unrelated question
    # gets an empty block. The weights are a logistic fit on the behaviour scenarios' (probe,
    # hit) pairs (``python -m eval.abstention``). The floor is the one of best abstention F1
    # through the gate on every development behaviour set (388 probes: main, first to fifth
    # held-out; ``python -m eval.abstention --gate ...``, eval/README.md "The relevance floor"):
    # 0.18 (F1 .936: unrelated questions left empty .926, of those left empty .946 should be)
    # against 0.225 before (.918: .937, .899), which also answered fewer questions it should.
    #
    # It gates the question, not each hit: a search whose best candidate is below min_score
    # returns nothing; one that passes returns its ranked hits down to hit_floor. A per-hit
    # floor at 0.225 also abstained, but dropped answers that rank well on other signals: on
    # LoCoMo dev it cost R@10 -.039 (paired 95% [-.052, -.025]; `python -m eval.locomo ...
    # --floor-compare`), evidence turns that share few words' meaning with the question.
    min_score: float = Field(default=0.18, ge=0, le=1)
    hit_floor: float = Field(default=0.0, ge=0, le=1)
    confidence_weights: tuple[float, float, float] = (6.674, 4.589, -7.087)
    # candidate_pool: how many facts each of the dense and lexical searches returns for ranking
    # is max(candidate_pool, pool_per_hit x limit). Min-max scaling sees the whole pool, so the ranking
    # depends on it a little: on LoCoMo the top 5 of a search for 5 (pool 40) gave R@5 .774,
    # the top 5 of a search for 20 (pool 80) .779. At 80, a search for up to 20 hits returns a
    # prefix of a search for 20; but each recall then reads twice the candidates (one run of
    # `python -m eval.bench --local-sizes` with this default set to 80: recall p50 at 100k
    # facts 14.5 ms, 2.48x its floor, against 2.29x at 40 in an earlier run), so it stays 40.
    candidate_pool: int = Field(default=40, ge=1, le=1000)
    # pool_per_hit: a search for more than candidate_pool / pool_per_hit hits asks each signal
    # for pool_per_hit x limit candidates. 4 until 2026-12-03; at 3 a search for 20 reads 60 a
    # signal instead of 80, 0.63 ms less a search on LoCoMo (paired, `eval.search_ab`), and the
    # dev set's R@5 / R@10 / R@20 went .819 / .883 / .919 -> .820 / .880 / .916 (the hand-written
    # set: R@k the same, MRR .642 -> .647). Set 4 for the last bit of recall.
    pool_per_hit: int = Field(default=3, ge=1, le=50)
    # dense_weight: share of the normalised dense score in relevance (rest: lexical). LoCoMo
    # tuning split R@5/R@10: 0.35 .758/.855, 0.45 .761/.860, **0.55 .756/.862**, 0.65 lower;
    # held-out: 0.45 .742/.817, 0.55 .740/.809 -- a tie; our hand-written set prefers 0.55
    # (R@5 .80 vs .78, MRR .57 vs .54), so the default stays 0.55.
    dense_weight: float = Field(default=0.55, ge=0, le=1)
    use_sparse: bool = True
    use_decay: bool = True

    @model_validator(mode="wrap")
    @classmethod
    def _our_errors(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(data)
        except ValidationError as e:
            raise _config_error(e) from None

    @model_validator(mode="after")
    def _llm_reachable(self) -> MemoryConfig:
        if self.llm == "openai" and not self.llm_endpoint_set:
            raise ConfigError(
                "MEM_PIPELINE_LLM=openai (MemoryConfig.llm) needs OPENAI_API_KEY (OpenAI) or "
                "OPENAI_BASE_URL (any OpenAI-compatible server); unset it for the offline extractor"
            )
        return self

    @property
    def llm_configured(self) -> bool:
        """Whether ``add`` extracts and reconciles with the LLM (``llm="openai"``)."""
        return self.llm == "openai"

    @property
    def llm_endpoint_set(self) -> bool:
        """Whether an LLM endpoint is known (a key or a base URL): enough for an explicit call
        such as ``answer_question``, not for extraction (see ``llm``)."""
        return bool(self.llm_base_url or self.llm_api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> MemoryConfig:
        """Build from the environment (:data:`ENV_VARS`; an empty variable counts as unset);
        explicit ``overrides`` win. A bad value is a :class:`ConfigError` naming the variable
        and what it allows."""
        env = os.environ if env is None else env
        values: dict[str, object] = {field: env[var] for var, field in ENV_VARS.items() if env.get(var)}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    def half_life(self, category: str) -> float:
        return float(self.half_lives_days.get(category, self.half_lives_days.get("other", 180.0)))
