"""The ``mem-pipeline`` command line: demo, add, search, list, forget, history, prune, feedback,
retry-pending, reindex, chat, serve, mcp, keys.

Every command takes ``--path`` (embedded store; default ``MEM_PIPELINE_PATH`` or the user data
directory) and ``--json`` (machine-readable output). Errors of our tree print one line and
exit 2; nothing prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    print(json.dumps(r.to_json(), ensure_ascii=False) if as_json else r.explain())


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
    nxt = None
    with _open(args) as m:
        if args.limit is None and args.cursor is None:
            facts = m.get_all(user_id=args.user, tenant=args.tenant, include_invalid=args.all)
        else:
            page = m.page(
                user_id=args.user,
                tenant=args.tenant,
                include_invalid=args.all,
                limit=args.limit or 100,
                cursor=args.cursor,
            )
            facts, nxt = page.facts, page.next_cursor
    rows = [_fact_json(f) for f in facts]
    if args.json:
        paged = args.limit is not None or args.cursor is not None
        print(json.dumps({"facts": rows, "next_cursor": nxt} if paged else rows, ensure_ascii=False))
    else:
        for f in facts:
            mark = "" if f.is_valid else " (superseded)"
            print(f"{f.id}  [{f.category.value}] x{f.confirmations} {f.text}{mark}")
        if nxt:
            print(f"more: --cursor {nxt}", file=sys.stderr)
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


def cmd_feedback(args: argparse.Namespace) -> int:
    amount = -1.0 if args.harmful else args.amount
    with _open(args) as m:
        res = m.feedback(args.ids, amount, user_id=args.user, tenant=args.tenant, query=args.query)
    print(
        json.dumps(res)
        if args.json
        else f"feedback {amount:+.2f}: {res['facts']} facts, {res['links']} concept links moved"
    )
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


def cmd_reindex(args: argparse.Namespace) -> int:
    with _open(args) as m:
        n = m.reindex(user_id=args.user, tenant=args.tenant, dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, "facts": n}))
    else:
        verb = "would update (dry run)" if args.dry_run else "updated"
        print(f"{verb} {n} facts (lexical vectors, reply links)")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    with _open(args) as m:
        report = m.repair(dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report))
        return 0
    for r in report["wal_repairs"]:
        print(
            f"write-ahead log {r['wal_dir']}: {r['entries_trimmed']} entries nested too deep were "
            f"trimmed when the store opened (original kept at {r['backup']})"
        )
    for name, ids in report["unreadable"].items():
        verb = "would drop (dry run)" if args.dry_run else "dropped"
        print(f"{name}: {verb} {len(ids)} unreadable points: {', '.join(ids[:10])}")
    if not report["wal_repairs"] and not report["unreadable"]:
        print("nothing to repair: every point of the store reads")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    """A terminal chat with memory: ``with_memory`` around ``answer_question`` on the configured LLM."""
    from functools import partial

    from .chat import answer_question, with_memory
    from .errors import LLMError
    from .llm import LLMClient

    cfg = MemoryConfig.from_env(path=args.path, url=args.url)
    if not cfg.llm_configured:
        print(
            "mem-pipeline chat needs an LLM to answer: set OPENAI_API_KEY (OpenAI) or "
            "OPENAI_BASE_URL (any OpenAI-compatible server), e.g.\n"
            "  OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=local "
            "MEM_PIPELINE_LLM_MODEL=qwen2.5-coder-1.5b-instruct mem-pipeline chat --user me",
            file=sys.stderr,
        )
        return 2
    llm = LLMClient.from_config(cfg)
    answer_fn = partial(answer_question, llm=llm)
    with (
        Memory(config=cfg) as m,
        with_memory(
            answer_fn, m, user_id=args.user, tenant=args.tenant, limit=args.limit, background=True
        ) as chat,
    ):
        if not args.json:
            print(f"chat as {args.user!r} with {llm.model} (empty line, /quit or Ctrl-D to leave)")
        while True:
            try:
                question = input("" if args.json else "you> ").strip()
            except EOFError:
                break
            if not question or question in ("/quit", "/exit"):
                break
            try:
                answer, hits = chat(question)
            except LLMError as e:
                print(f"mem-pipeline: the LLM failed to answer: {e}", file=sys.stderr)
                continue
            if args.json:
                print(
                    json.dumps({"answer": answer, "memories": [h.brief() for h in hits]}, ensure_ascii=False)
                )
                continue
            print(f"bot> {answer}")
            print(f"  memories used ({len(hits)}):" if hits else "  (no memories used)")
            for h in hits:
                print(f"   {h.score:5.3f}  {h.text}")
    if chat.pending_ids:
        print(
            f"{len(chat.pending_ids)} turn(s) kept as pending (extraction failed): "
            "mem-pipeline retry-pending processes them later",
            file=sys.stderr,
        )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    report = run_demo(args.path, print if not args.json else (lambda *a, **k: None))
    if args.json:
        print(json.dumps(report))
    return 0


# -- shared access: HTTP service, MCP server, API keys (fastapi/uvicorn/mcp: the `server` extra) --
def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .keys import KeyStore, default_keys_path
    from .service import create_app

    cfg = MemoryConfig.from_env(path=args.path, url=args.url)
    keys = KeyStore(args.keys or default_keys_path(cfg))
    if not keys.list_keys():
        print(f"no API keys in {keys.path}: mem-pipeline keys create --tenant T --user U", file=sys.stderr)
    with Memory(config=cfg) as m:
        app = create_app(m, keys, max_body_bytes=args.max_body_kb * 1024, docs=args.docs)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import os

    from .mcp_server import create_server

    user = args.user or os.environ.get("MEM_PIPELINE_USER")
    tenant = args.tenant or os.environ.get("MEM_PIPELINE_TENANT") or "default"
    if not user:
        print("mem-pipeline mcp: set the scope with --user or MEM_PIPELINE_USER", file=sys.stderr)
        return 2
    with _open(args) as m:
        create_server(m, user_id=user, tenant=tenant).run("stdio")
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from .keys import KeyStore, default_keys_path

    keys = KeyStore(args.keys or default_keys_path(MemoryConfig.from_env(path=args.path, url=args.url)))
    if args.keys_command == "create":
        key, rec = keys.create(tenant=args.tenant, user_id=args.user, name=args.name)
        if args.json:
            print(json.dumps({"key": key, **rec.public()}))
        else:
            who = f"user {rec.user_id!r}, tenant {rec.tenant!r}" if rec.user_id else f"tenant {rec.tenant!r}"
            print(key)
            print(f"key {rec.id} for {who}, stored hashed in {keys.path}; shown once", file=sys.stderr)
    elif args.keys_command == "revoke":
        rec = keys.revoke(args.id)
        print(json.dumps(rec.public()) if args.json else f"revoked {rec.id}")
    else:
        recs = keys.list_keys()
        if args.json:
            print(json.dumps([r.public() for r in recs]))
        for r in [] if args.json else recs:
            state = f"revoked {r.revoked_at}" if r.revoked else "active"
            print(f"{r.id}  tenant={r.tenant} user={r.user_id or '*'}  {state}  {r.name or ''}".rstrip())
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
    ls.add_argument("--limit", type=int, default=None, help="facts per page (default: all of them)")
    ls.add_argument("--cursor", default=None, help="the next page after this cursor (printed with --limit)")
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
    fb = sub.add_parser("feedback", parents=[scoped], help="say whether recalled facts helped")
    fb.add_argument("ids", nargs="+", help="fact ids from a search")
    fb.add_argument("--query", required=True, help="the query that recalled them")
    fb.add_argument("--amount", type=float, default=1.0, help="how much it helped, -1..1")
    fb.add_argument("--harmful", action="store_true", help="it did not help (amount -1)")
    fb.set_defaults(func=cmd_feedback)
    rp = sub.add_parser("retry-pending", parents=[common], help="process turns whose extraction failed")
    rp.add_argument("--user", default=None, help="only this user (default: everyone)")
    rp.add_argument("--tenant", default="default")
    rp.set_defaults(func=cmd_retry_pending)
    ri = sub.add_parser(
        "reindex",
        parents=[common],
        help="update facts an older version wrote: lexical vectors, reply links (after an upgrade)",
    )
    ri.add_argument("--user", default=None, help="only this user (default: everyone)")
    ri.add_argument("--tenant", default="default")
    ri.add_argument("--dry-run", action="store_true", help="only count the facts to rebuild")
    ri.set_defaults(func=cmd_reindex)
    rep = sub.add_parser(
        "repair",
        parents=[common],
        help="find points the engine cannot read (stores damaged by an older version) and drop them",
    )
    rep.add_argument("--dry-run", action="store_true", help="only report what would be dropped")
    rep.set_defaults(func=cmd_repair)
    ch = sub.add_parser("chat", parents=[scoped], help="a terminal chat with memory (needs an LLM)")
    ch.add_argument("--limit", type=int, default=5, help="memories recalled per question")
    ch.set_defaults(func=cmd_chat)
    sv = sub.add_parser("serve", parents=[common], help="the HTTP service (API keys; needs the server extra)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8077)
    sv.add_argument("--keys", default=None, help="API key file (default: api-keys.json beside the store)")
    sv.add_argument("--max-body-kb", type=int, default=256, help="request body limit (413 beyond)")
    sv.add_argument("--log-level", default="info")
    sv.add_argument(
        "--docs",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="serve Swagger UI at /docs (its assets load from a CDN; off by default). "
        "The OpenAPI schema is always at /openapi.json",
    )
    sv.set_defaults(func=cmd_serve)
    mc = sub.add_parser("mcp", parents=[common], help="the MCP server over stdio, for one fixed user")
    mc.add_argument("--user", default=None, help="the scope's user (default: MEM_PIPELINE_USER)")
    mc.add_argument("--tenant", default=None, help="the scope's tenant (default: MEM_PIPELINE_TENANT)")
    mc.set_defaults(func=cmd_mcp)
    ks = sub.add_parser("keys", help="API keys of the HTTP service")
    ksub = ks.add_subparsers(dest="keys_command", required=True)
    kc = ksub.add_parser("create", parents=[common], help="a new key, printed once")
    kc.add_argument("--tenant", default="default")
    kc.add_argument("--user", default=None, help="bind to this user (omit: the whole tenant)")
    kc.add_argument("--name", default=None, help="a note: who or what uses the key")
    kr = ksub.add_parser("revoke", parents=[common], help="revoke a key by its id")
    kr.add_argument("id")
    kl = ksub.add_parser("list", parents=[common], help="list keys (never their secrets)")
    for k in (kc, kr, kl):
        k.add_argument("--keys", default=None, help="API key file (default: api-keys.json beside the store)")
    ks.set_defaults(func=cmd_keys)
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
