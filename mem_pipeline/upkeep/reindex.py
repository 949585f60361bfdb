"""Bringing what an older version wrote up to date, in place and resumable."""

from __future__ import annotations

from .._parts import Parts
from ..models import Scope
from ..write.turns import reply_links

__all__ = ["reindex"]


def reindex(parts: Parts, scope: Scope | None, *, dry_run: bool = False) -> int:
    """Bring facts written by an older version up to date; return how many facts were (with
    ``dry_run``: would be) changed.

    - Lexical vectors that an older version of the lexical analysis built (see
      :data:`~mem_pipeline.text.lexical.LEXICAL_VERSION`) are rebuilt from each fact's stored
      index text.
    - Raw turns written before reply links get theirs (``StoredFact.reply_to``: the turn a
      turn answers), found from the order the turns were written, as ``add`` finds it.
    - Facts written before repeat keys get theirs (``store.repeat_key``), so that an exact
      repeat is found by its key, as for new facts.

    Facts of ``scope``'s user (every agent and run) or, with ``None``, of every user. Dense
    vectors are left alone: they are checked against the embedder when the store opens. Safe
    to interrupt and re-run: each fact is marked as it is rebuilt, so a second run only does
    the rest.
    """
    store = parts.store
    parts.links.flush(scope)  # the turn contexts adds left waiting are written first
    done: set[str] = set()
    for page in store.stale_lexical(scope):
        if dry_run:
            done.update(page)
        else:
            with parts.lock:
                done.update(store.rebuild_lexical(page))
    for user in store.unlinked_turn_users(scope):
        with parts.lock:
            links = reply_links(store.raw_turns(user))
            if not dry_run:
                store.set_turn_links(links)
        done.update(fid for fid, _ in links)
    with parts.lock:
        done.update(store.set_missing_keys(scope, dry_run=dry_run))
    return len(done)
