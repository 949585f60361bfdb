"""The memory browser's pages as HTML fragments: Memories (a filtered, paged table), a fact
(details, source turns, history timeline, edit and delete), Pending, Forget. Pure functions of
the data they are given; every value goes through :mod:`._html`, which escapes it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..models import Category, FactPage, HistoryEvent, StoredFact
from ._html import Html, attrs, date, esc, h, join, route

__all__ = [
    "PAGE_SIZE",
    "MemoryFilters",
    "concept_chips",
    "fact_page",
    "forget_page",
    "memories_page",
    "notice",
    "pending_page",
    "user_options",
]

PAGE_SIZE = 50


def notice(text: str, kind: str = "ok") -> Html:
    return h('<p class="notice {kind}" role="status">{text}</p>', kind=kind, text=text)


def concept_chips(concepts: Sequence[str]) -> Html:
    if not concepts:
        return Html('<span class="muted">—</span>')
    return join(
        h('<a class="chip" href="{href}">{c}</a>', href=route("concepts", c=c), c=c) for c in concepts
    )


def _select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str | None) -> Html:
    opts = join(
        h("<option{a}>{text}</option>", a=attrs(value=v, selected=(v == (chosen or ""))), text=t)
        for v, t in options
    )
    return h(
        '<label>{label} <select name="{name}">{opts}</select></label>', label=label, name=name, opts=opts
    )


class MemoryFilters:
    """The Memories page's filters, as read from its query string."""

    def __init__(
        self,
        kind: str | None = None,
        category: str | None = None,
        concept: str | None = None,
        speaker: str | None = None,
        valid: str | None = None,
    ) -> None:
        self.kind = kind if kind in ("fact", "turn") else None
        self.category = category if category in {c.value for c in Category} else None
        self.concept = concept.strip() if concept and concept.strip() else None
        self.speaker = speaker if speaker else None
        self.include_invalid = valid == "all"

    def store_filters(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.category:
            out["category"] = self.category
        if self.concept:
            out["concepts"] = [self.concept]
        if self.speaker:
            out["speaker"] = self.speaker
        return out

    def params(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "category": self.category,
            "concept": self.concept,
            "speaker": self.speaker,
            "valid": "all" if self.include_invalid else None,
        }


def _source(f: StoredFact) -> Html:
    if f.kind == "turn":
        speaker = f.metadata.get("speaker") or f.metadata.get("role")
        said = h("said by {s}", s=speaker) if speaker else Html("said")
        return h('{said}<br><span class="muted">{origin}</span>', said=said, origin=f.origin)
    turns = len(f.sources)
    made = f"{f.origin}" + (f", from {turns} turn{'s' if turns != 1 else ''}" if turns else "")
    return esc(made)


def _validity(f: StoredFact) -> Html:
    if f.is_valid:
        return Html('<span class="tag valid">current</span>')
    by = (
        h(' by <a href="{href}">{short}</a>', href=route("fact", f.superseded_by), short=f.superseded_by[:8])
        if f.superseded_by
        else Html("")
    )
    return h('<span class="tag invalid">superseded</span>{by}<br>{at}', by=by, at=date(f.invalid_at))


def _reinforcement(f: StoredFact) -> Html:
    return h(
        '<span title="times confirmed">×{c}</span> <span class="muted" title="times recalled">{r} '
        "recalls</span>"
        '<br><span class="muted" title="valence from feedback">valence {v}</span>',
        c=f.confirmations,
        r=f.recalls,
        v=f"{f.valence:+.2f}",
    )


def _row(f: StoredFact) -> Html:
    return h(
        '<tr{a}><td class="text"><a href="{href}">{text}</a></td><td><span class="tag {kind}">{kind}</span>'
        "</td>"
        "<td>{category}</td><td>{source}</td><td>{created}</td><td>{updated}</td><td>{validity}</td>"
        "<td>{reinf}</td><td>{concepts}</td></tr>",
        a=attrs(data_id=f.id, class_=None if f.is_valid else "superseded"),
        href=route("fact", f.id),
        text=f.text,
        kind=f.kind,
        category=f.category.value,
        source=_source(f),
        created=date(f.created_at),
        updated=date(f.updated_at),
        validity=_validity(f),
        reinf=_reinforcement(f),
        concepts=concept_chips(f.concepts),
    )


def memories_page(
    page: FactPage, filters: MemoryFilters, *, start: int, speakers: Sequence[str], flash: Html | None = None
) -> Html:
    """The table of facts and turns, ``PAGE_SIZE`` a page, with its filters and pager."""
    form = h(
        '<form class="filters" data-get="memories">{kind}{cat}'
        '<label>concept <input name="concept" value="{concept}" size="14"></label>{speaker}{valid}'
        '<button type="submit">Filter</button> <a href="#/memories">clear</a></form>',
        kind=_select(
            "kind", "kind", [("", "facts and turns"), ("fact", "facts"), ("turn", "turns")], filters.kind
        ),
        cat=_select(
            "category", "category", [("", "any"), *[(c.value, c.value) for c in Category]], filters.category
        ),
        concept=filters.concept or "",
        speaker=_select("speaker", "speaker", [("", "anyone"), *[(s, s) for s in speakers]], filters.speaker)
        if speakers
        else Html(""),
        valid=_select(
            "valid",
            "validity",
            [("", "current only"), ("all", "with superseded")],
            "all" if filters.include_invalid else "",
        ),
    )
    total = page.total if page.total is not None else len(page.facts)
    shown = (
        h("{a}–{b} of {n}", a=start + 1, b=start + len(page.facts), n=total)
        if page.facts
        else esc(f"0 of {total}")
    )
    pager = (
        [h('<a href="{href}">first page</a>', href=route("memories", **filters.params()))] if start else []
    )
    if page.next_cursor:
        pager.append(
            h(
                '<a class="next" href="{href}">next page →</a>',
                href=route(
                    "memories", **filters.params(), cursor=page.next_cursor, start=start + len(page.facts)
                ),
            )
        )
    body = (
        join(_row(f) for f in page.facts)
        if page.facts
        else Html('<tr><td colspan="9" class="muted">Nothing stored matches.</td></tr>')
    )
    return h(
        '<section class="page" id="memories-page"><h2>Memories</h2>{flash}{form}'
        '<p class="count">{shown} {pager}</p>'
        '<table class="memories"><thead><tr><th>text</th><th>kind</th><th>category</th><th>source</th>'
        "<th>created</th><th>updated</th><th>validity</th><th>reinforcement</th><th>concepts</th></tr></thead>"
        '<tbody>{body}</tbody></table><p class="count">{pager}</p></section>',
        flash=flash or Html(""),
        form=form,
        shown=shown,
        pager=join(pager, " · "),
        body=body,
    )


# -- one fact ---------------------------------------------------------------------------------
def _dl(rows: Sequence[tuple[str, Any]]) -> Html:
    return h(
        '<dl class="props">{rows}</dl>', rows=join(h("<dt>{k}</dt><dd>{v}</dd>", k=k, v=v) for k, v in rows)
    )


def _turn_item(t: StoredFact) -> Html:
    speaker = t.metadata.get("speaker") or t.metadata.get("role") or ""
    return h(
        '<li><a href="{href}">{text}</a> <span class="muted">{speaker} · {at}</span></li>',
        href=route("fact", t.id),
        text=t.text,
        speaker=speaker,
        at=date(t.created_at),
    )


def _event(e: HistoryEvent) -> Html:
    change: Html
    if e.old_text is not None and e.new_text is not None and e.old_text != e.new_text:
        change = h('<del class="old">{old}</del><ins class="new">{new}</ins>', old=e.old_text, new=e.new_text)
    elif e.new_text is not None:
        change = h('<ins class="new">{new}</ins>', new=e.new_text)
    elif e.old_text is not None:
        change = h('<del class="old">{old}</del>', old=e.old_text)
    else:
        change = Html("")
    detail = (
        h('<span class="muted detail">{d}</span>', d=json.dumps(e.detail, ensure_ascii=False, default=str))
        if e.detail
        else Html("")
    )
    return h(
        '<li class="event ev-{name}"><span class="ev">{name}</span> {at}<div>{change}</div>{detail}</li>',
        name=e.event,
        at=date(e.at),
        change=change,
        detail=detail,
    )


def fact_page(
    fact: StoredFact | None,
    fact_id: str,
    events: Sequence[HistoryEvent],
    turns: Sequence[StoredFact],
    citing: Sequence[StoredFact],
    *,
    flash: Html | None = None,
) -> Html:
    """A fact (or turn): what it says and where it came from, its history as a timeline, and
    edit and delete behind a second, explicit step. ``fact`` None: deleted, history only."""
    timeline = h('<ol class="timeline">{items}</ol>', items=join(_event(e) for e in events))
    if fact is None:
        return h(
            '<section class="page" id="fact-page"><h2>Deleted fact</h2>{flash}'
            '<p class="muted">Fact <code>{fid}</code> is no longer stored; its history is kept.</p>'
            "<h3>History</h3>{timeline}</section>",
            flash=flash or Html(""),
            fid=fact_id,
            timeline=timeline,
        )
    meta = json.dumps(fact.metadata, ensure_ascii=False, indent=1, default=str) if fact.metadata else ""
    props = _dl(
        [
            ("id", h("<code>{i}</code>", i=fact.id)),
            ("kind", fact.kind),
            ("category", fact.category.value),
            ("source", _source(fact)),
            ("created", date(fact.created_at)),
            ("updated", date(fact.updated_at)),
            ("last seen", date(fact.last_seen_at)),
            ("valid from", date(fact.valid_from)),
            ("validity", _validity(fact)),
            ("reinforcement", _reinforcement(fact)),
            ("concepts", concept_chips(fact.concepts)),
            *([("slot", fact.slot)] if fact.slot else []),
            *(
                [("answers", h('<a href="{r}">the question turn</a>', r=route("fact", fact.reply_to)))]
                if fact.reply_to
                else []
            ),
            *(
                [("about", h('<a href="{r}">the statement it answered</a>', r=route("fact", fact.about)))]
                if fact.about
                else []
            ),
            *([("metadata", h("<pre>{m}</pre>", m=meta))] if meta else []),
        ]
    )
    if fact.kind == "fact":
        origin = (
            h('<h3>Source turns</h3><ul class="turns">{t}</ul>', t=join(_turn_item(t) for t in turns))
            if turns
            else Html(
                "<h3>Source turns</h3>"
                '<p class="muted">No stored turns (added directly, or the turns were not kept).</p>'
            )
        )
    else:
        origin = (
            h(
                '<h3>Facts drawn from this turn</h3><ul class="turns">{t}</ul>',
                t=join(_turn_item(f) for f in citing),
            )
            if citing
            else Html("")
        )
    fid = fact.id
    actions = h(
        '<div class="actions"><details class="edit"><summary>Edit…</summary>'
        '<form data-post="{upd}"><label>New text<br>'
        '<textarea name="text" rows="3" cols="70" required>{text}</textarea></label>'
        '<br><button type="submit">Save the new text</button> '
        '<span class="muted">the old text stays in the history</span>'
        "</form></details>"
        '<details class="delete"><summary>Delete…</summary>'
        '<form data-post="{dele}"><p>Delete this {kind} for good? Its history keeps a DELETE event.</p>'
        '<button type="submit" class="danger">Yes, delete it</button></form></details></div>',
        upd=f"fact/{fid}/update",
        dele=f"fact/{fid}/delete",
        text=fact.text,
        kind=fact.kind,
    )
    return h(
        '<section class="page" id="fact-page">'
        '<h2>{title}</h2>{flash}<blockquote class="fact-text">{text}</blockquote>'
        "{actions}{props}{origin}<h3>History</h3>{timeline}</section>",
        title="Fact" if fact.kind == "fact" else "Turn",
        flash=flash or Html(""),
        text=fact.text,
        actions=actions,
        props=props,
        origin=origin,
        timeline=timeline,
    )


# -- pending, forget, users -------------------------------------------------------------------
def _error_kind(error: str) -> str:
    """The error's type only (``LLMError``): its message may name an endpoint or a library,
    which the service tells no client (the server log has it in full)."""
    kind = error.split(":", 1)[0].strip()
    return (
        f"{kind} (details in the server log)" if kind.isidentifier() else "failed (details in the server log)"
    )


def pending_page(records: Sequence[Mapping[str, Any]], *, flash: Html | None = None) -> Html:
    """Turns whose extraction failed, with their error and a retry button."""
    if not records:
        rows = Html('<p class="muted">No pending extractions: every turn was read.</p>')
    else:
        items = []
        for r in records:
            msgs = r.get("messages") or []
            said = join(
                h(
                    "<li><b>{who}</b>: {text}</li>",
                    who=m.get("name") or m.get("role", "?"),
                    text=m.get("content", ""),
                )
                for m in msgs
                if isinstance(m, Mapping)
            )
            created = r.get("created_ts")
            when = date(datetime.fromtimestamp(float(created), tz=timezone.utc)) if created else date(None)
            items.append(
                h(
                    '<tr data-id="{id}"><td><ul class="said">{said}</ul></td><td>{when}</td>'
                    "<td>{attempts}</td>"
                    '<td class="error">{error}</td></tr>',
                    id=r.get("id", ""),
                    said=said,
                    when=when,
                    attempts=r.get("attempts", 1),
                    error=_error_kind(str(r.get("error", ""))),
                )
            )
        rows = h(
            '<table class="pending"><thead><tr><th>turns</th><th>kept</th><th>attempts</th>'
            "<th>last error</th>"
            "</tr></thead><tbody>{rows}</tbody></table>"
            '<form data-post="pending/retry"><button type="submit">Retry extraction now</button></form>',
            rows=join(items),
        )
    return h(
        '<section class="page" id="pending-page"><h2>Pending extractions</h2>{flash}'
        '<p class="muted">Turns are kept when extraction fails (the LLM was down or answered badly); '
        "a retry reads them again.</p>{rows}</section>",
        flash=flash or Html(""),
        rows=rows,
    )


def forget_page(user_id: str, counts: Mapping[str, int]) -> Html:
    """Forget everything of the user, behind a typed confirmation."""
    return h(
        '<section class="page" id="forget-page"><h2>Forget this user</h2>'
        "<p>This removes <b>everything</b> remembered of <b>{user}</b>: {facts} facts, {turns} turns, "
        "their history, pending turns and concept links. It cannot be undone.</p>"
        '<form data-post="forget"><label>Type the user id <code>{user}</code> to confirm<br>'
        '<input name="confirm" autocomplete="off" spellcheck="false" required></label><br>'
        '<button type="submit" class="danger">Forget this user</button></form></section>',
        user=user_id,
        facts=counts.get("fact", 0),
        turns=counts.get("turn", 0),
    )


def user_options(users: Sequence[str]) -> Html:
    return join(h("<option{a}></option>", a=attrs(value=u)) for u in users)
