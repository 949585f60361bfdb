"""Evidence recall@k on LoCoMo-format conversations, through the whole recall pipeline.

    python -m eval.locomo ../shared/data/locomo/locomo_dev.json --k 5 10 20 --json out.json
    python -m eval.locomo eval/data/handwritten_conversations.json      # our own set

Each conversation goes into its own store as raw turns (one user per conversation,
``infer=False``, speaker, ``dia_id`` and session in metadata, the session date as the turn's
time); every question of categories 1-4 is asked; a question counts at k when any of its gold
evidence turns is among the top k hits. Switch signals off to see what each adds:
``--no-sparse``, ``--no-decay``, ``--no-context``, ``--no-speaker``, ``--no-date``,
``--no-session``, ``--no-reply``, ``--no-when``, ``--no-name``, ``--keep-names``; or compare in the
same run, question by question (paired bootstrap): ``--links-compare``, ``--decay-compare``,
``--floor-compare`` (the relevance floor, ``MemoryConfig.min_score``, against none).
``now`` for decay is the day after the conversation's last session. Recall does not reinforce
facts here (read-only), so question order cannot change the results.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.retrieval import Scores, load, paired_bootstrap, recall_rows, timed
from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
from mem_pipeline.models import Scope
from mem_pipeline.read.query import dense_query


def run(args: argparse.Namespace) -> dict[str, Any]:
    convs = load(args.path, args.conversations)
    if args.max_conversations:
        convs = convs[: args.max_conversations]
    embedder = LocalEmbedder()
    base = MemoryConfig(
        path=":memory:",
        use_sparse=not args.no_sparse,
        use_decay=not args.no_decay,
        context_window=0 if args.no_context else args.context_window,
        speaker_boost=0.0 if args.no_speaker else args.speaker_boost,
        dense_without_speakers=not args.keep_names,
        date_boost=0.0 if args.no_date else args.date_boost,
        when_boost=0.0 if args.no_when else args.when_boost,
        name_boost=0.0 if args.no_name else args.name_boost,
        session_boost=0.0 if args.no_session else args.session_boost,
        reply_boost=0.0 if args.no_reply else args.reply_boost,
        dense_weight=args.dense_weight,
        decay_floor=args.decay_floor,
        concept_boost=args.concept_boost,
        **({} if args.min_score is None else {"min_score": args.min_score}),
        **({} if args.hit_floor is None else {"hit_floor": args.hit_floor}),
    )
    dense_only = base.model_copy(update={"use_sparse": False})
    ks = sorted(set(args.k))
    # the whole pipeline with one part off, searched in the same run on the same store, so a
    # paired bootstrap of the difference can say whether that part helps or hurts
    compared = {
        name: (cfg, Scores(ks))
        for name, cfg, wanted in (
            (
                "links",
                base.model_copy(update={"expand_links": False, "concept_boost": 0.0}),
                args.links_compare,
            ),
            ("decay", base.model_copy(update={"use_decay": False}), args.decay_compare and base.use_decay),
            ("floor", base.model_copy(update={"min_score": 0.0}), args.floor_compare and base.min_score > 0),
        )
        if wanted
    }
    scores, baseline = Scores(ks), Scores(ks)
    add_ms: list[float] = []
    n_turns = sum(len(c.turns) for c in convs)
    n_q = sum(len(c.questions[: args.questions or None]) for c in convs)
    with tqdm(total=n_turns + n_q, desc="locomo", unit="op", file=sys.stderr, disable=args.quiet) as bar:
        for conv in convs:
            mem = Memory(config=base, embedder=embedder)
            user = conv.sample_id
            for t in conv.turns:
                _, ms = timed(
                    lambda t=t, mem=mem, user=user: mem.add(
                        [{"role": "user", "content": t.text, "name": t.speaker}],
                        user_id=user,
                        infer=False,
                        timestamp=t.when,
                        metadata={"dia_id": t.dia_id, "session": t.session},
                    )
                )
                add_ms.append(ms)
                bar.update()
            now = conv.last_time + timedelta(days=1)
            for q in conv.questions[: args.questions or None]:
                # embed the question once up front, so the three timed searches below compare
                # the pipelines and not which one paid for the query embedding
                mem.parts.embed.embed_one(q.question)
                mem.parts.embed.embed_one(dense_query(mem.parts, Scope.of(user), q.question)[0])
                mem.config = base
                r, ms = timed(
                    lambda q=q, mem=mem, user=user, now=now: mem.search(
                        q.question, user_id=user, limit=max(ks), now=now
                    )
                )
                scores.add(q, [h.metadata["dia_id"] for h in r.hits], ms, conv.sample_id)
                mem.config = dense_only  # the dense-only floor, same store, same run
                r, ms = timed(
                    lambda q=q, mem=mem, user=user, now=now: mem.search(
                        q.question, user_id=user, limit=max(ks), now=now
                    )
                )
                baseline.add(q, [h.metadata["dia_id"] for h in r.hits], ms, conv.sample_id)
                for cfg, other in compared.values():
                    mem.config = cfg
                    r, ms = timed(
                        lambda q=q, mem=mem, user=user, now=now: mem.search(
                            q.question, user_id=user, limit=max(ks), now=now
                        )
                    )
                    other.add(q, [h.metadata["dia_id"] for h in r.hits], ms, conv.sample_id)
                bar.update()
            mem.close()
    out = scores.summary()
    out["turns"] = n_turns
    out["conversations"] = [c.sample_id for c in convs]
    out["add_ms_per_turn"] = round(sum(add_ms) / max(len(add_ms), 1), 2)
    out["dense_only"] = baseline.summary()
    for name, (_, other) in compared.items():
        out[f"{name}_off"] = other.summary()
        out[f"{name}_on_minus_off"] = paired_bootstrap(scores, other, ks, seed=11)
    if args.split:
        # the conversations settings were chosen on, and the rest (held out)
        tune = [c.sample_id for c in convs if c.sample_id in args.split]
        held = [c.sample_id for c in convs if c.sample_id not in args.split]
        out["splits"] = {
            "tuning": {"conversations": tune, **scores.subset(tune).summary()},
            "held_out": {"conversations": held, **scores.subset(held).summary()},
        }
    out["config"] = base.model_dump(
        include={
            "use_sparse",
            "use_decay",
            "context_window",
            "speaker_boost",
            "dense_weight",
            "decay_floor",
            "date_boost",
            "session_boost",
            "reply_boost",
            "when_boost",
            "name_boost",
            "dense_without_speakers",
        }
    )
    return out


def table(out: dict[str, Any]) -> str:
    ks = [k for k in out["recall"]]
    lines = recall_rows(out)
    d = out["dense_only"]
    lines.append(
        f"| dense only | {d['questions']} | "
        + " | ".join(f"{d['recall'][k]:.3f}" for k in ks)
        + f" | {d['mrr']:.3f} |"
    )
    for name, sp in out.get("splits", {}).items():
        if sp["questions"]:
            lines.append(
                f"| {name} ({', '.join(sp['conversations'])}) | {sp['questions']} | "
                + " | ".join(f"{sp['recall'][k]:.3f}" for k in ks)
                + f" | {sp['mrr']:.3f} |"
            )
    for name in ("links", "decay"):
        if f"{name}_on_minus_off" not in out:
            continue
        lines.append("")
        lines.append(f"{name} on - off (paired bootstrap, 95% interval):")
        for cat, row in out[f"{name}_on_minus_off"].items():
            lines.append(
                f"  {cat}: "
                + ", ".join(f"{k} {v['diff']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}]" for k, v in row.items())
            )
        lines.append(
            f"  search p50 {name} on {out['search_ms_p50']} ms, off {out[f'{name}_off']['search_ms_p50']} ms"
        )
    lines.append("")
    lines.append(
        f"search p50 {out['search_ms_p50']} ms, p95 {out['search_ms_p95']} ms "
        f"(dense only, same run: p50 {d['search_ms_p50']} ms, p95 {d['search_ms_p95']} ms);"
        f" add {out['add_ms_per_turn']} ms/turn; {out['turns']} turns"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="LoCoMo-format JSON (e.g. ../shared/data/locomo/locomo_dev.json)")
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--conversations", nargs="*", default=None, help="sample ids to use")
    ap.add_argument("--max-conversations", type=int, default=0)
    ap.add_argument("--questions", type=int, default=0, help="first N questions each (0: all)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--no-sparse", action="store_true")
    ap.add_argument("--no-decay", action="store_true")
    ap.add_argument("--no-context", action="store_true")
    ap.add_argument("--no-speaker", action="store_true")
    ap.add_argument(
        "--keep-names",
        action="store_true",
        help="embed a question with the speakers it names (default: without them)",
    )
    ap.add_argument("--no-date", action="store_true", help="no boost for dates a question names")
    ap.add_argument("--no-session", action="store_true", help="no lift from a session's best match")
    ap.add_argument("--session-boost", type=float, default=MemoryConfig().session_boost)
    ap.add_argument("--no-reply", action="store_true", help="no lift from the question a turn answers")
    ap.add_argument("--reply-boost", type=float, default=MemoryConfig().reply_boost)
    ap.add_argument("--context-window", type=int, default=MemoryConfig().context_window)
    ap.add_argument("--speaker-boost", type=float, default=MemoryConfig().speaker_boost)
    ap.add_argument("--dense-weight", type=float, default=MemoryConfig().dense_weight)
    ap.add_argument("--decay-floor", type=float, default=MemoryConfig().decay_floor)
    ap.add_argument("--date-boost", type=float, default=MemoryConfig().date_boost)
    ap.add_argument(
        "--no-when", action="store_true", help="no boost for turns that say when, on questions that ask when"
    )
    ap.add_argument("--when-boost", type=float, default=MemoryConfig().when_boost)
    ap.add_argument(
        "--no-name",
        action="store_true",
        help="no boost for turns that name something, on questions that ask for a name",
    )
    ap.add_argument("--name-boost", type=float, default=MemoryConfig().name_boost)
    ap.add_argument(
        "--split",
        nargs="*",
        default=["conv-26", "conv-30", "conv-41"],
        help="tuning conversations: also report them and the rest (held out) apart",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--concept-boost", type=float, default=MemoryConfig().concept_boost)
    ap.add_argument(
        "--links-compare",
        action="store_true",
        help="also search with the concept layer off; paired bootstrap of the difference",
    )
    ap.add_argument(
        "--decay-compare",
        action="store_true",
        help="also search with decay off; paired bootstrap of the difference",
    )
    ap.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="the relevance floor (default: the library's, MemoryConfig.min_score)",
    )
    ap.add_argument(
        "--hit-floor",
        type=float,
        default=None,
        help="the least confidence of a hit once a question passes the floor (MemoryConfig.hit_floor)",
    )
    ap.add_argument(
        "--floor-compare",
        action="store_true",
        help="also search with no relevance floor; paired bootstrap of the difference",
    )
    args = ap.parse_args(argv)
    out = run(args)
    print(table(out))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
