"""QA on a slice of LoCoMo-format data: memory vs no memory vs full context.

    python -m eval.qa_slice eval/data/handwritten_conversations.json --out eval/out/qa_handwritten
    OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=local \\
      MEM_PIPELINE_LLM_MODEL=qwen2.5-coder-1.5b-instruct \\
      python -m eval.qa_slice ../shared/data/locomo/locomo_dev.json \\
        --conversations conv-26 conv-30 --questions 20 --out eval/out/qa_locomo

Each conversation goes into its own in-memory store as raw turns, exactly as ``eval.locomo``
does (``infer=False``; speaker, ``dia_id`` and session in metadata; the session date as the
turn's time), so no LLM is needed to ingest. For each question (categories 1-4; the first
``--questions`` of each conversation) it reports:

- retrieval: evidence recall@k and MRR, overall and per category (``eval.retrieval.Scores``);
- with an LLM configured (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, model
  ``MEM_PIPELINE_LLM_MODEL``), three answers from the same prompt (``prompts/answer.md``,
  :func:`mem_pipeline.chat.answer_with_llm`) with three contexts:
  ``memory``: the top ``--limit`` recalled turns as ``Recall.to_prompt(--memory-tokens)``
  (each raw turn prefixed with its speaker, which ``to_prompt`` does not show);
  ``none``: nothing remembered; ``full``: the whole conversation, oldest turns dropped to fit
  ``--full-tokens`` (approximate tokens; the local server has a 4,096-token context);
  scored by token F1 against the gold answer (SQuAD normalisation) and, with ``--judge``, by an
  LLM judge (``prompts/judge.md``); prompt tokens as the server counted them; latency p50/p95
  (the memory pipeline's includes its search).

It prints Markdown tables, and writes ``OUT.json`` (summary and every answer), ``OUT.md`` and
``OUT.png`` (recall@k curves; F1 vs prompt tokens per pipeline). ``now`` for decay is the day
after the conversation's last session; recall does not reinforce (read-only).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from tqdm import tqdm

from eval.extraction_locomo import GoldExtractor, ingest, observations, raw_conversations
from eval.retrieval import CATEGORY_NAMES, Conversation, Scores, Turn, load, recall_rows
from mem_pipeline import LLMError, LocalEmbedder, Memory, MemoryConfig, Recall
from mem_pipeline.chat import answer_with_llm
from mem_pipeline.llm import LLMClient, render_prompt

PIPELINES = ("memory", "none", "full", "facts", "turns")
#: run unless --pipelines says otherwise ("facts" and "turns" need an extracting --ingest)
DEFAULT_PIPELINES = ("memory", "none", "full")
#: the order of the calls: "full" first, so its long shared prefix is evaluated once per
#: conversation by a server with a prompt cache (llama.cpp keeps the last prompt's KV cache)
_CALL_ORDER = ("full", "memory", "facts", "turns", "none")


class Judgement(BaseModel):
    """The LLM judge's verdict (``prompts/judge.md``)."""

    correct: bool


# -- scoring -----------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans(dict.fromkeys(string.punctuation, " "))


def normalize_answer(text: str) -> list[str]:
    """SQuAD/LoCoMo normalisation: lower case, no punctuation, no articles; tokens."""
    return _ARTICLES.sub(" ", str(text).lower().translate(_PUNCT)).split()


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall after :func:`normalize_answer`."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def approx_tokens(text: str) -> int:
    """~4 characters a token (English); the same estimate ``Recall.to_prompt`` budgets with."""
    return max(1, (len(text) + 3) // 4)


def percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


# -- contexts ----------------------------------------------------------------------------------
def full_context(turns: Sequence[Turn], max_tokens: int) -> tuple[str, int]:
    """The conversation as a transcript with session headers, newest turns kept: the oldest are
    dropped until it fits ``max_tokens`` (approximate). Returns (text, turns kept)."""

    def header(t: Turn) -> str:
        return f"== session {t.session}, {t.when:%d %B %Y}"

    used, start = 0, len(turns)
    for i in range(len(turns) - 1, -1, -1):
        t = turns[i]
        cost = approx_tokens(f"{t.speaker}: {t.text}") + 1
        if i == 0 or turns[i - 1].session != t.session:
            cost += approx_tokens(header(t)) + 1
        # (+ one header in reserve: the first kept turn always gets its session's header)
        if used + cost + approx_tokens(header(t)) + 1 > max_tokens:
            break
        used += cost
        start = i
    lines = ["<conversation>"]
    if start:
        lines.append(f"(the {start} oldest turns do not fit and are left out)")
    for i in range(start, len(turns)):
        t = turns[i]
        if i == start or turns[i - 1].session != t.session:
            lines.append(header(t))
        lines.append(f"{t.speaker}: {t.text}")
    lines.append("</conversation>")
    return "\n".join(lines), len(turns) - start


def memory_context(recall: Recall, limit: int, max_tokens: int) -> str:
    """The product's prompt block for the top ``limit`` hits, each raw turn with its speaker."""
    hits = [
        h.model_copy(update={"text": f"{h.metadata['speaker']}: {h.text}"})
        if h.metadata.get("speaker")
        else h
        for h in recall.hits[:limit]
    ]
    return recall.model_copy(update={"hits": hits}).to_prompt(max_tokens=max_tokens)


# -- the run -----------------------------------------------------------------------------------
def kind_context(mem: Memory, conv: Conversation, question: str, kind: str, now: Any, limit: int,
                 max_tokens: int) -> str:
    """The product's prompt block (``Recall.to_prompt``) of the top ``limit`` hits of one kind:
    "fact" (the facts block) or "turn" (the turns block), from the same store. The block holds
    that kind only: the associations a search returns beside its hits (which may be of the
    other kind) are left out of both."""
    recall = mem.search(question, user_id=conv.sample_id, limit=limit, now=now, min_score=0,
                        filters={"kind": kind})
    return recall.to_prompt(max_tokens=max_tokens, associations=0)


def _ingest(mem: Memory, conv: Conversation) -> None:
    for t in conv.turns:
        mem.add(
            [{"role": "user", "content": t.text, "name": t.speaker}],
            user_id=conv.sample_id,
            infer=False,
            timestamp=t.when,
            metadata={"dia_id": t.dia_id, "session": t.session},
        )


def _answer(llm: LLMClient, question: str, context: str, today: str, answer_tokens: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        out = answer_with_llm(question, context, llm=llm, today=today, max_tokens=answer_tokens)
    except LLMError as e:
        return {
            "answer": None,
            "error": f"{type(e).__name__}: {e}"[:500],
            "seconds": time.perf_counter() - t0,
            "prompt_tokens": None,
        }
    return {
        "answer": out.text,
        "error": None,
        "seconds": time.perf_counter() - t0,
        "prompt_tokens": out.prompt_tokens or None,
        "completion_tokens": out.completion_tokens,
    }


def _dia_of(hit: Any, turn_dias: dict[str, set[str]], gold: Sequence[str]) -> str:
    """One dia_id for a hit of an extracting store: an evidence turn if the hit is one or a fact
    citing one (so a fact hit counts through its source turns), else any of its turns."""
    own = turn_dias.get(hit.id, set()) | {d for s in hit.sources for d in turn_dias.get(s, ())}
    return next((d for d in gold if d in own), min(own, default=""))


def run(args: argparse.Namespace, llm: LLMClient | None) -> dict[str, Any]:
    t_start = time.perf_counter()
    convs = load(args.path, args.conversations)
    raws = raw_conversations(args.path) if args.ingest != "raw" else {}
    if args.conversations:  # keep the order given on the command line
        convs.sort(key=lambda c: args.conversations.index(c.sample_id))
    if args.max_conversations:
        convs = convs[: args.max_conversations]
    if not convs:
        raise SystemExit(f"no conversation of {args.path} matches {args.conversations}")
    pipelines = [p for p in _CALL_ORDER if p in args.pipelines] if llm is not None else []
    ks = sorted(set(args.k))
    depth = max([*ks, args.limit])
    embedder = LocalEmbedder()
    cfg = MemoryConfig(path=":memory:")
    extracting = args.ingest != "raw"
    scores = Scores(ks)
    rows: list[dict[str, Any]] = []
    wall: dict[str, float] = {}  # wall-clock seconds of each pipeline's answers, all questions
    n_q = sum(len(c.questions[: args.questions or None]) for c in convs)
    per_q = 1 + len(pipelines) * (2 if args.judge else 1)
    total = sum(len(c.turns) for c in convs) + n_q * per_q
    with tqdm(total=total, desc="qa-slice", unit="step", file=sys.stderr, disable=args.quiet) as bar:
        for conv in convs:
            questions = conv.questions[: args.questions or None]
            now = conv.last_time + timedelta(days=1)
            today = now.strftime("%A %d %B %Y")
            gold = GoldExtractor() if args.ingest == "gold" else None
            with Memory(config=cfg, embedder=embedder, extractor=gold) as mem:
                bar.set_postfix_str(f"{conv.sample_id}: ingest")
                if extracting:  # each session in one add, extraction on (eval.extraction_locomo)
                    sessions = sorted({t.session for t in conv.turns})
                    obs = observations(raws[conv.sample_id], sessions)
                    ingested = ingest(mem, conv, sessions, gold, obs, bar)
                else:
                    _ingest(mem, conv)
                    bar.update(len(conv.turns))
                conv_rows = []
                for q in questions:
                    t0 = time.perf_counter()
                    recall = mem.search(q.question, user_id=conv.sample_id, limit=depth, now=now)
                    search_s = time.perf_counter() - t0
                    if extracting:  # a hit's dia_id: an evidence turn among its own or its sources
                        ids = [_dia_of(h, ingested.turn_dias, q.evidence) for h in recall.hits]
                    else:
                        ids = [h.metadata.get("dia_id", "") for h in recall.hits]
                    scores.add(q, ids[: max(ks)], search_s * 1000, conv.sample_id)
                    rank = scores.rows[-1]["rank"]
                    conv_rows.append({
                        "conv": conv.sample_id, "category": q.category, "question": q.question,
                        "gold": q.answer, "evidence": q.evidence, "rank": rank,
                        "search_s": round(search_s, 4), "retrieved": ids[: args.limit],
                        "_context": {"memory": memory_context(recall, args.limit, args.memory_tokens),
                                     "none": "",
                                     **{pipe: kind_context(mem, conv, q.question, pipe[:-1], now, args.limit,
                                                           args.memory_tokens)
                                        for pipe in ("facts", "turns") if pipe in pipelines}},
                        "answers": {},
                    })
                    bar.update()
            if pipelines:
                full, kept = full_context(conv.turns, args.full_tokens)
                for pipe in pipelines:
                    bar.set_postfix_str(f"{conv.sample_id}: {pipe}")
                    t_pipe = time.perf_counter()
                    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
                        futures = [
                            pool.submit(
                                _answer,
                                llm,
                                row["question"],  # type: ignore[arg-type]
                                full if pipe == "full" else row["_context"][pipe],
                                today,
                                args.answer_tokens,
                            )
                            for row in conv_rows
                        ]
                    wall[pipe] = wall.get(pipe, 0.0) + time.perf_counter() - t_pipe
                    for row, fut in zip(conv_rows, futures):
                        a = fut.result()
                        a["block_tokens"] = approx_tokens(full if pipe == "full" else row["_context"][pipe])
                        if pipe == "memory":
                            a["seconds"] += row["search_s"]
                        if pipe == "full":
                            a["turns_in_context"] = kept
                        a["f1"] = round(token_f1(a["answer"] or "", row["gold"]), 4)
                        a["seconds"] = round(a["seconds"], 3)
                        row["answers"][pipe] = a
                        bar.update()
                if args.judge:
                    for pipe in pipelines:
                        bar.set_postfix_str(f"{conv.sample_id}: judge {pipe}")
                        for row in conv_rows:
                            a = row["answers"][pipe]
                            a["judge"] = _judge(llm, row, a["answer"])  # type: ignore[arg-type]
                            bar.update()
            for row in conv_rows:
                del row["_context"]
            rows.extend(conv_rows)
    out: dict[str, Any] = {
        "dataset": str(args.path),
        "conversations": [c.sample_id for c in convs],
        "questions": len(rows),
        "retrieval": scores.summary(),
        "pipelines": {
            p: {**_summarise(rows, p, args.judge), "wall_seconds": round(wall.get(p, 0.0), 1)}
            for p in PIPELINES
            if p in pipelines
        },
        "llm": {"model": llm.model, "base_url": llm.base_url} if llm is not None else None,
        "settings": {
            "k": ks, "limit": args.limit, "memory_tokens": args.memory_tokens,
            "full_tokens": args.full_tokens, "answer_tokens": args.answer_tokens,
            "questions_per_conversation": args.questions or "all", "judge": args.judge,
            "ingest": args.ingest,
            "concurrency": args.concurrency,
        },
        "seconds": round(time.perf_counter() - t_start, 1),
        "rows": rows,
    }
    return out


def _judge(llm: LLMClient, row: dict[str, Any], answer: str | None) -> bool | None:
    if answer is None:
        return False
    prompt = render_prompt("judge", question=row["question"], gold=row["gold"], answer=answer)
    try:
        return llm.complete(Judgement, prompt).value.correct
    except LLMError:
        return None


def _summarise(rows: list[dict[str, Any]], pipe: str, judge: bool) -> dict[str, Any]:
    answers = [r["answers"][pipe] for r in rows]
    tokens = [a["prompt_tokens"] for a in answers if a["prompt_tokens"]]
    secs = [a["seconds"] for a in answers]
    out: dict[str, Any] = {
        "n": len(answers),
        "f1": round(statistics.fmean(a["f1"] for a in answers), 4) if answers else None,
        "errors": sum(a["error"] is not None for a in answers),
        "prompt_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else None,
        "prompt_tokens_p50": percentile(tokens, 50),
        "prompt_tokens_max": max(tokens) if tokens else None,
        # the memory block alone (approximate tokens, as to_prompt counts them): the prompt
        # tokens less the answer prompt and the question
        "block_tokens_mean": round(statistics.fmean(a.get("block_tokens", 0) for a in answers), 1)
        if answers else None,
        "seconds_p50": _r(percentile(secs, 50)),
        "seconds_p95": _r(percentile(secs, 95)),
        "seconds_total": round(sum(secs), 1),
        "f1_by_category": {
            str(c): round(statistics.fmean(r["answers"][pipe]["f1"] for r in rows if r["category"] == c), 4)
            for c in sorted({r["category"] for r in rows})
        },
    }
    if judge:
        verdicts = [a.get("judge") for a in answers if a.get("judge") is not None]
        out["judge_accuracy"] = round(statistics.fmean(map(float, verdicts)), 4) if verdicts else None
        out["judge_failed"] = len(answers) - len(verdicts)
    return out


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


# -- report ------------------------------------------------------------------------------------
def table(out: dict[str, Any]) -> str:
    ret = out["retrieval"]
    lines = [
        f"### {Path(out['dataset']).name}: {', '.join(out['conversations'])}; {out['questions']} questions",
        "",
        "Retrieval (evidence recall@k, MRR):",
        "",
        *recall_rows(ret),
    ]
    pipes = out["pipelines"]
    if not pipes:
        lines += ["", "(retrieval only: the QA part needs an LLM, OPENAI_BASE_URL / OPENAI_API_KEY)"]
        return "\n".join(lines)
    judge = any("judge_accuracy" in p for p in pipes.values())
    lines += [
        "",
        f"Answers ({out['llm']['model']}; F1 = token F1 vs the gold answer; tokens = prompt "
        "tokens per question as the server counted them; p50/p95 s: seconds per question, "
        f"with up to {out['settings']['concurrency']} sent at once; wall s: the pipeline's "
        "total wall-clock time):",
        "",
        "| pipeline | n | F1 |"
        + (" judge |" if judge else "")
        + " prompt tokens (mean) | block tokens (mean) | p50 s | p95 s | wall s | errors |",
        "|---|---|---|" + ("---|" if judge else "") + "---|---|---|---|---|---|",
    ]
    for name, p in pipes.items():
        j = (
            f" {p['judge_accuracy']:.3f} |"
            if judge and p.get("judge_accuracy") is not None
            else (" - |" if judge else "")
        )
        tok = f"{p['prompt_tokens_mean']:.0f}" if p["prompt_tokens_mean"] is not None else "-"
        block = f"{p['block_tokens_mean']:.0f}" if p.get("block_tokens_mean") is not None else "-"
        lines.append(
            f"| {name} | {p['n']} | **{p['f1']:.3f}** |{j} {tok} | {block} | {p['seconds_p50']} | "
            f"{p['seconds_p95']} | {p.get('wall_seconds', '-')} | {p['errors']} |"
        )
    cats = sorted({c for p in pipes.values() for c in p["f1_by_category"]})
    lines += [
        "",
        "F1 per category:",
        "",
        "| category | " + " | ".join(pipes) + " |",
        "|---|" + "---|" * len(pipes),
    ]
    for c in cats:
        name = CATEGORY_NAMES.get(int(c), c)
        lines.append(
            f"| {c} {name} | "
            + " | ".join(f"{p['f1_by_category'].get(c, float('nan')):.3f}" for p in pipes.values())
            + " |"
        )
    return "\n".join(lines)


def plot(out: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ret = out["retrieval"]
    ks = [int(k[2:]) for k in ret["recall"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax1.plot(ks, [ret["recall"][f"R@{k}"] for k in ks], "o-", lw=2.5, color="black", label="all")
    for cat, row in ret["by_category"].items():
        ax1.plot(
            ks,
            [row[f"R@{k}"] for k in ks],
            "o--",
            lw=1,
            label=f"{CATEGORY_NAMES.get(int(cat), cat)} (n={row['n']})",
        )
    ax1.set(xlabel="k", ylabel="evidence recall@k", ylim=(0, 1.02), title="retrieval")
    ax1.set_xticks(ks)
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    pipes = out["pipelines"]
    if pipes:
        for name, p in pipes.items():
            x = p["prompt_tokens_mean"] or 0
            ax2.scatter([x], [p["f1"]], s=80)
            ax2.annotate(
                f"{name}\n{p['seconds_p50']} s p50",
                (x, p["f1"]),
                textcoords="offset points",
                xytext=(6, 4),
                fontsize=9,
            )
        ax2.set(
            xlabel="prompt tokens per question (mean)",
            ylabel="token F1",
            title=f"answers ({out['llm']['model']})",
        )
        top = max(p["f1"] for p in pipes.values())
        ax2.set_ylim(0, max(0.1, top * 1.3))
        ax2.set_xlim(0, max((p["prompt_tokens_mean"] or 0) for p in pipes.values()) * 1.25 + 50)
        ax2.grid(alpha=0.3)
    else:
        ax2.text(0.5, 0.5, "no LLM configured:\nretrieval only", ha="center", va="center")
        ax2.set_axis_off()
    fig.suptitle(
        f"{Path(out['dataset']).name}: {', '.join(out['conversations'])} ({out['questions']} questions)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def llm_from_env(args: argparse.Namespace) -> LLMClient | None:
    """The answering LLM from the environment (``MemoryConfig.from_env``), or None."""
    cfg = MemoryConfig.from_env()
    if args.no_llm or not cfg.llm_endpoint_set:
        return None
    if args.model:
        cfg = cfg.model_copy(update={"llm_model": args.model})
    cfg = cfg.model_copy(update={"llm_timeout_s": args.timeout})
    return LLMClient.from_config(cfg)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "path",
        help="LoCoMo-format JSON (eval/data/handwritten_conversations.json, "
        "../shared/data/locomo/locomo_dev.json)",
    )
    ap.add_argument("--conversations", nargs="*", default=None, help="sample ids (default: all)")
    ap.add_argument("--max-conversations", type=int, default=0)
    ap.add_argument("--questions", type=int, default=0, help="first N questions each (0: all)")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10, 20], help="recall@k cut-offs")
    ap.add_argument("--limit", type=int, default=10, help="facts in the memory pipeline's prompt")
    ap.add_argument("--memory-tokens", type=int, default=1000, help="Recall.to_prompt max_tokens")
    ap.add_argument(
        "--full-tokens",
        type=int,
        default=3000,
        help="budget of the full-context transcript (approximate tokens)",
    )
    ap.add_argument("--answer-tokens", type=int, default=64, help="max tokens of an answer")
    ap.add_argument("--pipelines", nargs="+", choices=PIPELINES, default=list(DEFAULT_PIPELINES),
                    help="facts / turns: the facts block / the turns block of the same store "
                    "(top --limit hits of that kind; needs --ingest gold or offline)")
    ap.add_argument("--ingest", choices=("raw", "gold", "offline"), default="raw",
                    help="raw: every turn as a turn (infer=False); gold / offline: each session in "
                    "one add with extraction on, LoCoMo's observations or the offline rules as the "
                    "extractor (eval.extraction_locomo)")
    ap.add_argument("--judge", action="store_true", help="also grade answers with an LLM judge")
    ap.add_argument("--no-llm", action="store_true", help="retrieval only, even with an LLM configured")
    ap.add_argument("--model", default=None, help="answering model (default MEM_PIPELINE_LLM_MODEL)")
    ap.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="send up to N answers of one pipeline and conversation at once: a "
        "shared llama.cpp server then runs them back to back and reuses their common "
        "prompt prefix (the whole transcript for 'full'); latency then includes "
        "waiting for the others",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds per LLM call (a shared local server queues requests)",
    )
    ap.add_argument(
        "--out", default=None, help="write OUT.json, OUT.md, OUT.png (default eval/out/qa_<dataset>)"
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    llm = llm_from_env(args)
    if llm is None and not args.no_llm:
        print("no LLM configured (OPENAI_BASE_URL / OPENAI_API_KEY): retrieval only", file=sys.stderr)
    out = run(args, llm)
    report = table(out)
    print(report)
    base = Path(args.out or f"eval/out/qa_{Path(args.path).stem}")
    base.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{base}.json").write_text(json.dumps(out, indent=2, ensure_ascii=False))
    Path(f"{base}.md").write_text(report + "\n")
    plot(out, Path(f"{base}.png"))
    print(f"\nwrote {base}.json, {base}.md, {base}.png ({out['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
