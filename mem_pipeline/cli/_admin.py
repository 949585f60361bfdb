"""The commands around the memory: the demo, upkeep (retry-pending, reindex, repair, compact), a
terminal chat, and sharing the store (serve, mcp, keys)."""

from __future__ import annotations

import argparse
import os
import sys

from ..config import MemoryConfig
from ..errors import ConfigError, LLMError
from ..memory import Memory
from ._common import emit_json, err, open_memory, say

__all__ = [
    "cmd_chat",
    "cmd_compact",
    "cmd_demo",
    "cmd_keys",
    "cmd_mcp",
    "cmd_reindex",
    "cmd_repair",
    "cmd_retry_pending",
    "cmd_serve",
]


def cmd_demo(args: argparse.Namespace) -> int:
    from .._demo import run_demo

    report = run_demo(args.path, print if not args.json else (lambda *a, **k: None))
    if args.json:
        emit_json(report)
    return 0


def cmd_retry_pending(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        results = m.retry_pending(user_id=args.user, tenant=args.tenant)
        left = m.pending(user_id=args.user, tenant=args.tenant) if args.user else []
    if args.json:
        emit_json({"processed": len(results), "still_pending": len(left)})
    elif not results and not left:
        say("no pending turns: every turn was extracted")
    else:
        say(f"processed {len(results)} pending turns; {len(left)} still pending")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        n = m.reindex(user_id=args.user, tenant=args.tenant, dry_run=args.dry_run)
    if args.json:
        emit_json({"dry_run": args.dry_run, "facts": n})
    else:
        verb = "would update (dry run)" if args.dry_run else "updated"
        say(f"{verb} {n} facts (lexical vectors, reply links)")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        report = m.repair(dry_run=args.dry_run)
    if args.json:
        emit_json(report)
        return 0
    for r in report["wal_repairs"]:
        say(
            f"write-ahead log {r['wal_dir']}: {r['entries_trimmed']} entries nested too deep were "
            f"trimmed when the store opened (original kept at {r['backup']})"
        )
    for name, ids in report["unreadable"].items():
        verb = "would drop (dry run)" if args.dry_run else "dropped"
        say(f"{name}: {verb} {len(ids)} unreadable points: {', '.join(ids[:10])}")
    if not report["wal_repairs"] and not report["unreadable"]:
        say("nothing to repair: every point of the store reads")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        took = m.compact()
    if args.json:
        emit_json({"seconds": {k: round(v, 3) for k, v in took.items()}})
    elif not took:
        say("nothing to compact: the store's server manages its own segments")
    else:
        say(f"compacted {len(took)} collections in {sum(took.values()):.1f} s")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    """A terminal chat with memory: ``with_memory`` around ``answer_question``."""
    from ..chat import answer_question, with_memory

    cfg = MemoryConfig.from_env(path=args.path, url=args.url)
    if not cfg.llm_endpoint_set:
        raise ConfigError(
            "mem-pipeline chat needs an LLM to answer: set OPENAI_API_KEY (OpenAI) or "
            "OPENAI_BASE_URL (any OpenAI-compatible server), and MEM_PIPELINE_LLM_MODEL"
        )
    with (
        Memory(config=cfg) as m,
        with_memory(answer_question, m, user_id=args.user, tenant=args.tenant, limit=args.limit) as chat,
    ):
        if not args.json:
            say(f"chat as {args.user!r} with {cfg.llm_model} (an empty line, /quit or Ctrl-D leaves)")
        while True:
            try:
                question = input("" if args.json else "you> ").strip()
            except EOFError:
                break
            if not question or question in ("/quit", "/exit"):
                break
            try:
                reply = chat(question)
            except LLMError as e:
                err(f"mem-pipeline: the LLM failed to answer: {e}")
                continue
            if args.json:
                emit_json({"answer": reply.answer, "hits": [h.brief() for h in reply.hits]})
                continue
            say(f"bot> {reply.answer}")
            say(f"  memories used ({len(reply.hits)}):" if reply.hits else "  (no memories used)")
            for h in reply.hits:
                say(f"   {h.score:5.3f}  {h.text}")
    if chat.pending_ids:
        err(
            f"{len(chat.pending_ids)} turn(s) kept as pending (extraction failed): "
            "mem-pipeline retry-pending processes them later"
        )
    return 0


# -- shared access: HTTP service, MCP server, API keys (fastapi/uvicorn/mcp: the `server` extra) --
def _server_extra(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"this command needs the server extra ({module} is missing): pip install 'mem-pipeline[server]'"
        )


def cmd_serve(args: argparse.Namespace) -> int:
    _server_extra("uvicorn")
    _server_extra("fastapi")
    import uvicorn

    from ..keys import KeyStore, default_keys_path
    from ..service import create_app

    cfg = MemoryConfig.from_env(path=args.path, url=args.url)
    keys = KeyStore(args.keys or default_keys_path(cfg))
    if not keys.list_keys():
        err(f"no API keys in {keys.path} yet: mem-pipeline keys create --tenant T --user U")
    with Memory(config=cfg) as m:
        app = create_app(m, keys, max_body_bytes=args.max_body_kb * 1024, docs=args.docs)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    _server_extra("mcp")
    from ..mcp_server import create_server

    user = args.user or os.environ.get("MEM_PIPELINE_USER")
    tenant = args.tenant or os.environ.get("MEM_PIPELINE_TENANT") or "default"
    if not user:
        raise ConfigError("mem-pipeline mcp serves one user: give --user or set MEM_PIPELINE_USER")
    with open_memory(args) as m:
        create_server(m, user_id=user, tenant=tenant).run("stdio")
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from ..keys import KeyStore, default_keys_path

    keys = KeyStore(args.keys or default_keys_path(MemoryConfig.from_env(path=args.path, url=args.url)))
    if args.keys_command == "create":
        key, rec = keys.create(tenant=args.tenant, user_id=args.user, name=args.name)
        if args.json:
            emit_json({"key": key, **rec.public()})
        else:
            who = f"user {rec.user_id!r}, tenant {rec.tenant!r}" if rec.user_id else f"tenant {rec.tenant!r}"
            say(key)
            print(f"key {rec.id} for {who}, stored hashed in {keys.path}; shown once", file=sys.stderr)
    elif args.keys_command == "revoke":
        rec = keys.revoke(args.id)
        emit_json(rec.public()) if args.json else say(f"revoked {rec.id}")
    else:
        recs = keys.list_keys()
        if args.json:
            emit_json([r.public() for r in recs])
            return 0
        if not recs:
            say(f"no API keys in {keys.path}: mem-pipeline keys create --tenant T --user U")
        for r in recs:
            pub = r.public()
            state = f"revoked {pub['revoked_at']}" if r.revoked else "active"
            say(f"{r.id}  tenant={r.tenant} user={r.user_id or '*'}  {state}  {r.name or ''}".rstrip())
    return 0
