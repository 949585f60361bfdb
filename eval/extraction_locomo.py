"""The extract path on LoCoMo: observation coverage and precision, evidence recall with facts,
facts and turns, and turns (one run), and what extraction costs per turn.

    python -m eval.extraction_locomo ../shared/data/locomo/locomo_dev.json --extractor gold \\
        --json eval/results/extraction_gold.json
    python -m eval.extraction_locomo PATH --extractor offline --json eval/results/extraction_offline.json
    python -m eval.extraction_locomo PATH --extractor llm --conversations conv-26 conv-30 --sessions 3 \\
        --llm-url http://127.0.0.1:8089/v1 --json eval/results/extraction_llm.json
    python -m eval.extraction_locomo PATH --extractor mem0 --conversations conv-26 conv-30 --sessions 3 \\
        --llm-url http://127.0.0.1:8090/v1 --json eval/results/extraction_mem0.json   # [compare] extra
    python -m eval.extraction_locomo PATH --fit-labels eval/out/extraction_*_facts.json  # the match rule

Ingest. Each conversation gets its own store (one user). Its first ``--sessions`` sessions (all
by default) go in one ``Memory.add`` each, in order, with extraction on: every turn a message
``{"role": "user", "name": speaker, "content": text}``, ``timestamp`` the session's date,
``metadata={"session": n}`` (a session of more than ``max_add_turns`` turns in several adds).
The add keeps the turns (kind "turn") and the extracted facts (kind "fact", citing their turns).
A stored turn is mapped back to its LoCoMo ``dia_id`` by its text, in order (small-talk turns
are not stored, so the add's turns are matched to the session's messages one by one).

Extractors: ``none`` (the same adds with ``infer=False``: every turn, no facts; the baseline),
``llm`` (``MemoryConfig`` with ``llm_base_url``: the library's LLM extractor and LLM
reconciler), ``offline`` (no LLM: the offline rules), ``gold`` (LoCoMo's own ``observation``
facts of the session, each citing its dia_id turns, given to the library as an ``Extractor``:
grounding, reconciliation and storage are the library's; no LLM) and ``mem0`` (mem0ai 2.2.1
``add(infer=True)`` on the same sessions, same embedder, its LLM at ``--llm-url``; see
:func:`run_mem0`).

Scores (all from the same run, on the stored facts that are valid at the end):

- **observation coverage**: the share of the ingested sessions' gold observations that an
  extracted fact matches; **precision**: the share of facts that match an observation or are
  supported by a turn they cite; ``precision_observed``: that match an observation. The match
  rule (:func:`match_matrix`): the fact cites one of the observation's turns and their cosine is
  at least ``MATCH_THRESHOLD``; supported (:func:`support_score`): the fact names one of the
  conversation's people and its cosine with one of its cited turns ("speaker: text") is at
  least ``SUPPORT_THRESHOLD``. Both thresholds were chosen on the
  hand-labelled pairs of ``eval/data/extraction_match_labels.jsonl`` (ids and labels only;
  ``--fit-labels`` prints the texts and the agreement). The support rule was chosen on facts of
  the offline rules; on the 66 facts of an LLM run and a mem0 run labelled blind (``"labeller":
  "blind"``) it agrees with the labels on 59% only, so compare extractors' precision by the
  labels (``--fit-labels``' ``labelled_precision``), not by the rule.
- **evidence recall@5/10/20**: the questions (categories 1-4) whose gold evidence all lies in
  the ingested sessions, searched three ways on the same store: ``facts`` (``filters={"kind":
  "fact"}``), ``facts_and_turns`` (no filter: what a caller gets) and ``turns`` (kind "turn").
  A question counts at k when one of the first k hits is an evidence turn, or a fact citing
  one (a fact hit counts through its source turns). ``min_score=0`` (no relevance floor), ``now``
  the day after the last ingested session, read-only.
- **cost**: LLM calls, prompt and completion tokens (as the server counted them) and wall
  seconds of the adds, per ingested turn.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from eval.retrieval import Conversation, Turn, load, normalize_evidence
from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
from mem_pipeline.models import ExtractedFact, Message
from mem_pipeline.text.phrases import candidate_phrases
from mem_pipeline.write.extract import Extraction

KS = (5, 10, 20)
VIEWS = ("facts", "facts_and_turns", "turns")
#: the match rule's cosine (fact, observation), chosen on eval/data/extraction_match_labels.jsonl
MATCH_THRESHOLD = 0.60
#: how many lines apart a fact's turn and an observation's may be (0: the same turn)
MATCH_NEAR = 0
#: the support rule's cosine (fact, one of its cited turns), chosen on the same file
SUPPORT_THRESHOLD = 0.50
LABELS = Path(__file__).parent / "data" / "extraction_match_labels.jsonl"


# -- data ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Observation:
    """One gold observation: ``id`` is "session:speaker:index" in LoCoMo's ``observation``."""

    id: str
    session: int
    speaker: str
    text: str
    dia_ids: frozenset[str]


@dataclass
class Fact:
    """An extracted fact as scored: the dia_ids of its source turns, and their texts."""

    key: str  # "conv/session/k": the k-th new fact of that session's add (stable for a rerun)
    session: int
    text: str
    dia_ids: frozenset[str]
    sources_text: list[str] = field(default_factory=list)
    speaker: str | None = None


def observations(raw: Mapping[str, Any], sessions: Iterable[int]) -> list[Observation]:
    """The gold observations of ``sessions`` of one raw LoCoMo conversation."""
    out = []
    for n in sessions:
        for speaker, items in (raw.get("observation", {}).get(f"session_{n}_observation") or {}).items():
            for i, item in enumerate(items):
                text, ev = item[0], item[1]
                dias = normalize_evidence(ev if isinstance(ev, list) else [ev])
                out.append(Observation(f"{n}:{speaker}:{i}", n, speaker, text, frozenset(dias)))
    return out


def sessions_of(conv: Conversation) -> dict[int, list[Turn]]:
    out: dict[int, list[Turn]] = {}
    for t in conv.turns:
        out.setdefault(t.session, []).append(t)
    return out


def raw_conversations(path: str | Path) -> dict[str, dict[str, Any]]:
    return {c["sample_id"]: c for c in json.loads(Path(path).read_text(encoding="utf-8"))}


def sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


# -- the pure scoring ------------------------------------------------------------------------------
def line_of(dia_id: str) -> tuple[int, int]:
    """"D3:12" -> (3, 12)."""
    session, line = dia_id.lstrip("D").split(":")
    return int(session), int(line)


def turn_distance(a: Iterable[str], b: Iterable[str]) -> int | None:
    """The fewest lines between a turn of ``a`` and one of ``b`` in the same session (0: a
    shared turn); None when they share no session."""
    la, lb = [line_of(d) for d in a], [line_of(d) for d in b]
    gaps = [abs(x - y) for s, x in la for t, y in lb if s == t]
    return min(gaps, default=None)


def match_matrix(
    facts: Sequence[Fact], obs: Sequence[Observation], sims: np.ndarray, threshold: float = MATCH_THRESHOLD,
    near: int = MATCH_NEAR,
) -> np.ndarray:
    """``M[i, j]``: fact i matches observation j: it cites one of its turns (or, with ``near``,
    a turn at most that many lines away) and their cosine is at least ``threshold``."""
    m = np.zeros((len(facts), len(obs)), dtype=bool)
    for i, f in enumerate(facts):
        for j, o in enumerate(obs):
            gap = turn_distance(f.dia_ids, o.dia_ids)
            m[i, j] = gap is not None and gap <= near and float(sims[i, j]) >= threshold
    return m


def names_someone(text: str, people: Sequence[str]) -> bool:
    """Whether a fact names one of the conversation's people (facts are about a named person)."""
    low = text.lower()
    return any(p.lower() in low for p in people)


def support_score(cos_to_sources: float | None, named: bool) -> float:
    """The support rule's score: the best cosine with a cited turn, for a fact that names
    someone; -1 for a fact that names no one or cites no turn."""
    return cos_to_sources if named and cos_to_sources is not None else -1.0


def supported(scores: Sequence[float], threshold: float = SUPPORT_THRESHOLD) -> list[bool]:
    """Per fact: its :func:`support_score` is at least ``threshold``."""
    return [s >= threshold for s in scores]


def coverage_precision(match: np.ndarray, support: Sequence[bool]) -> dict[str, Any]:
    """Coverage (observations matched by some fact) and precision (facts matching an observation
    or supported by their turn); ``precision_observed``: facts matching an observation."""
    n_facts, n_obs = match.shape
    observed = match.any(axis=1) if n_obs else np.zeros(n_facts, dtype=bool)
    covered = match.any(axis=0) if n_facts else np.zeros(n_obs, dtype=bool)
    good = [bool(o or s) for o, s in zip(observed, support)]
    return {
        "observations": n_obs,
        "facts": n_facts,
        "observation_coverage": round(float(covered.mean()), 4) if n_obs else None,
        "precision": round(sum(good) / n_facts, 4) if n_facts else None,
        "precision_observed": round(float(observed.mean()), 4) if n_facts else None,
        "supported_only": int(sum(1 for o, s in zip(observed, support) if s and not o)),
    }


def first_rank(hit_dias: Sequence[Iterable[str]], gold: Iterable[str]) -> int | None:
    """The 1-based rank of the first hit holding a gold dia_id (a fact: through its sources)."""
    want = set(gold)
    return next((i + 1 for i, d in enumerate(hit_dias) if want & set(d)), None)


def recall_at(ranks: Sequence[int | None], ks: Sequence[int] = KS) -> dict[str, float | None]:
    if not ranks:
        return {f"R@{k}": None for k in ks}
    return {f"R@{k}": round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 4) for k in ks}


def agreement(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> float:
    """The share of labelled items the rule ``score >= threshold`` agrees with."""
    return sum((s >= threshold) == y for s, y in zip(scores, labels)) / len(labels) if labels else 0.0


def choose_threshold(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, float]:
    """The threshold (a cut between two observed scores, rounded to 0.05) with the best
    agreement with the labels, the lower one on a tie; and that agreement."""
    grid = [round(0.05 * i, 2) for i in range(4, 20)]
    best = max(grid, key=lambda t: (agreement(scores, labels, t), -t))
    return best, agreement(scores, labels, best)


# -- the gold extractor ----------------------------------------------------------------------------
class GoldExtractor:
    """LoCoMo's own observations of the session being added, as an ``Extractor``. Set
    :attr:`session` (its observations and the dia_ids of the add's messages, in order) before
    each ``add``; each observation cites the messages of its dia_ids."""

    name = "gold"

    def __init__(self) -> None:
        self.obs: list[Observation] = []
        self.dia_ids: list[str] = []

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        facts = []
        for o in self.obs:
            cited = [i for i, d in enumerate(self.dia_ids) if d in o.dia_ids]
            if not cited:
                continue  # its turns are in another add of the same session
            facts.append(ExtractedFact(text=o.text, concepts=candidate_phrases(o.text)[:5],
                                       source_turns=cited, subject=o.speaker))
        return Extraction(facts=facts)


# -- ingestion -------------------------------------------------------------------------------------
@dataclass
class Run:
    """What one conversation's ingestion left: dia_ids of the stored turns, the facts, costs."""

    turn_dias: dict[str, set[str]] = field(default_factory=dict)  # stored turn id -> dia_ids
    turn_text: dict[str, str] = field(default_factory=dict)  # stored turn id -> "speaker: text"
    fact_keys: dict[str, str] = field(default_factory=dict)  # stored fact id -> key
    turns_in: int = 0
    unmapped_turns: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    events: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def map_turns(
    events_text: Sequence[tuple[str, str]], turns: Sequence[Turn]
) -> tuple[dict[str, set[str]], int]:
    """Stored turns (id, text, in the add's order) -> the dia_ids of the session turns they are:
    each matched to the next message with the same text (skipped messages were small talk)."""
    out: dict[str, set[str]] = {}
    pos, missing = 0, 0
    for tid, text in events_text:
        j = next((k for k in range(pos, len(turns)) if turns[k].text == text), None)
        if j is None:
            missing += 1
            continue
        out.setdefault(tid, set()).add(turns[j].dia_id)
        pos = j + 1
    return out, missing


def chunks(turns: Sequence[Turn], size: int) -> list[Sequence[Turn]]:
    return [turns[i : i + size] for i in range(0, len(turns), size)] or [[]]


def ingest(mem: Memory, conv: Conversation, sessions: Sequence[int], gold: GoldExtractor | None,
           obs: Sequence[Observation], bar: Any, raw_turns: bool = False) -> Run:
    from mem_pipeline.errors import ExtractionPendingError

    run = Run()
    raw = raw_turns
    by_session = sessions_of(conv)
    for n in sessions:
        turns = by_session[n]
        for part in chunks(turns, mem.config.max_add_turns):
            msgs = [{"role": "user", "name": t.speaker, "content": t.text} for t in part]
            if gold is not None:
                gold.obs = [o for o in obs if o.session == n]
                gold.dia_ids = [t.dia_id for t in part]
            t0 = time.perf_counter()
            try:
                res = mem.add(msgs, user_id=conv.sample_id, timestamp=part[0].when, metadata={"session": n},
                              infer=not raw)
            except ExtractionPendingError as e:  # the turns are stored; the extraction is not
                run.failures.append(f"{conv.sample_id} session {n}: {e}"[:400])
                res = e.result
            run.seconds += time.perf_counter() - t0
            run.turns_in += len(part)
            run.llm_calls += res.llm_calls
            run.prompt_tokens += res.prompt_tokens
            run.completion_tokens += res.completion_tokens
            run.events.update(e.event for e in res.events)
            run.events["windows"] += res.windows
            run.events["regrounded"] += res.regrounded
            run.events["widened"] += res.widened
            run.events["acts"] += res.acts
            stored = res.events if raw else res.turns  # infer=False: the turns are the events
            dias, missing = map_turns([(e.id, e.text) for e in stored if e.id and e.kind == "turn"], part)
            run.unmapped_turns += missing
            for tid, d in dias.items():
                run.turn_dias.setdefault(tid, set()).update(d)
            for t in part:
                for tid, d in dias.items():
                    if t.dia_id in d:
                        run.turn_text[tid] = f"{t.speaker}: {t.text}"
            k = sum(1 for key in run.fact_keys.values() if key.startswith(f"{conv.sample_id}/{n}/"))
            for e in res.events:
                new = e.id is not None and e.id not in run.fact_keys
                if new and e.event != "REJECT" and e.kind == "fact":
                    run.fact_keys[e.id] = f"{conv.sample_id}/{n}/{k}"
                    k += 1
            bar.update(len(part))
    return run


def stored_facts(mem: Memory, conv: Conversation, run: Run) -> list[Fact]:
    out = []
    for f in mem.get_all(user_id=conv.sample_id, kind="fact"):
        dias = frozenset(d for s in f.sources for d in run.turn_dias.get(s, ()))
        out.append(Fact(key=run.fact_keys.get(f.id, f"{conv.sample_id}/{f.metadata.get('session')}/?{f.id}"),
                        session=int(f.metadata.get("session") or 0), text=f.text, dia_ids=dias,
                        sources_text=[run.turn_text[s] for s in f.sources if s in run.turn_text],
                        speaker=f.metadata.get("speaker")))
    return out


# -- scoring one conversation ----------------------------------------------------------------------
def score_facts(
    embedder: LocalEmbedder, facts: Sequence[Fact], obs: Sequence[Observation], people: Sequence[str],
    match_threshold: float, support_threshold: float,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Coverage and precision of ``facts`` against ``obs``, and a row per fact (no texts)."""
    fv = embedder.embed_batch([f.text for f in facts]) if facts else np.zeros((0, embedder.dimensions))
    ov = embedder.embed_batch([o.text for o in obs]) if obs else np.zeros((0, embedder.dimensions))
    sims = fv @ ov.T if len(facts) and len(obs) else np.zeros((len(facts), len(obs)))
    to_src: list[float | None] = []
    for i, f in enumerate(facts):
        if f.sources_text:
            sv = embedder.embed_batch(f.sources_text)
            to_src.append(float((sv @ fv[i]).max()))
        else:
            to_src.append(None)
    match = match_matrix(facts, obs, sims, match_threshold)
    named = [names_someone(f.text, people) for f in facts]
    support = [support_score(c, n) for c, n in zip(to_src, named)]
    out = coverage_precision(match, supported(support, support_threshold))
    out["facts_naming_no_one"] = named.count(False)
    out["facts_without_sources"] = sum(1 for f in facts if not f.dia_ids)
    rows = []
    for i, f in enumerate(facts):
        same = [j for j, o in enumerate(obs) if f.dia_ids & o.dia_ids]
        best = max(same, key=lambda j: sims[i, j], default=None)
        rows.append({"key": f.key, "sha": sha(f.text), "session": f.session, "dia_ids": sorted(f.dia_ids),
                     "best_obs_same_turn": obs[best].id if best is not None else None,
                     "cos_best_obs_same_turn": round(float(sims[i, best]), 4) if best is not None else None,
                     "cos_source": None if to_src[i] is None else round(to_src[i], 4),
                     "names_someone": named[i],
                     "matches": [obs[j].id for j in np.flatnonzero(match[i])]})
    return out, rows


def questions_in(conv: Conversation, dias: set[str]) -> list[Any]:
    return [q for q in conv.questions if q.evidence and set(q.evidence) <= dias]


def search_ranks(mem: Memory, conv: Conversation, run: Run, questions: Sequence[Any], now: datetime,
                 bar: Any) -> dict[str, list[int | None]]:
    ranks: dict[str, list[int | None]] = {v: [] for v in VIEWS}
    filters = {"facts": {"kind": "fact"}, "facts_and_turns": None, "turns": {"kind": "turn"}}
    fact_dias: dict[str, set[str]] = {}
    for q in questions:
        for view in VIEWS:
            r = mem.search(q.question, user_id=conv.sample_id, limit=max(KS), now=now, min_score=0,
                           filters=filters[view])
            hit_dias = []
            for h in r.hits:
                if h.kind == "turn":
                    hit_dias.append(run.turn_dias.get(h.id, set()))
                else:
                    d = fact_dias.setdefault(h.id, {x for s in h.sources for x in run.turn_dias.get(s, ())})
                    hit_dias.append(d)
            ranks[view].append(first_rank(hit_dias, q.evidence))
        bar.update()
    return ranks


# -- mem0 ------------------------------------------------------------------------------------------
class _Usage:
    """Counts mem0's LLM calls and tokens (wraps its OpenAI client's ``create``)."""

    def __init__(self, create: Any) -> None:
        self.create, self.calls, self.prompt_tokens, self.completion_tokens = create, 0, 0, 0

    def __call__(self, **kw: Any) -> Any:
        resp = self.create(**kw)
        self.calls += 1
        if getattr(resp, "usage", None) is not None:
            self.prompt_tokens += resp.usage.prompt_tokens or 0
            self.completion_tokens += resp.usage.completion_tokens or 0
        return resp


def build_mem0_infer(
    root: Path, embedder: LocalEmbedder, url: str, model: str, timeout: float
) -> tuple[Any, _Usage]:
    """mem0ai's ``Memory`` on embedded Qdrant with our embedder and its LLM at ``url``
    (mem0's own defaults otherwise: temperature 0.1, max_tokens 2000, json_object output)."""
    from openai import OpenAI

    from eval.compare_mem0 import import_mem0, mem0_embedder

    import_mem0(root / "mem0_home")
    from mem0 import Memory as Mem0Memory

    config = {
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0", "embedding_model_dims": embedder.dimensions,
            "path": str(root / "qdrant"), "on_disk": True}},
        "embedder": {"provider": "openai", "config": {
            "api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1",
            "embedding_dims": embedder.dimensions}},
        "llm": {"provider": "openai", "config": {"api_key": "local", "openai_base_url": url, "model": model}},
        "history_db_path": str(root / "history.db"),
    }
    mem = Mem0Memory.from_config(config)
    mem.embedding_model = mem0_embedder(embedder)
    mem.llm.client = OpenAI(api_key="local", base_url=url, timeout=timeout, max_retries=0)
    usage = _Usage(mem.llm.client.chat.completions.create)
    mem.llm.client.chat.completions.create = usage
    return mem, usage


def run_mem0(
    args: argparse.Namespace, convs: Sequence[Conversation], raws: Mapping[str, Any],
    embedder: LocalEmbedder, bar: Any,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """mem0ai ``add(infer=True)``, one call per session: the turns as "Speaker: text" (mem0 drops a
    message's name from its prompt) after a system message with the session's date (its
    open-source ``add`` takes no timestamp). Its memories have no source turns: each is
    attributed to the turn of its session most similar to it (cosine with "speaker: text"),
    which then serves as its source for the match rule, the support rule and recall."""
    per_conv, rows, dump = [], [], []
    with tempfile.TemporaryDirectory(prefix="extraction_mem0_") as tmp:
        mem, usage = build_mem0_infer(Path(tmp), embedder, args.llm_url, args.model, args.timeout)
        for conv in convs:
            sess = sessions_of(conv)
            chosen = _sessions(conv, args.sessions)
            obs = observations(raws[conv.sample_id], chosen)
            facts: list[Fact] = []
            mem_dias: dict[str, set[str]] = {}
            seconds, failures, turns_in = 0.0, [], 0
            before = (usage.calls, usage.prompt_tokens, usage.completion_tokens)
            for n in chosen:
                turns = sess[n]
                msgs = [{"role": "system", "content": f"This conversation between {conv.speakers[0]} and "
                         f"{conv.speakers[1]} took place on {turns[0].when:%d %B %Y}."}]
                msgs += [{"role": "user", "content": f"{t.speaker}: {t.text}"} for t in turns]
                t0 = time.perf_counter()
                try:
                    out = mem.add(msgs, user_id=conv.sample_id, metadata={"session": n})
                except Exception as e:  # noqa: BLE001 - mem0's own errors; counted, the run goes on
                    failures.append(f"{conv.sample_id} session {n}: {type(e).__name__}: {e}"[:400])
                    out = {"results": []}
                seconds += time.perf_counter() - t0
                turns_in += len(turns)
                made = [m for m in out.get("results", []) if m.get("event", "ADD") == "ADD"]
                if made:
                    tv = embedder.embed_batch([f"{t.speaker}: {t.text}" for t in turns])
                    mv = embedder.embed_batch([m["memory"] for m in made])
                    for k, (m, v) in enumerate(zip(made, mv)):
                        j = int(np.argmax(tv @ v))
                        mem_dias[m["id"]] = {turns[j].dia_id}
                        facts.append(Fact(key=f"{conv.sample_id}/{n}/{k}", session=n, text=m["memory"],
                                          dia_ids=frozenset({turns[j].dia_id}),
                                          sources_text=[f"{turns[j].speaker}: {turns[j].text}"]))
                bar.update(len(turns))
            scores, frows = score_facts(embedder, facts, obs, conv.speakers, args.match_threshold,
                                            args.support_threshold)
            rows += frows
            dump += [{"key": f.key, "text": f.text, "dia_ids": sorted(f.dia_ids)} for f in facts]
            dias = {t.dia_id for n in chosen for t in sess[n]}
            qs = questions_in(conv, dias)
            ranks: list[int | None] = []
            for q in qs:
                found = mem.search(q.question, top_k=max(KS), filters={"user_id": conv.sample_id},
                                   threshold=0.0)["results"]
                ranks.append(first_rank([mem_dias.get(m["id"], set()) for m in found], q.evidence))
                bar.update()
            per_conv.append({
                "conversation": conv.sample_id, "sessions": list(chosen), "turns": turns_in,
                "stored_turns": 0, "questions": len(qs), **scores,
                "ranks": {"facts": ranks, "facts_and_turns": ranks, "turns": []},
                "llm_calls": usage.calls - before[0], "prompt_tokens": usage.prompt_tokens - before[1],
                "completion_tokens": usage.completion_tokens - before[2], "seconds": round(seconds, 1),
                "events": {"ADD": len(facts)}, "failures": failures})
        mem.close()
    return {"setup": {"mem0ai": _version("mem0ai"), "llm_url": args.llm_url,
                      "messages": "a system message with the session date, then 'Speaker: text' turns",
                      "attribution": "each memory -> the most similar turn of its session (cosine)"}}, \
        per_conv, [*rows, {"dump": dump}]


# -- the run ---------------------------------------------------------------------------------------
def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sessions(conv: Conversation, n: int) -> list[int]:
    have = sorted(sessions_of(conv))
    return have[:n] if n else have


def memory_for(args: argparse.Namespace, embedder: LocalEmbedder, gold: GoldExtractor | None) -> Memory:
    if args.extractor == "llm":
        cfg = MemoryConfig(path=":memory:", llm="openai", llm_base_url=args.llm_url, llm_api_key="local",
                           llm_model=args.model, llm_timeout_s=args.timeout,
                           llm_context_tokens=args.context_tokens,
                           extract_output_tokens=args.output_tokens,
                           extract_backfill=not args.no_backfill)
        return Memory(config=cfg, embedder=embedder)
    return Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, extractor=gold)


def run(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    started = time.perf_counter()
    convs = load(args.path, args.conversations)
    if args.conversations:
        convs.sort(key=lambda c: args.conversations.index(c.sample_id))
    raws = raw_conversations(args.path)
    embedder = LocalEmbedder()
    n_turns = sum(len(t) for c in convs for n, t in sessions_of(c).items()
                  if n in _sessions(c, args.sessions))
    n_q = 0
    for c in convs:
        dias = {t.dia_id for n, ts in sessions_of(c).items() if n in _sessions(c, args.sessions) for t in ts}
        n_q += len(questions_in(c, dias))
    per_conv: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    dump: list[dict[str, Any]] = []
    setup: dict[str, Any] = {}
    with tqdm(total=n_turns + n_q, desc=f"extraction-{args.extractor}", unit="step", file=sys.stderr,
              disable=args.quiet) as bar:
        if args.extractor == "mem0":
            setup, per_conv, rows = run_mem0(args, convs, raws, embedder, bar)
            dump = rows.pop()["dump"]
        else:
            for conv in convs:
                chosen = _sessions(conv, args.sessions)
                obs = observations(raws[conv.sample_id], chosen)
                gold = GoldExtractor() if args.extractor == "gold" else None
                with memory_for(args, embedder, gold) as mem:
                    bar.set_postfix_str(f"{conv.sample_id}: add")
                    r = ingest(mem, conv, chosen, gold, obs, bar, raw_turns=args.extractor == "none")
                    facts = stored_facts(mem, conv, r)
                    scores, frows = score_facts(embedder, facts, obs, conv.speakers, args.match_threshold,
                                                args.support_threshold)
                    rows += frows
                    dump += [{"key": f.key, "text": f.text, "dia_ids": sorted(f.dia_ids)} for f in facts]
                    dias = {t.dia_id for t in conv.turns if t.session in chosen}
                    qs = questions_in(conv, dias)
                    last = max(t.when for t in conv.turns if t.session in chosen)
                    bar.set_postfix_str(f"{conv.sample_id}: search")
                    ranks = search_ranks(mem, conv, r, qs, last + timedelta(days=1), bar)
                    per_conv.append({
                        "conversation": conv.sample_id, "sessions": chosen, "turns": r.turns_in,
                        "stored_turns": len(r.turn_dias), "unmapped_turns": r.unmapped_turns,
                        "questions": len(qs), **scores, "ranks": ranks, "llm_calls": r.llm_calls,
                        "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                        "seconds": round(r.seconds, 1), "events": dict(r.events), "failures": r.failures})
    if args.extractor == "llm" and not sum(c["llm_calls"] for c in per_conv):
        raise SystemExit("--extractor llm made no LLM call: the figures would be the offline rules'")
    out = summarise(per_conv)
    out.update({
        "command": "python -m eval.extraction_locomo " + shlex.join(argv),
        "extractor": args.extractor, "data": str(args.path),
        "match_rule": {"match_threshold": args.match_threshold, "support_threshold": args.support_threshold,
                       "rule": "fact cites a turn of the observation and cosine >= match_threshold; "
                               "supported: cosine with a cited turn >= support_threshold"},
        "model": args.model if args.extractor in ("llm", "mem0") else None,
        "llm_settings": {"context_tokens": args.context_tokens, "output_tokens": args.output_tokens,
                         "backfill": not args.no_backfill,
                         "timeout_s": args.timeout} if args.extractor == "llm" else None,
        "llm_url": args.llm_url if args.extractor in ("llm", "mem0") else None,
        "setup": setup, "embedder": embedder.model_id, "elapsed_s": round(time.perf_counter() - started, 1),
        "conversations": per_conv, "facts": rows,
    })
    if args.dump:
        Path(args.dump).parent.mkdir(parents=True, exist_ok=True)
        Path(args.dump).write_text(json.dumps({"extractor": args.extractor, "facts": dump}, indent=1) + "\n")
    return out


def summarise(per_conv: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the conversations: coverage and precision pooled over observations and facts,
    recall over questions, costs per ingested turn."""
    turns = sum(c["turns"] for c in per_conv) or 1
    n_obs = sum(c["observations"] for c in per_conv)
    n_facts = sum(c["facts"] for c in per_conv)

    def pooled(key: str, weight: str) -> float | None:
        total = sum(c[weight] for c in per_conv if c[key] is not None)
        if not total:
            return None
        return round(sum(c[key] * c[weight] for c in per_conv if c[key] is not None) / total, 4)

    recall = {}
    for view in VIEWS:
        ranks = [r for c in per_conv for r in c["ranks"][view]]
        recall[view] = recall_at(ranks) if ranks else None
    events: Counter[str] = Counter()
    for c in per_conv:
        events.update(c["events"])
    return {
        "observation_coverage": pooled("observation_coverage", "observations"),
        "precision": pooled("precision", "facts"),
        "precision_observed": pooled("precision_observed", "facts"),
        "recall": recall,
        "llm_calls_per_turn": round(sum(c["llm_calls"] for c in per_conv) / turns, 4),
        "prompt_tokens_per_turn": round(sum(c["prompt_tokens"] for c in per_conv) / turns, 1),
        "completion_tokens_per_turn": round(sum(c["completion_tokens"] for c in per_conv) / turns, 1),
        "seconds_per_turn": round(sum(c["seconds"] for c in per_conv) / turns, 3),
        "counts": {"turns": sum(c["turns"] for c in per_conv),
                   "stored_turns": sum(c["stored_turns"] for c in per_conv),
                   "observations": n_obs, "facts": n_facts,
                   "facts_without_sources": sum(c.get("facts_without_sources", 0) for c in per_conv),
                   "questions": sum(c["questions"] for c in per_conv), "events": dict(events),
                   "failures": sum(len(c["failures"]) for c in per_conv)},
    }


def table(out: Mapping[str, Any]) -> str:
    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    c = out["counts"]
    lines = [f"### extraction on LoCoMo: {out['extractor']}, "
             f"{', '.join(x['conversation'] for x in out['conversations'])}; {c['turns']} turns, "
             f"{c['observations']} gold observations, {c['facts']} facts, {c['questions']} questions", "",
             "| coverage | precision | precision (observed) | LLM calls/turn | prompt tok/turn | "
             "completion tok/turn | s/turn |", "|---|---|---|---|---|---|---|",
             f"| {f(out['observation_coverage'])} | {f(out['precision'])} | {f(out['precision_observed'])} | "
             f"{out['llm_calls_per_turn']:.3f} | {out['prompt_tokens_per_turn']:.0f} | "
             f"{out['completion_tokens_per_turn']:.0f} | {out['seconds_per_turn']:.2f} |", "",
             "| evidence recall | R@5 | R@10 | R@20 |", "|---|---|---|---|"]
    for view in VIEWS:
        r = out["recall"].get(view)
        lines.append(f"| {view} | " + (" | ".join(f(r[f"R@{k}"]) for k in KS) if r else "- | - | -") + " |")
    ev = c["events"]
    lines += ["", "events: " + ", ".join(f"{k} {v}" for k, v in sorted(ev.items()))
              + f"; facts without source turns {c['facts_without_sources']}; failed adds {c['failures']}"]
    return "\n".join(lines)


def rescore(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    """Coverage and precision of a finished run again, from its fact dump (the texts) and the
    data path, with the current match and support thresholds; recall and costs are kept."""
    results_path, dump_path = args.rescore
    out = json.loads(Path(results_path).read_text())
    blob = json.loads(Path(dump_path).read_text())
    convs = {c.sample_id: c for c in load(args.path)}
    raws = raw_conversations(args.path)
    embedder = LocalEmbedder()
    rows: list[dict[str, Any]] = []
    for entry in out["conversations"]:
        conv = convs[entry["conversation"]]
        by_dia = {t.dia_id: t for t in conv.turns}
        facts = [Fact(key=f["key"], session=int(f["key"].split("/")[1]), text=f["text"],
                      dia_ids=frozenset(f["dia_ids"]),
                      sources_text=[f"{by_dia[d].speaker}: {by_dia[d].text}" for d in f["dia_ids"]])
                 for f in blob["facts"] if f["key"].split("/")[0] == conv.sample_id]
        obs = observations(raws[conv.sample_id], entry["sessions"])
        scores, frows = score_facts(embedder, facts, obs, conv.speakers, args.match_threshold,
                                            args.support_threshold)
        entry.update(scores)
        rows += frows
    out.update(summarise(out["conversations"]))
    out["facts"] = rows
    out["match_rule"].update({"match_threshold": args.match_threshold,
                              "support_threshold": args.support_threshold})
    out["rescored"] = "python -m eval.extraction_locomo " + shlex.join(argv)
    return out


# -- the match rule, fitted on labelled pairs -------------------------------------------------------
def fit_labels(args: argparse.Namespace) -> dict[str, Any]:
    """The labelled pairs with their cosines (texts from the data path and the fact dumps the
    labels were made on), printed for review; the thresholds' agreement with the labels."""
    raws = raw_conversations(args.path)
    convs = {c.sample_id: c for c in load(args.path)}
    texts: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for d in args.fit_labels:
        blob = json.loads(Path(d).read_text())
        for f in blob["facts"]:
            texts[(blob["extractor"], f["key"])] = (f["text"], f["dia_ids"])
    labels = [json.loads(x) for x in LABELS.read_text().splitlines() if x.strip()]
    embedder = LocalEmbedder()
    match_c: list[float] = []  # cosine of each labelled pair
    match_gap: list[int | None] = []  # lines between the fact's and the observation's turns
    match_y: list[bool] = []
    match_stratum: list[str] = []
    sup_s: list[float] = []
    sup_y: list[bool] = []
    per_extractor: dict[str, Counter[str]] = {}
    stale = 0
    for lab in labels:
        key = (lab["extractor"], lab["fact"])
        if key not in texts or sha(texts[key][0]) != lab["sha"]:
            stale += 1
            continue
        text, dias = texts[key]
        conv = convs[lab["fact"].split("/")[0]]
        if "obs" in lab:
            session = int(lab["obs"].split(":")[0])
            o = next(o for o in observations(raws[conv.sample_id], [session]) if o.id == lab["obs"])
            s = float(embedder.embed_batch([text, o.text]).prod(axis=0).sum())
            gap = turn_distance(dias, o.dia_ids)
            match_c.append(s)
            match_gap.append(gap)
            match_y.append(bool(lab["match"]))
            match_stratum.append(lab.get("stratum", "random"))
            if args.show:
                print(f"{'MATCH' if lab['match'] else 'no   '} cos {s:.2f} lines apart {gap}\n  F {text}\n"
                      f"  O {o.text}")
        else:
            src = [f"{t.speaker}: {t.text}" for t in conv.turns if t.dia_id in dias]
            v = embedder.embed_batch([text, *src]) if src else None
            s = support_score(float((v[1:] @ v[0]).max()) if v is not None else None,
                              names_someone(text, conv.speakers))
            sup_s.append(s)
            sup_y.append(bool(lab["supported"]))
            tally = per_extractor.setdefault(lab["extractor"], Counter())
            tally["supported" if lab["supported"] else "not"] += 1
            if args.show:
                print(f"{'SUPP ' if lab['supported'] else 'unsup'} cos {s:.2f}\n  F {text}\n"
                      f"  T {' | '.join(src)}")
    def rule(near: int) -> list[float]:  # the match rule's score: the cosine, if near enough
        return [c if g is not None and g <= near else -1.0 for c, g in zip(match_c, match_gap)]

    rules = {}
    for near in (0, 1, 2):
        t, a = choose_threshold(rule(near), match_y)
        rules[f"near {near}"] = {"best_threshold": t, "agreement": round(a, 4),
                                 "by_threshold": {str(x): round(agreement(rule(near), match_y, x), 4)
                                                  for x in (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)}}
    match_s = rule(MATCH_NEAR)
    strata = {}
    for name in sorted(set(match_stratum)):
        idx = [i for i, x in enumerate(match_stratum) if x == name]
        said = [match_s[i] >= MATCH_THRESHOLD for i in idx]
        truth = [match_y[i] for i in idx]
        strata[name] = {"pairs": len(idx), "positives": sum(truth),
                        "agreement_at_used": round(sum(a == b for a, b in zip(said, truth)) / len(idx), 4),
                        "rule_says_match": sum(said),
                        "true_matches_found": sum(a and b for a, b in zip(said, truth))}
    st, sa = choose_threshold(sup_s, sup_y)
    res = {
        "labels": str(LABELS.relative_to(Path(__file__).parent.parent)), "stale_or_missing": stale,
        "match": {"pairs": len(match_y), "positives": sum(match_y),
                  "agreement_at_used": round(agreement(match_s, match_y, MATCH_THRESHOLD), 4),
                  "by_stratum": strata, "rules": rules},
        "support": {"facts": len(sup_y), "positives": sum(sup_y), "best_threshold": st,
                    "agreement": round(sa, 4),
                    "agreement_at_used": round(agreement(sup_s, sup_y, SUPPORT_THRESHOLD), 4),
                    "by_threshold": {str(t): round(agreement(sup_s, sup_y, t), 4)
                                     for t in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)}},
        "labelled_precision": {ex: {"supported": c["supported"], "facts": sum(c.values()),
                                    "share": round(c["supported"] / sum(c.values()), 4)}
                               for ex, c in per_extractor.items()},
        "used": {"match_threshold": MATCH_THRESHOLD, "match_near": MATCH_NEAR,
                 "support_threshold": SUPPORT_THRESHOLD},
        "scores": {"match": [[round(c, 4), g, y] for c, g, y in zip(match_c, match_gap, match_y)],
                   "support": [[round(s, 4), y] for s, y in zip(sup_s, sup_y)]},
    }
    return res


def label_candidates(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The pairs offered for labelling, drawn the same way from every dump: for each fact, the
    observations of its session that cite one of its turns or a turn within two lines of one
    (so that the rule's "same turn" is tested too); then up to ``--label-sample`` pairs, the
    first by a hash of their ids (a fixed pseudo-random order); and as many facts for the
    support label. Printed with their texts for the person labelling; ids go in the file."""
    raws = raw_conversations(args.path)
    convs = {c.sample_id: c for c in load(args.path)}
    blob = json.loads(Path(args.label_candidates).read_text())
    ex = blob["extractor"]
    embedder = LocalEmbedder()

    pairs, facts = [], []
    for f in blob["facts"]:
        cid, session = f["key"].split("/")[0], int(f["key"].split("/")[1])
        if args.conversations and cid not in args.conversations:
            continue
        if args.sessions and session > args.sessions:
            continue
        conv = convs[cid]
        by_dia = {t.dia_id: t for t in conv.turns}
        facts.append({"extractor": ex, "fact": f["key"], "sha": sha(f["text"]), "_text": f["text"],
                      "_turns": [f"{by_dia[d].speaker}: {by_dia[d].text}" for d in f["dia_ids"]]})
        for o in observations(raws[cid], [session]):
            gap = turn_distance(f["dia_ids"], o.dia_ids)
            if gap is not None and gap <= 2:
                pairs.append({"extractor": ex, "fact": f["key"], "sha": sha(f["text"]), "obs": o.id,
                              "_text": f["text"], "_obs": o.text,
                              "_same_turn": bool(set(f["dia_ids"]) & o.dia_ids)})
    labelled = [json.loads(x) for x in LABELS.read_text().splitlines() if x.strip()]
    done = {(x["extractor"], x["fact"], x.get("obs")) for x in labelled}
    for p in pairs:
        v = embedder.embed_batch([p["_text"], p["_obs"]])
        p["_cos"] = round(float(v[0] @ v[1]), 3)
    pairs = [p for p in pairs if p["_cos"] >= args.label_min_cos and (ex, p["fact"], p["obs"]) not in done]
    facts = [f for f in facts if (ex, f["fact"], None) not in done]
    pairs.sort(key=lambda p: sha(p["fact"] + p["obs"]))
    facts.sort(key=lambda p: sha(p["fact"]))
    stratum = "random" if args.label_min_cos <= -1 else f"cos>={args.label_min_cos}"
    pairs = [{**p, "stratum": stratum} for p in pairs[: args.label_sample]]
    return pairs + (facts[: args.label_sample // 2] if stratum == "random" else [])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("path", help="LoCoMo-format JSON (../shared/data/locomo/locomo_dev.json)")
    ap.add_argument("--conversations", nargs="+", default=None, help="sample ids (default: all)")
    ap.add_argument("--sessions", type=int, default=0, help="the first N sessions of each (0: all)")
    ap.add_argument("--extractor", choices=("llm", "offline", "gold", "mem0", "none"), default="offline",
                    help="none: the same session adds with infer=False (turns only, the baseline)")
    ap.add_argument("--llm-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8089/v1"))
    ap.add_argument("--model", default="qwen", help="model name sent to the server")
    ap.add_argument("--context-tokens", type=int, default=8192, help="the LLM server's context")
    ap.add_argument("--output-tokens", type=int, default=MemoryConfig().extract_output_tokens,
                    help="MemoryConfig.extract_output_tokens: the most tokens one extraction answer may take")
    ap.add_argument("--no-backfill", action="store_true",
                    help="with --extractor llm: the model's facts only (no offline rules for what it missed)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds per LLM call (a shared server queues)")
    ap.add_argument("--match-threshold", type=float, default=MATCH_THRESHOLD)
    ap.add_argument("--support-threshold", type=float, default=SUPPORT_THRESHOLD)
    ap.add_argument("--json", default=None, help="write the figures here (no LoCoMo or fact text)")
    ap.add_argument("--dump", default=None, help="write the stored facts' texts here, for labelling "
                    "(eval/out/: they paraphrase LoCoMo, so they stay out of the repository)")
    ap.add_argument("--fit-labels", nargs="+", default=None, metavar="DUMP",
                    help="fit the match and support thresholds on eval/data/extraction_match_labels.jsonl "
                         "with the fact dumps the labels were made on; no ingestion")
    ap.add_argument("--rescore", nargs=2, default=None, metavar=("RESULTS", "DUMP"),
                    help="score a finished run's coverage and precision again from its fact dump "
                         "(with the current thresholds); writes RESULTS unless --json says where")
    ap.add_argument("--label-candidates", default=None, metavar="DUMP",
                    help="print the pairs and facts of a fact dump offered for labelling (with texts)")
    ap.add_argument("--label-sample", type=int, default=60, help="pairs per dump for --label-candidates")
    ap.add_argument("--label-min-cos", type=float, default=-1.0,
                    help="with --label-candidates: only pairs this similar (the boundary stratum)")
    ap.add_argument("--show", action="store_true", help="with --fit-labels: print every labelled pair")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if args.fit_labels:
        res = fit_labels(args)
        print(json.dumps({k: v for k, v in res.items() if k != "scores"}, indent=1))
    elif args.label_candidates:
        for item in label_candidates(args):
            print(json.dumps(item, ensure_ascii=False))
        return 0
    elif args.rescore:
        res = rescore(args, argv)
        print(table(res))
        args.json = args.json or args.rescore[0]
    else:
        res = run(args, argv)
        print(table(res))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
