"""Turns: where a new raw turn sits among the turns before it (the context its neighbours lend
its lexical entry, and the question it answers), and the same reply links for old turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

from .._parts import Parts
from ..models import Scope, session_key
from ..store import TURN_LINKS_VERSION
from ..text.lexical import as_context

__all__ = ["answers", "missing_contexts", "place_turn", "reply_links"]


def answers(prev: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Whether a raw turn with metadata ``meta`` answers the stored turn ``prev`` said just
    before it: ``prev`` asked a question ("?") and someone else said it."""
    asker = (prev.get("metadata") or {}).get("speaker")
    return "?" in str(prev.get("text", "")) and asker is not None and asker != meta.get("speaker")


def place_turn(
    parts: Parts,
    scope: Scope,
    fid: str,
    text: str,
    own: str,
    meta: Mapping[str, Any],
    recent: dict[Any, list[dict[str, Any]]] | None = None,
    asked: str | None = None,
) -> tuple[str, str | None]:
    """Where a new raw turn sits among the turns before it: its lexical index text, and the
    turn it answers (``StoredFact.reply_to``).

    **Context.** Neighbouring raw turns lend their words to each other's lexical entry: the
    new turn's entry gets the text of the previous ``context_window`` turns; each of those
    gets the new turn's text appended (until it has ``context_window`` followers). Only the
    lexical (sparse) vector and ``index_text`` change: the dense vector stays the turn's own,
    so semantic similarity is never diluted by neighbours. Lent lines are marked
    (:func:`~mem_pipeline.text.lexical.as_context`) and count half as much as the turn's own
    words, so a turn that says a thing outranks the turns that merely sit next to it (LoCoMo
    tuning split R@5 .745 -> .761 at the same window).

    **The assistant's question.** Assistant turns are not stored, but a user turn that
    answers the assistant's question of the same ``add`` call (``asked``: "What's your dog
    called?" / "Pepper.") gets the question's words as lent context too (with a
    ``context_window``), so "what is my dog's name?" finds "Pepper.".

    **Reply.** When the turn just before (same scope and session) asked a question ("?") and
    someone else said it, this turn is taken as its answer: "What's your favourite dish from
    the show?" / "Coconut milk ice cream, no contest." Search lends the answer part of the
    question's relevance (``MemoryConfig.reply_boost``), since the question holds the words a
    later query uses and the answer holds what it wants.

    ``recent`` is one ``add`` call's view of the latest turns per session: the store is read
    for the first turn of a session only, later turns of the same call see the turns this call
    wrote.
    """
    store = parts.store
    w = parts.config.context_window
    session = session_key(meta.get("session"))
    if recent is not None and session in recent:
        before = recent[session]
    else:
        before = store.recent_raw(scope, session, max(w, 1))
        for p in before:  # what earlier adds lent them may still wait to be written
            waiting = parts.links.waiting_context(scope, p["id"])
            if waiting is not None:
                p["index_text"] = waiting[0]
                p.update(waiting[1])
    before = [p for p in before if p["id"] != fid]
    reply_to = before[0]["id"] if before and answers(before[0], meta) else None
    lent_to = before[:w]
    grown: list[tuple[str, str, dict[str, Any]]] = []
    for prev in lent_to:
        if int(prev.get("ctx_after", 0)) >= w:
            continue
        ctx = prev.get("index_text", prev["text"]) + "\n" + as_context(own)
        after = int(prev.get("ctx_after", 0)) + 1
        grown.append((prev["id"], ctx, {"ctx_after": after}))
        prev["index_text"], prev["ctx_after"] = ctx, after
    # the turns before, in one write of their vectors; inside a journaled add it waits for
    # the user's next write-behind batch (``links.contexts``)
    parts.links.contexts(scope, grown)
    lent = [as_context(p.get("embed_text") or p["text"]) for p in reversed(lent_to)]
    if asked and w:
        lent.append(as_context(asked))
    index_text = "\n".join([*lent, own])
    if recent is not None:
        mine = {
            "id": fid,
            "text": text,
            "embed_text": own,
            "index_text": index_text,
            "ctx_after": 0,
            "metadata": dict(meta),
        }
        recent[session] = [mine, *before][: max(w, 1)]
    return index_text, reply_to


def _reads(t: Mapping[str, Any], p: Mapping[str, Any], session: str | int | None) -> bool:
    """Whether turn ``t`` (of ``session``), when added, reads the earlier turn ``p`` as one
    before it: ``p`` is of the scope ``t`` was added in (its agent and run when it sets them, any
    otherwise) and of its session when it has one."""
    return all(t.get(k) is None or p.get(k) == t.get(k) for k in ("agent_id", "run_id")) and (
        session is None or (p.get("metadata") or {}).get("session") == session
    )


def reply_links(turns: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """For each of a user's raw turns (in the order written) not yet linked: the turn it
    answers, found as :func:`place_turn` finds it when a turn is added: the latest earlier
    turn its scope reads (the scope's agent and run when it sets them, any otherwise), of its
    session when it has one."""
    links: list[tuple[str, str | None]] = []
    for i, t in enumerate(turns):
        if t.get("turn_links") == TURN_LINKS_VERSION:
            continue
        meta = t.get("metadata") or {}
        session = session_key(meta.get("session"))
        prev = next((turns[j] for j in range(i - 1, -1, -1) if _reads(t, turns[j], session)), None)
        links.append((t["id"], prev["id"] if prev is not None and answers(prev, meta) else None))
    return links


def missing_contexts(turns: Sequence[Mapping[str, Any]], w: int) -> list[tuple[str, str, dict[str, Any]]]:
    """The contexts a user's raw turns (in the order written, with their stored ``index_text``
    and ``ctx_after``) should have been lent by the turns after them and were not (a process
    ended before its write-behind batch wrote them): (turn id, grown index text, fields), as
    :func:`place_turn` would have grown them. Each turn is lent the text of the first ``w``
    later turns that read it; what it already has is kept and the missing tail appended.
    Exact for turns added in order; a turn deleted after lending is not lent again."""
    lent: dict[str, list[Mapping[str, Any]]] = {}
    for i, t in enumerate(turns):
        session = session_key((t.get("metadata") or {}).get("session"))
        before = islice((turns[j] for j in range(i - 1, -1, -1) if _reads(t, turns[j], session)), w)
        for prev in before:
            got = lent.setdefault(prev["id"], [])
            if len(got) < w:
                got.append(t)
    grown: list[tuple[str, str, dict[str, Any]]] = []
    for t in turns:
        followers = lent.get(t["id"], [])
        have = int(t.get("ctx_after", 0))
        if have >= len(followers):
            continue
        extra = [as_context(f.get("embed_text") or f["text"]) for f in followers[have:]]
        text = "\n".join([str(t.get("index_text", t["text"])), *extra])
        grown.append((t["id"], text, {"ctx_after": len(followers)}))
    return grown
