"""The ``mem-pipeline`` command line: demo, add, search, list, forget, history, prune, retry-pending.

Every command takes ``--path`` (embedded store; default ``MEM_PIPELINE_PATH`` or the user data
directory) and ``--json`` (machine-readable output). Errors of our tree print one line and
exit 2; nothing prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from .config import MemoryConfig
from .errors import MemPipelineError
from .memory import Memory
from .models import StoredFact
from .recall import Recall

__all__ = ["main"]


def _fact_json(f: StoredFact) -> dict[str, Any]:
    return {
        "id": f.id,
        "text": f.text,
        "category": f.category.value,
        "concepts": f.concepts,
        "metadata": f.metadata,
        "created_at": f.created_at.isoformat(),
        "confirmations": f.confirmations,
        "valid": f.is_valid,
        "superseded_by": f.superseded_by,
    }


def _print_recall(r: Recall, as_json: bool) -> None:
    if as_json:
        print(json.dumps(r.to_json(), ensure_ascii=False))
        return
    if not r.hits:
        print("  (nothing found)")
    for h in r.hits:
        p = h.parts
        via = f"  via {' > '.join(h.via.path)}" if h.via else ""
        print(f"  {h.score:5.3f}  {h.text}")
        print(
            f"         [{h.source}{via}; sim {p.similarity:.2f}, lexical {p.lexical:.2f}, "
            f"decay {p.decay:.2f}, reinforcement {p.reinforcement:.2f}]"
        )


def _open(args: argparse.Namespace) -> Memory:
    return Memory(config=MemoryConfig.from_env(path=args.path, url=getattr(args, "url", None)))


def cmd_add(args: argparse.Namespace) -> int:
    with _open(args) as m:
        res = m.add(
            args.text,
            user_id=args.user,
            tenant=args.tenant,
            concepts=args.concept or None,
            infer=False if args.no_infer else None,
        )
    if args.json:
        print(res.model_dump_json())
    else:
        for e in res.events:
            print(f"{e.event:<9} {e.id or '-'}  {e.text}")
        if not res.events:
            print("nothing to remember in that text (no statement found)")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    with _open(args) as m:
        r = m.search(args.query, user_id=args.user, tenant=args.tenant, limit=args.limit)
    _print_recall(r, args.json)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as m:
        facts = m.get_all(user_id=args.user, tenant=args.tenant, include_invalid=args.all)
    if args.json:
        print(json.dumps([_fact_json(f) for f in facts], ensure_ascii=False))
    else:
        for f in facts:
            mark = "" if f.is_valid else " (superseded)"
            print(f"{f.id}  [{f.category.value}] x{f.confirmations} {f.text}{mark}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    with _open(args) as m:
        n = m.forget(user_id=args.user, tenant=args.tenant)
    print(
        json.dumps({"forgotten_facts": n})
        if args.json
        else f"forgot {n} facts of {args.user!r} (and their history, pending turns, links)"
    )
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with _open(args) as m:
        events = m.history(args.id, user_id=args.user, tenant=args.tenant)
    if args.json:
        print(json.dumps([e.model_dump(mode="json") for e in events], ensure_ascii=False))
    else:
        for e in events:
            print(f"{e.at.isoformat()}  {e.event:<9} {e.old_text!r} -> {e.new_text!r}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    with _open(args) as m:
        stale = m.prune(
            user_id=args.user,
            tenant=args.tenant,
            min_strength=args.min_strength,
            dry_run=not args.apply,
        )
    if args.json:
        print(json.dumps({"dry_run": not args.apply, "facts": [_fact_json(f) for f in stale]}))
    else:
        verb = "removed" if args.apply else "would remove (dry run; --apply to delete)"
        print(f"{verb} {len(stale)} facts")
        for f in stale:
            print(f"  {f.id}  {f.text}")
    return 0


def cmd_retry_pending(args: argparse.Namespace) -> int:
    with _open(args) as m:
        results = m.retry_pending(user_id=args.user, tenant=args.tenant)
        left = m.pending(user_id=args.user, tenant=args.tenant) if args.user else []
    if args.json:
        print(json.dumps({"processed": len(results), "still_pending": len(left)}))
    else:
        print(f"processed {len(results)} pending turns; {len(left)} still pending")
    return 0


# -- demo ---------------------------------------------------------------------------------------
_SESSIONS: list[tuple[str, list[str]]] = [
    (
        "2026-01-10T09:00:00+00:00",
        [
            "Hi! I work as a data engineer at a logistics startup in Leeds.",
            "I am vegetarian. My sister Ana lives in Lisbon.",
            "What's a good podcast for the commute?",
        ],
    ),
    (
        "2026-02-02T19:30:00+00:00",
        [
            "I love trail running and I'm training for the Leeds half marathon in May.",
            "Just so you know, I'm vegetarian.",
        ],
    ),
    (
        "2026-03-15T08:15:00+00:00",
        [
            "Actually, my sister Ana lives in Porto now.",
            "I started learning Portuguese so I can chat with her neighbours.",
        ],
    ),
]
_QUESTIONS = [
    "what should I cook for dinner?",
    "where does my sister live?",
    "what race am I preparing for?",
]


def cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    tmp = None
    path = args.path
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="mem-pipeline-demo-")
        path = tmp.name
    user = "priya"
    cfg = MemoryConfig.from_env(path=path)
    out = print if not args.json else (lambda *a, **k: None)
    out(f"mem_pipeline demo: store at {path}")
    llm = f"LLM at {cfg.llm_base_url or 'api.openai.com'}" if cfg.llm_configured else None
    out(f"extractor: {llm or 'offline (no LLM configured)'}\n")
    report: dict[str, Any] = {"path": path, "sessions": []}
    with Memory(config=cfg) as m:
        for when, turns in _SESSIONS:
            out(f"== session of {when[:10]}")
            sess = []
            for text in turns:
                res = m.add(text, user_id=user, timestamp=when)
                out(f"user: {text}")
                for e in res.events:
                    extra = f"  (supersedes {e.previous_id[:8]})" if e.previous_id else ""
                    out(f"   -> {e.event:<9} {e.text}{extra}   [{e.reason}]")
                if not res.events:
                    out("   -> nothing durable (question or greeting)")
                sess.append(res.model_dump(mode="json"))
            report["sessions"].append(sess)
            out()
        facts = m.get_all(user_id=user, include_invalid=True)
        out("== what is stored")
        for f in facts:
            state = "valid" if f.is_valid else "superseded"
            out(f"  [{f.category.value:<12}] x{f.confirmations} {state:<10} {f.text}")
        out("\n== recall")
        for q in _QUESTIONS:
            r = m.search(q, user_id=user, limit=3, reinforce=False)
            out(f"? {q}")
            _print_recall(r, False) if not args.json else None
        r = m.search(_QUESTIONS[0], user_id=user, limit=3, reinforce=False)
        out("\n== the prompt block handed to a chatbot for the first question")
        out(r.to_prompt(max_tokens=300))
    out("\n== restart: a new Memory on the same path")
    with Memory(config=cfg) as m:
        facts2 = m.get_all(user_id=user, include_invalid=True)
        out(f"  {len(facts2)} facts after reopening (before: {len(facts)})")
        sister = [f for f in facts2 if "sister" in f.text and not f.is_valid]
        if sister:
            out(f"  history of {sister[0].text!r}:")
            for h in m.history(sister[0].id, user_id=user):
                out(f"    {h.event:<9} {h.old_text!r} -> {h.new_text!r}")
        r = m.search("where does my sister live?", user_id=user, limit=1, reinforce=False)
        out(f"  where does my sister live? -> {r.hits[0].text if r.hits else '(nothing)'}")
        out(f"  another user sees: {len(m.get_all(user_id='someone-else'))} facts")
        report["facts_after_restart"] = len(facts2)
    report["seconds"] = round(time.perf_counter() - t0, 2)
    out(f"\ndemo finished in {report['seconds']} s")
    if args.json:
        print(json.dumps(report))
    if tmp is not None:
        tmp.cleanup()
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--path",
        default=None,
        help="embedded store directory (default: MEM_PIPELINE_PATH or the user "
        "data dir; ':memory:' for a throwaway store)",
    )
    common.add_argument("--url", default=None, help="a Qdrant server instead (QDRANT_URL)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    scoped = argparse.ArgumentParser(add_help=False, parents=[common])
    scoped.add_argument("--user", required=True, help="user id (required: every call is scoped)")
    scoped.add_argument("--tenant", default="default")

    p = argparse.ArgumentParser(prog="mem-pipeline", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", parents=[common], help="play a short conversation into memory")
    d.set_defaults(func=cmd_demo)
    a = sub.add_parser("add", parents=[scoped], help="remember a text")
    a.add_argument("text")
    a.add_argument("--concept", action="append", help="attach a concept (repeatable)")
    a.add_argument("--no-infer", action="store_true", help="store the text verbatim")
    a.set_defaults(func=cmd_add)
    s = sub.add_parser("search", parents=[scoped], help="recall facts for a query")
    s.add_argument("query")
    s.add_argument("--limit", type=int, default=5)
    s.set_defaults(func=cmd_search)
    ls = sub.add_parser("list", parents=[scoped], help="list a user's facts")
    ls.add_argument("--all", action="store_true", help="include superseded facts")
    ls.set_defaults(func=cmd_list)
    f = sub.add_parser("forget", parents=[scoped], help="remove everything of a user")
    f.set_defaults(func=cmd_forget)
    h = sub.add_parser("history", parents=[scoped], help="every change to a fact")
    h.add_argument("id")
    h.set_defaults(func=cmd_history)
    pr = sub.add_parser("prune", parents=[scoped], help="remove faded facts (dry run by default)")
    pr.add_argument("--min-strength", type=float, default=0.05)
    pr.add_argument("--apply", action="store_true", help="really delete")
    pr.set_defaults(func=cmd_prune)
    rp = sub.add_parser("retry-pending", parents=[common], help="process turns whose extraction failed")
    rp.add_argument("--user", default=None, help="only this user (default: everyone)")
    rp.add_argument("--tenant", default="default")
    rp.set_defaults(func=cmd_retry_pending)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except MemPipelineError as e:
        print(f"mem-pipeline: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
