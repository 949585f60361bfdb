"""The commands on one user's memory: add, search, list, get, update, delete, history,
feedback, forget, prune. Each prints text for a person, or with ``--json`` one JSON document."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import NotFoundError
from ..models import iso
from ..recall import Hit, Recall
from ._common import emit_json, fact_lines, find_id, open_memory, say, scope_of, short_ids

__all__ = [
    "cmd_add",
    "cmd_delete",
    "cmd_feedback",
    "cmd_forget",
    "cmd_get",
    "cmd_history",
    "cmd_list",
    "cmd_prune",
    "cmd_search",
    "cmd_update",
]


def _who(args: argparse.Namespace) -> str:
    return f"user {args.user!r}" + (f" in tenant {args.tenant!r}" if args.tenant != "default" else "")


def cmd_add(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        res = m.add(
            args.text,
            user_id=args.user,
            tenant=args.tenant,
            concepts=args.concept or None,
            infer=False if args.no_infer else None,
            timestamp=args.at,
        )
        short = {} if args.json else short_ids(m, scope_of(args))
    if args.json:
        emit_json(res.model_dump(mode="json"))
        return 0
    for e in res.events:
        fid = short.get(e.id or "", e.id or "-")
        was = f"  (supersedes {short.get(e.previous_id, e.previous_id)})" if e.previous_id else ""
        say(f"{e.event:<10}{e.kind:<5} {fid}  {e.text}{was}")
    if not res.events:
        say("no fact found in that text (a question or small talk); use --no-infer to keep it as said")
    kept = [short.get(i, i) for i in res.turn_ids]
    if kept:
        say(f"the turn is kept too, as {', '.join(kept)}")
    return 0


def _hit_lines(h: Hit, short: dict[str, str], rank: str) -> list[str]:
    p = h.parts
    via = f" via {' > '.join(h.via.path)}" if h.via else ""
    folded = f"; {len(h.folded)} of its turns folded in" if h.folded else ""
    return [
        f"{rank:>3} {h.score:5.3f}  {h.text}",
        f"          {h.kind} {short.get(h.id, h.id)}, {h.source}{via}: similarity {p.similarity:.2f}, "
        f"lexical {p.lexical:.2f}, decay {p.decay:.2f}, reinforcement {p.reinforcement:.2f}, "
        f"confidence {p.confidence:.2f}{folded}",
    ]


def _print_recall(r: Recall, short: dict[str, str], args: argparse.Namespace) -> None:
    if not r.hits:
        say(
            f"nothing recalled for {_who(args)}: no stored fact or turn is relevant enough "
            "(--min-score 0 shows the closest ones anyway)"
        )
    for i, h in enumerate(r.hits, 1):
        say(*_hit_lines(h, short, f"{i}."))
    if r.associations:
        say("reached through concept links (beside the hits, never instead of them):")
        for h in r.associations:
            say(*_hit_lines(h, short, "+"))


def cmd_search(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        r = m.search(
            args.query,
            user_id=args.user,
            tenant=args.tenant,
            limit=args.limit,
            min_score=args.min_score,
            include_invalid=args.all,
        )
        short = {} if args.json else short_ids(m, scope_of(args))
    if args.json:
        emit_json(r.to_json())
    else:
        _print_recall(r, short, args)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    nxt = None
    with open_memory(args) as m:
        scope = {"user_id": args.user, "tenant": args.tenant, "include_invalid": args.all, "kind": args.kind}
        if args.limit is None and args.cursor is None:
            facts = m.get_all(**scope)
        else:
            page = m.page(**scope, limit=args.limit or 100, cursor=args.cursor)
            facts, nxt = page.facts, page.next_cursor
        short = {} if args.json else short_ids(m, scope_of(args))
    if args.json:
        emit_json({"facts": [f.brief() for f in facts], "next_cursor": nxt})
        return 0
    if not facts:
        what = {"fact": "facts", "turn": "turns"}.get(args.kind or "", "facts or turns")
        say(f"no {what} stored for {_who(args)}" + ("" if args.all else " (--all includes superseded ones)"))
    width = max((len(short.get(f.id, f.id)) for f in facts), default=0)
    for f in facts:
        mark = "" if f.is_valid else "  (superseded)"
        cat = f"[{f.category.value}]" if f.kind == "fact" else "[said]"
        say(f"{short.get(f.id, f.id):<{width}}  {f.kind:<4} {cat:<14} x{f.confirmations}  {f.text}{mark}")
    if nxt:
        print(f"more: --cursor {nxt}", file=sys.stderr)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        fid = find_id(m, scope_of(args), args.id)
        fact = m.get(fid, user_id=args.user, tenant=args.tenant)
        short = {} if args.json else short_ids(m, scope_of(args))
    if args.json:
        emit_json(fact.brief())
    else:
        say(*fact_lines(fact, short))
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        fid = find_id(m, scope_of(args), args.id)
        old = m.get(fid, user_id=args.user, tenant=args.tenant)
        fact = m.update(fid, args.text, user_id=args.user, tenant=args.tenant)
    if args.json:
        emit_json(fact.brief())
    else:
        say(f"updated {fid}: {old.text!r} -> {fact.text!r} (the old text stays in its history)")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        fid = find_id(m, scope_of(args), args.id)
        fact = m.get(fid, user_id=args.user, tenant=args.tenant)
        m.delete(fid, user_id=args.user, tenant=args.tenant)
    if args.json:
        emit_json({"deleted": fid})
    else:
        say(f"deleted {fid}: {fact.text!r} (its history keeps a DELETE event: mem-pipeline history {fid})")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        fid = find_id(m, scope_of(args), args.id, deleted_ok=True)
        events = m.history(fid, user_id=args.user, tenant=args.tenant)
    if not events:
        raise NotFoundError(f"no fact {fid} for {_who(args)}")
    if args.json:
        emit_json([e.model_dump(mode="json") for e in events])
        return 0
    for e in events:
        change = (
            f"{e.old_text!r} -> {e.new_text!r}"
            if e.old_text and e.new_text
            else repr(e.new_text or e.old_text)
        )
        say(f"{iso(e.at)}  {e.event:<9} {change}")
    return 0


def cmd_feedback(args: argparse.Namespace) -> int:
    amount = -1.0 if args.harmful else args.amount
    with open_memory(args) as m:
        ids = [find_id(m, scope_of(args), given) for given in args.ids]
        res = m.feedback(ids, amount, user_id=args.user, tenant=args.tenant, query=args.query)
    if args.json:
        emit_json(res)
    else:
        say(f"feedback {amount:+.2f}: {res['facts']} facts and {res['links']} concept links moved")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        n = m.forget(user_id=args.user, tenant=args.tenant)
    if args.json:
        emit_json({"forgotten_facts": n})
    elif n == 0:
        say(f"nothing stored for {_who(args)}: nothing to forget")
    else:
        say(f"forgot {n} facts and turns of {_who(args)} (and their history, pending turns and links)")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        stale = m.prune(
            user_id=args.user, tenant=args.tenant, min_strength=args.min_strength, dry_run=not args.apply
        )
    if args.json:
        out: dict[str, Any] = {"dry_run": not args.apply, "facts": [f.brief() for f in stale]}
        emit_json(out)
        return 0
    if not stale:
        say(f"nothing has faded below strength {args.min_strength} for {_who(args)}")
        return 0
    verb = "removed" if args.apply else "would remove (a dry run: --apply deletes them)"
    say(f"{verb} {len(stale)} faded facts:", *(f"  {f.id}  {f.text}" for f in stale))
    return 0
