"""The Search page: the query form, the hits with their score parts drawn as small bars, the
association hits with the concept path that reached them, and the prompt block the chatbot
would be given, side by side. Pure rendering; every value is escaped by :mod:`._html`."""

from __future__ import annotations

from ..recall import Hit, Recall
from ._html import Html, attrs, date, esc, h, join, route
from ._views import concept_chips

__all__ = ["SearchForm", "search_page"]

#: the score parts shown, in order, with the value a full bar stands for
_PARTS: list[tuple[str, float, str]] = [
    ("relevance", 1.0, "how well the text matches (similarity and lexical, with the query's boosts)"),
    ("similarity", 1.0, "cosine of the query and text embeddings"),
    ("lexical", 1.0, "share of the query's words found in the text"),
    ("confidence", 1.0, "calibrated probability that the hit is relevant at all"),
    ("decay", 1.0, "recency: 1 when fresh, halving per category half-life"),
    ("reinforcement", 2.0, "confirmations, recalls and feedback (1 is neutral)"),
    ("concept", 1.0, "a concept the query names"),
    ("association", 1.0, "reached through concept links"),
    ("reply", 1.0, "relevance lent by the question this turn answers"),
]


class SearchForm:
    """The search page's query string."""

    def __init__(
        self,
        q: str | None = None,
        limit: str | None = None,
        expand: str | None = None,
        invalid: str | None = None,
        weak: str | None = None,
    ) -> None:
        self.q = (q or "").strip()
        try:
            self.limit = max(1, min(50, int(limit))) if limit else 10
        except ValueError:
            self.limit = 10
        self.expand = None if expand in (None, "") else expand != "off"
        self.include_invalid = invalid == "1"
        self.min_score = 0.0 if weak == "1" else None


def _bar(name: str, value: float, full: float, why: str) -> Html:
    width = max(0.0, min(1.0, value / full)) * 100
    return h(
        '<div class="part" title="{why}"><span class="pname">{name}</span>'
        '<svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true">'
        '<rect class="track" width="100" height="8"></rect>'
        '<rect class="fill p-{name}" width="{w}" height="8"></rect>'
        '</svg><span class="pval">{v}</span></div>',
        why=why,
        name=name,
        w=f"{width:.1f}",
        v=f"{value:.2f}",
    )


def _parts(hit: Hit) -> Html:
    values = hit.parts.model_dump()
    shown = [
        _bar(name, float(values[name]), full, why)
        for name, full, why in _PARTS
        if name in ("relevance", "similarity", "lexical", "confidence", "decay", "reinforcement")
        or float(values.get(name, 0.0)) != 0.0
    ]
    return h('<div class="parts">{bars}</div>', bars=join(shown))


def _via(hit: Hit) -> Html:
    if hit.via is None:
        return Html("")
    steps = [esc(hit.via.path[0])] if hit.via.path else []
    for name, weight in zip(hit.via.path[1:], hit.via.weights):
        steps.append(h(' <span class="arrow">→ <small>{w}</small></span> {n}', w=f"{weight:.2f}", n=name))
    return h(
        '<p class="via">via concept path: <span class="path">{steps}</span> '
        '<span class="muted">(from the query concept {q})</span></p>',
        steps=join(steps),
        q=hit.via.query_concept,
    )


def _hit(rank: int, hit: Hit, query: str) -> Html:
    feedback = h(
        '<form class="feedback" data-post="feedback" data-swap="self">'
        '<input type="hidden" name="ids" value="{id}"><input type="hidden" name="query" value="{q}">'
        '<button type="submit" name="helped" value="true">helped</button> '
        '<button type="submit" name="helped" value="false">did not help</button></form>',
        id=hit.id,
        q=query,
    )
    folded = (
        h('<span class="muted"> · {n} of its turns folded in</span>', n=len(hit.folded))
        if hit.folded
        else Html("")
    )
    return h(
        '<article class="hit" data-id="{id}" data-source="{source}"><header>'
        '<span class="rank">{rank}</span> <span class="score" title="score">{score}</span> '
        '<span class="tag src-{source}">{source}</span> <span class="tag {kind}">{kind}</span> '
        "<span>{category}</span> {date}{invalid}{folded}</header>"
        '<p class="hit-text"><a href="{href}">{text}</a></p>{via}{parts}'
        "<footer>concepts: {concepts} {feedback}</footer></article>",
        id=hit.id,
        source=hit.source,
        rank=rank,
        score=f"{hit.score:.3f}",
        kind=hit.kind,
        category=hit.category.value,
        date=date(hit.created_at, time=False),
        invalid=Html("") if hit.is_valid else Html(' <span class="tag invalid">superseded</span>'),
        folded=folded,
        href=route("fact", hit.id),
        text=hit.text,
        via=_via(hit),
        parts=_parts(hit),
        concepts=concept_chips(hit.concepts),
        feedback=feedback,
    )


def _weights(concepts: dict[str, float]) -> Html:
    if not concepts:
        return Html('<span class="muted">none</span>')
    return join(
        h(
            '<a class="chip" href="{href}">{c} <small>{w}</small></a>',
            href=route("concepts", c=c),
            c=c,
            w=f"{w:.2f}",
        )
        for c, w in sorted(concepts.items(), key=lambda kv: -kv[1])
    )


def _form(f: SearchForm) -> Html:
    expand = "" if f.expand is None else ("on" if f.expand else "off")
    opts = join(
        h("<option{a}>{t}</option>", a=attrs(value=v, selected=v == expand), t=t)
        for v, t in (
            ("", "links: server default"),
            ("on", "follow concept links"),
            ("off", "no concept links"),
        )
    )
    return h(
        '<form class="search" data-get="search"><input name="q" type="search" value="{q}" size="50" '
        'placeholder="ask what the chatbot would ask" autofocus> '
        '<label>hits <input name="limit" type="number" min="1" max="50" value="{limit}"></label> '
        '<select name="expand">{opts}</select> '
        '<label><input type="checkbox" name="invalid" value="1"{inv}> superseded too</label> '
        '<label><input type="checkbox" name="weak" value="1"{weak}> weak matches too</label> '
        '<button type="submit">Search</button></form>',
        q=f.q,
        limit=f.limit,
        opts=opts,
        inv=attrs(checked=f.include_invalid),
        weak=attrs(checked=f.min_score is not None),
    )


def search_page(form: SearchForm, recall: Recall | None, prompt: str | None) -> Html:
    """The form, then (for a query) the hits, the association hits and the prompt block."""
    if recall is None:
        return h(
            '<section class="page" id="search-page"><h2>Search</h2>{form}'
            '<p class="muted">See what a question recalls, why each hit ranked where it did, and the '
            "block of memories the chatbot would be given.</p></section>",
            form=_form(form),
        )
    hits = (
        join(_hit(i, hit, recall.query) for i, hit in enumerate(recall.hits, 1))
        if recall.hits
        else Html(
            '<p class="muted nothing">Nothing relevant enough (tick "weak matches too" to see the '
            "closest).</p>"
        )
    )
    assoc = (
        h(
            '<h3>Association hits <small class="muted">reached through the query\'s concepts and their '
            "links, not by the text search</small></h3>"
            '<div class="associations">{items}</div>',
            items=join(_hit(i, hit, recall.query) for i, hit in enumerate(recall.associations, 1)),
        )
        if recall.associations
        else Html("")
    )
    return h(
        '<section class="page" id="search-page"><h2>Search</h2>{form}'
        '<p class="concepts-line">query concepts: {qc} · expanded through links: {ec}</p>'
        '<div class="split"><div class="results"><h3>Hits</h3><div class="hits">{hits}</div>{assoc}</div>'
        '<aside class="prompt-side"><h3>Prompt block</h3><p class="muted">what the chatbot gets '
        '(<code>Recall.to_prompt()</code>)</p><pre class="prompt">{prompt}</pre></aside></div></section>',
        form=_form(form),
        qc=_weights(recall.query_concepts),
        ec=_weights(recall.expanded_concepts),
        hits=hits,
        assoc=assoc,
        prompt=prompt or "",
    )
