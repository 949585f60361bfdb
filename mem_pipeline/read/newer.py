"""What a person said later on the same thing sets the earlier items aside (pure).

A correction the write path did not recognise stays a plain ADD: "Ethiopian food is my whole
thing lately" after "Korean food is my favourite", "I order my steak medium-rare since the
trip" after "Steak has to be well done for me". Both stay valid, and the older one, closer to
the question's words, ranks first. Worded without any cue a rule knows, the change still shows
in two things: the later statement is about the same thing (their embeddings are close) and it
was said later, on another day. So, among what a search found: an item (a fact or a turn)
within :data:`SIMILAR` cosine of an item of the same person said at least :data:`GAP_S`
seconds later is set aside for it. The later item must have been found by the same search, so
it is about what was asked too. What is set aside stays stored and valid: a question that does
not find the later item still gets it.

Where it applies (the reader decides): a store that extracts facts (a fact among what was
found; a raw-turn store, as LoCoMo's evaluation uses, is unchanged), and a question to the
asker about their present (``text.slots.asks_now``) that names no date and does not ask
"when". A question about the past or about someone else ("what did Caroline research?") keeps
every earlier item: events do not replace each other, states do.

"Said" is when the person last said it (a fact restated later is as new as the restatement),
so in a reversal (oat milk, then soya, then "back on oat milk") the middle value is the one
set aside.

Chosen on the development behaviour sets (the second to fifth held-out sets: 170 rank-1 and 72
stale probes; ``eval/README.md``, "What was said later"). A prototype that embedded the found
texts afresh, with later facts only, gave rank-1 127 / 128 / 128 / 125 (from 124) and the
stale value in the block 23 / 24 / 25 / 26 times (from 30) at cosine .40 / .45 / .50 / .55.
As built, at .45: rank-1 128, stale 18.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .rank import Ranked, row_of

__all__ = ["GAP_S", "SIMILAR", "set_aside"]

#: The least cosine of an item to a later one for the later one to set it aside.
SIMILAR = 0.45
#: How much later (seconds) it must have been said: another day's conversation.
GAP_S = 12 * 3600.0


def set_aside(
    ranked: Sequence[Ranked],
    vectors: Mapping[str, Sequence[float] | np.ndarray],
    *,
    similar: float = SIMILAR,
    gap: float = GAP_S,
) -> tuple[list[Ranked], dict[str, str]]:
    """``ranked`` without the items a later one among them sets aside, in the same order, and
    ``{set-aside id: the later item's id}`` (the most similar such item). ``vectors``: the
    items' dense vectors by id; an item without one is kept and sets nothing aside. Nothing is
    set aside unless a fact is among ``ranked`` (a raw-turn store), and items of two different
    named speakers never set each other aside. When everything would go, nothing does."""
    known = [r for r in ranked if r.id in vectors]
    if len(known) < 2:
        return list(ranked), {}
    rows = [r.row or row_of(r.cand.payload) for r in known]
    if not any(w.kind == 0 for w in rows):  # a raw-turn store is unchanged
        return list(ranked), {}
    m = np.asarray([np.asarray(vectors[r.id], dtype=np.float32) for r in known])
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m = m / np.where(norms > 0, norms, 1.0)
    sims = m @ m.T
    aside: dict[str, str] = {}
    for i, (a, wa) in enumerate(zip(known, rows)):
        best, by = similar, None
        for j, (b, wb) in enumerate(zip(known, rows)):
            if wb.seen - wa.seen < gap or sims[i, j] < best:
                continue
            if wa.speaker and wb.speaker and wa.speaker != wb.speaker:
                continue
            best, by = float(sims[i, j]), b.id
        if by is not None:
            aside[a.id] = by
    if not aside or len(aside) == len(ranked):
        return list(ranked), {}
    return [r for r in ranked if r.id not in aside], aside
