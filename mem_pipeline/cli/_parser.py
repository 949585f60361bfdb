"""The command line's grammar: every command, every argument with its help and default."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import __version__
from .._inputs import MIN_ID_PREFIX
from ..config import MemoryConfig, default_data_path
from . import _admin, _facts

__all__ = ["build_parser"]

DESCRIPTION = """\
Long-term memory for chat agents, from the shell. Remember what a user said, recall what is
relevant to a question (each hit with the parts of its score), and look at, correct or delete
single facts. It runs offline on an embedded store: no server, no API key.

Every command that reads or writes memory acts for one user (--user) on the store at --path."""

EPILOG = f"""\
examples:
  mem-pipeline demo
  mem-pipeline add --user priya "I'm vegetarian and I run every Sunday morning."
  mem-pipeline search --user priya "what should I cook tonight?"
  mem-pipeline list --user priya
  mem-pipeline get --user priya 01a22d69-f02     (an id, or a unique prefix of it)
  mem-pipeline COMMAND --help                     (what a command does, all its options)

ids:         a fact's whole id, or any prefix of {MIN_ID_PREFIX} or more characters that no other
             fact of the user shares (as git takes short hashes); text output shows them so.
output:      text for people; --json (on the commands that offer it) prints one JSON
             document on stdout and nothing else. Times are UTC, ISO 8601 with a Z.
exit codes:  0 done (an empty result too), 1 no such fact for this user, 2 any other
             error a user can fix (usage, input, configuration, store, LLM): one line on
             stderr, no traceback; 130 interrupted.
environment: MEM_PIPELINE_PATH (the store), MEM_PIPELINE_LLM=openai (extract facts with an
             LLM: opt-in) with OPENAI_API_KEY or OPENAI_BASE_URL, MEM_PIPELINE_LLM_MODEL,
             MEM_PIPELINE_EMBEDDER, MEM_PIPELINE_ENGINE, QDRANT_URL (README: Configuration)."""

ID_HELP = f"a fact's id, or a unique prefix of it ({MIN_ID_PREFIX}+ characters)"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; each option's default after its help (when it has one)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or not action.option_strings or action.default in (None, False):
            return text
        if action.default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, pointing at the help (exit 2, as every expected error)."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--path",
        default=None,
        help="the embedded store's directory; ':memory:' for a throwaway one "
        f"(default: $MEM_PIPELINE_PATH, else {default_data_path()})",
    )
    p.add_argument(
        "--url",
        default=None,
        help="a Qdrant server to use instead of the embedded store (default: $QDRANT_URL)",
    )


def _json(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as one JSON document on stdout")


def _scope(p: argparse.ArgumentParser, *, required: bool = True, who: str = "") -> None:
    p.add_argument(
        "--user",
        required=required,
        default=None,
        help=who or "the user whose memory this is (required: every read and write is scoped to one user)",
    )
    p.add_argument("--tenant", default="default", help="the tenant (organisation) the user belongs to")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mem-pipeline", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"mem-pipeline {__version__}")
    sub = p.add_subparsers(title="commands", metavar="COMMAND", dest="command", required=True)

    def command(
        name: str,
        func: Callable[[argparse.Namespace], int],
        summary: str,
        description: str,
        *,
        json: str | None = "the result",
        scoped: bool = True,
        store: bool = True,
    ) -> argparse.ArgumentParser:
        c = sub.add_parser(
            name, help=summary, description=description, formatter_class=_Formatter, epilog=None
        )
        if scoped:
            _scope(c)
        if store:
            _store(c)
        if json:
            _json(c, json)
        c.set_defaults(func=func)
        return c

    d = command(
        "demo",
        _admin.cmd_demo,
        "play a short conversation into memory and show what it keeps and recalls",
        "Plays a three-session conversation into a store and shows what was stored, a correction\n"
        "superseding an old fact, recalls with the parts of their scores, the prompt block, a\n"
        "restart that keeps everything, and a question answered through concept links.",
        json="the demo's report",
        scoped=False,
        store=False,
    )
    d.add_argument(
        "--path", default=None, help="the store to play into (default: a temporary one, removed after)"
    )

    # -- one user's memory ----------------------------------------------------------------------
    a = command(
        "add",
        _facts.cmd_add,
        "remember what the user said",
        "Remembers one user turn: the facts found in it (the offline extractor, or an LLM with\n"
        "MEM_PIPELINE_LLM=openai), each added, or reinforcing, updating or superseding a stored\n"
        "one; the turn itself is kept too. Prints what happened to each fact, with its id.",
        json="the add result (events, turns)",
    )
    a.add_argument("text", help="what the user said (quote it)")
    a.add_argument(
        "--concept",
        action="append",
        metavar="WORD",
        help="a concept (topic word) for the fact; repeat for several (default: key phrases of the text)",
    )
    a.add_argument(
        "--no-infer", action="store_true", help="keep the text as said (one turn), extracting nothing"
    )
    a.add_argument("--at", default=None, metavar="TIME", help="when it was said, ISO 8601 (default: now)")

    s = command(
        "search",
        _facts.cmd_search,
        "recall what is relevant to a question",
        "Recalls the user's facts and turns most relevant to a query, best first, each with the\n"
        "parts of its score, then the facts reached only through concept links. An unrelated\n"
        "query recalls nothing.",
        json="the recall (hits, associations, concepts)",
    )
    s.add_argument("query", help="the question or keywords")
    s.add_argument("--limit", type=int, default=5, help="hits at most (associations come beside them)")
    s.add_argument(
        "--min-score",
        type=float,
        default=None,
        metavar="P",
        help="the relevance floor: a hit's confidence (0-1) must reach it; 0 shows the closest "
        f"matches whatever they are (default: {MemoryConfig.model_fields['min_score'].default})",
    )
    s.add_argument("--all", action="store_true", help="also recall superseded facts")

    ls = command(
        "list",
        _facts.cmd_list,
        "list the user's facts and turns",
        "Lists the user's facts (what was extracted) and turns (what was said), oldest first, with\n"
        "their ids; superseded ones only with --all. Pages with --limit and --cursor.",
        json="the facts (and next_cursor)",
    )
    ls.add_argument("--all", action="store_true", help="include superseded facts (kept as history)")
    ls.add_argument(
        "--kind", choices=["fact", "turn"], default=None, help="only facts or only turns (default: both)"
    )
    ls.add_argument(
        "--limit", type=int, default=None, help="facts per page (default: all of them, no paging)"
    )
    ls.add_argument(
        "--cursor", default=None, help="the next page after this cursor (printed when --limit cuts)"
    )

    g = command("get", _facts.cmd_get, "show one fact in full", "Shows one fact or turn, every field.")
    g.add_argument("id", help=ID_HELP)
    u = command(
        "update",
        _facts.cmd_update,
        "replace a fact's text",
        "Replaces a fact's text, keeping its id; the old text stays in its history.",
        json="the updated fact",
    )
    u.add_argument("id", help=ID_HELP)
    u.add_argument("text", help="the new text (quote it)")
    de = command(
        "delete",
        _facts.cmd_delete,
        "delete one fact",
        "Deletes one fact or turn and its concept links; its history keeps a DELETE event.",
    )
    de.add_argument("id", help=ID_HELP)
    h = command(
        "history",
        _facts.cmd_history,
        "every change to a fact",
        "Every change to a fact, oldest first (ADD, REINFORCE, UPDATE, SUPERSEDE, DELETE), kept\n"
        "after it is deleted (then give its whole id).",
        json="the events",
    )
    h.add_argument("id", help=ID_HELP)
    fb = command(
        "feedback",
        _facts.cmd_feedback,
        "say whether recalled facts helped",
        "Says whether facts a search recalled helped: they, and the concept links from the\n"
        "query to them, grow stronger (or weaker), so they are recalled sooner (or later).",
    )
    fb.add_argument("ids", nargs="+", metavar="id", help=ID_HELP + "; several may follow")
    fb.add_argument("--query", required=True, help="the query that recalled them (required)")
    fb.add_argument("--amount", type=float, default=1.0, help="how much they helped, from -1 to 1")
    fb.add_argument("--harmful", action="store_true", help="they misled (the same as --amount -1)")
    command(
        "forget",
        _facts.cmd_forget,
        "remove everything of a user",
        "Removes everything of one user in one tenant: facts, turns, history, pending turns and\n"
        "concept links. It cannot be undone.",
    )
    pr = command(
        "prune",
        _facts.cmd_prune,
        "remove faded facts (a dry run unless --apply)",
        "Finds facts whose strength (recency x reinforcement) has faded below a floor, and with\n"
        "--apply deletes them (their history keeps a DELETE event).",
    )
    pr.add_argument("--min-strength", type=float, default=0.05, help="the floor, from 0 to 1")
    pr.add_argument("--apply", action="store_true", help="really delete them (default: only list them)")

    # -- upkeep ---------------------------------------------------------------------------------
    rp = command(
        "retry-pending",
        _admin.cmd_retry_pending,
        "extract the turns an LLM failed on",
        "Processes turns kept as pending when LLM extraction failed (for one user, or everyone).",
        scoped=False,
    )
    _scope(rp, required=False, who="only this user's turns (default: everyone's)")
    ri = command(
        "reindex",
        _admin.cmd_reindex,
        "bring what an older version wrote up to date",
        "Updates facts an older version wrote (lexical vectors, reply links, repeat keys); after\n"
        "an upgrade. It can be interrupted and run again.",
        scoped=False,
    )
    _scope(ri, required=False, who="only this user's facts (default: everyone's)")
    ri.add_argument("--dry-run", action="store_true", help="only count the facts to update")
    rep = command(
        "repair",
        _admin.cmd_repair,
        "drop points the engine cannot read",
        "Finds points the engine can no longer read (in a store an older version let be damaged),\n"
        "reports them and drops them.",
        scoped=False,
    )
    rep.add_argument("--dry-run", action="store_true", help="only report what would be dropped")
    command(
        "compact",
        _admin.cmd_compact,
        "move the embedded store's memory to mapped files",
        "Rewrites the embedded store's collections into segments kept in memory-mapped files, so\n"
        "that a process serving it keeps little memory of its own. It takes the store for its\n"
        "whole run (about a second per thousand facts): run it when nothing else writes.",
        scoped=False,
    )

    # -- chat and sharing -----------------------------------------------------------------------
    ch = command(
        "chat",
        _admin.cmd_chat,
        "a terminal chat with memory (needs an LLM)",
        "A terminal chat: each question recalls memories for the answer, and each turn is\n"
        "remembered. Answers come from OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any\n"
        "OpenAI-compatible server), model MEM_PIPELINE_LLM_MODEL.",
        json="one JSON object per answer (answer, hits); questions are read from stdin",
    )
    ch.add_argument("--limit", type=int, default=5, help="memories recalled per question")
    sv = command(
        "serve",
        _admin.cmd_serve,
        "the HTTP service, behind API keys (server extra)",
        "Serves the store over HTTP, behind API keys (mem-pipeline keys create), so several\n"
        "processes share it. Needs the server extra: pip install 'mem-pipeline[server]'.",
        json=None,
        scoped=False,
    )
    sv.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    sv.add_argument("--port", type=int, default=8077, help="the port to listen on")
    sv.add_argument("--keys", default=None, help="the API key file (default: api-keys.json beside the store)")
    sv.add_argument("--max-body-kb", type=int, default=256, help="the request body limit, in KB (413 beyond)")
    sv.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's",
    )
    sv.add_argument(
        "--docs",
        action="store_true",
        help="serve Swagger UI at /docs (its assets load from a CDN); the schema is always at /openapi.json",
    )
    mc = command(
        "mcp",
        _admin.cmd_mcp,
        "the MCP server over stdio, for one user (server extra)",
        "Serves one user's memory to an assistant over MCP (stdio): the tools remember, recall,\n"
        "feedback, list_memories and forget_fact. Needs the server extra.",
        json=None,
        scoped=False,
    )
    mc.add_argument("--user", default=None, help="the user served (default: $MEM_PIPELINE_USER; required)")
    mc.add_argument(
        "--tenant", default=None, help="the user's tenant (default: $MEM_PIPELINE_TENANT, else default)"
    )
    _keys(sub)
    return p


def _keys(sub: Any) -> None:
    ks = sub.add_parser(
        "keys",
        help="API keys of the HTTP service",
        description="Creates, lists and revokes the API keys of mem-pipeline serve.",
        formatter_class=_Formatter,
    )
    ksub = ks.add_subparsers(title="commands", metavar="COMMAND", dest="keys_command", required=True)
    kc = ksub.add_parser(
        "create", help="a new key, printed once", description="Creates a key, printed once (stored hashed)."
    )
    kc.add_argument("--tenant", default="default", help="the tenant the key acts in")
    kc.add_argument("--user", default=None, help="bind the key to this user (default: the whole tenant)")
    kc.add_argument("--name", default=None, help="a note: who or what uses the key")
    kr = ksub.add_parser("revoke", help="revoke a key by its id", description="Revokes a key (by its id).")
    kr.add_argument("id", help="the key's id (keys list shows them)")
    kl = ksub.add_parser("list", help="list keys (never their secrets)", description="Lists the keys.")
    for k in (kc, kr, kl):
        k.formatter_class = _Formatter
        _store(k)
        k.add_argument(
            "--keys", default=None, help="the API key file (default: api-keys.json beside the store)"
        )
        _json(k)
    ks.set_defaults(func=_admin.cmd_keys)
