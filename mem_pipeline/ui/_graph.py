"""The Concepts page: a user's concept links drawn as an SVG graph (edge width by strength,
colour by feedback, dashed when a search would not follow it), the links as a table, and, for a
chosen concept, its links and its facts.

The layout is a small force-directed one (Fruchterman-Reingold), deterministic for the same
links, computed here in Python so the browser runs no layout code. The graph shows the
``MAX_NODES`` concepts with the most facts (and the chosen one with its neighbours); the table
lists every link."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..links import LinkView
from ..models import StoredFact
from ._html import Html, attrs, date, esc, h, join, route

__all__ = ["MAX_NODES", "concepts_page", "layout"]

MAX_NODES = 40
_W, _H = 900, 560


def _force(n: int, springs: Sequence[tuple[int, int, float]], iterations: int) -> list[list[float]]:
    """Fruchterman-Reingold for one connected group: ``n`` nodes start on a circle (in the
    order given), linked ones attract (more when stronger), all repel."""
    if n == 1:
        return [[0.0, 0.0]]
    pos = [[math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)] for i in range(n)]
    k = 1.0 / math.sqrt(n)
    temp = 0.3
    for _ in range(iterations):
        disp = [[0.0, 0.0] for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                dx, dy = pos[i][0] - pos[j][0], pos[i][1] - pos[j][1]
                f = k * k / max(dx * dx + dy * dy, 1e-6)  # repulsion k^2 / d along (dx, dy) / d
                disp[i][0] += dx * f
                disp[i][1] += dy * f
                disp[j][0] -= dx * f
                disp[j][1] -= dy * f
        for i, j, w in springs:
            dx, dy = pos[i][0] - pos[j][0], pos[i][1] - pos[j][1]
            f = math.hypot(dx, dy) * w / k  # attraction d^2 / k along (dx, dy) / d
            disp[i][0] -= dx * f
            disp[i][1] -= dy * f
            disp[j][0] += dx * f
            disp[j][1] += dy * f
        for i in range(n):
            d = max(math.hypot(*disp[i]), 1e-9)
            step = min(d, temp)
            pos[i][0] += disp[i][0] / d * step
            pos[i][1] += disp[i][1] / d * step
        temp *= 0.98
    return pos


def layout(
    nodes: Sequence[str], edges: Sequence[tuple[str, str, float]], iterations: int = 200
) -> dict[str, tuple[float, float]]:
    """Positions in the ``_W`` x ``_H`` box, the same for the same input. Each connected group
    is laid out on its own (:func:`_force`), then the groups are packed in rows, the larger
    ones first and given more room, so separate groups neither overlap nor fly apart."""
    if not nodes:
        return {}
    index = {name: i for i, name in enumerate(nodes)}
    parent = list(range(len(nodes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, _ in edges:
        if a in index and b in index:
            parent[root(index[a])] = root(index[b])
    groups: dict[int, list[str]] = {}
    for name in nodes:
        groups.setdefault(root(index[name]), []).append(name)
    ordered = sorted(groups.values(), key=lambda g: (-len(g), g[0]))
    placed: list[tuple[list[str], list[list[float]], float]] = []
    for group in ordered:
        local = {name: i for i, name in enumerate(group)}
        springs = [(local[a], local[b], 0.5 + s) for a, b, s in edges if a in local and b in local and a != b]
        pos = _force(len(group), springs, iterations)
        xs, ys = [p[0] for p in pos], [p[1] for p in pos]
        span = max(max(xs) - min(xs), max(ys) - min(ys)) or 1.0
        unit = [[(p[0] - min(xs)) / span, (p[1] - min(ys)) / span] for p in pos]
        placed.append((group, unit, math.sqrt(len(group))))  # a group's side grows with sqrt(size)
    # shelf packing: rows of groups across a strip as wide as the box is, in group-size units
    width = max(sum(size for _, _, size in placed) / 2.2, max((size for _, _, size in placed), default=1.0))
    x = y = row = 0.0
    boxes = []
    for group, unit, size in placed:
        if x > 0 and x + size > width:
            x, y, row = 0.0, y + row, 0.0
        boxes.append((group, unit, size, x, y))
        x += size
        row = max(row, size)
    raw: dict[str, tuple[float, float]] = {}
    for group, unit, size, gx, gy in boxes:
        pad = 0.15 * size if len(group) > 1 else 0.5 * size
        inner = size - 2 * pad if len(group) > 1 else 0.0
        for name, (ux, uy) in zip(group, unit):
            raw[name] = (gx + pad + ux * inner, gy + pad + uy * inner)
    # stretch to fill the box (each axis on its own: room for labels matters more than aspect)
    xs, ys = [p[0] for p in raw.values()], [p[1] for p in raw.values()]
    margin_x, margin_y = 80.0, 45.0
    sx = (_W - 2 * margin_x) / ((max(xs) - min(xs)) or 1.0)
    sy = (_H - 2 * margin_y) / ((max(ys) - min(ys)) or 1.0)
    out = {
        name: (
            margin_x + (x - min(xs)) * sx if max(xs) > min(xs) else _W / 2,
            margin_y + (y - min(ys)) * sy if max(ys) > min(ys) else _H / 2,
        )
        for name, (x, y) in raw.items()
    }
    return out


def _fb_class(feedback: float) -> str:
    return "fb-pos" if feedback > 0 else "fb-neg" if feedback < 0 else "fb-none"


def _chosen_nodes(counts: Mapping[str, float], links: Sequence[LinkView], chosen: str | None) -> list[str]:
    linked = {x for v in links for x in (v.a, v.b)}
    ranked = sorted((c for c in counts if c in linked), key=lambda c: (-counts[c], c))
    nodes = ranked[:MAX_NODES]
    if chosen is not None and chosen in counts:
        near = [v.b if v.a == chosen else v.a for v in links if chosen in (v.a, v.b)]
        for c in [chosen, *near]:
            if c not in nodes:
                nodes.append(c)
    return sorted(nodes)


def _svg(counts: Mapping[str, float], links: Sequence[LinkView], chosen: str | None) -> Html:
    nodes = _chosen_nodes(counts, links, chosen)
    shown = set(nodes)
    drawn = [v for v in links if v.a in shown and v.b in shown]
    pos = layout(nodes, [(v.a, v.b, v.strength) for v in drawn])
    lines = []
    for v in drawn:
        (x1, y1), (x2, y2) = pos[v.a], pos[v.b]
        cls = f"edge {_fb_class(v.feedback)}" + ("" if v.followable else " weak")
        if chosen in (v.a, v.b):
            cls += " near"
        lines.append(
            h(
                "<line{a}><title>{t}</title></line>",
                a=attrs(
                    class_=cls,
                    x1=f"{x1:.1f}",
                    y1=f"{y1:.1f}",
                    x2=f"{x2:.1f}",
                    y2=f"{y2:.1f}",
                    stroke_width=f"{1 + 9 * max(0.0, min(1.0, v.strength)):.1f}",
                    data_a=v.a,
                    data_b=v.b,
                ),
                t=f"{v.a} — {v.b}: strength {v.strength:.2f}, seen together {v.count:g}x, "
                f"feedback {v.feedback:+.2f}" + ("" if v.followable else " (not followed by search)"),
            )
        )
    top = max((counts.get(c, 1.0) for c in nodes), default=1.0)
    circles = []
    for c in nodes:
        x, y = pos[c]
        r = 6 + 12 * math.sqrt(counts.get(c, 1.0) / top)
        circles.append(
            h(
                '<a href="{href}" class="node{sel}" data-concept="{c}"><circle cx="{x}" cy="{y}" r="{r}">'
                "</circle>"
                '<text x="{x}" y="{ty}">{c}</text><title>{c}: {n} facts</title></a>',
                href=route("concepts", c=c),
                sel=" chosen" if c == chosen else "",
                c=c,
                x=f"{x:.1f}",
                y=f"{y:.1f}",
                ty=f"{y - r - 4:.1f}",
                r=f"{r:.1f}",
                n=f"{counts.get(c, 0):g}",
            )
        )
    more = len([c for c in counts if any(c in (v.a, v.b) for v in links)]) - len(nodes)
    note = (
        h('<p class="muted">{n} more linked concepts are in the table below.</p>', n=more)
        if more > 0
        else Html("")
    )
    return h(
        '<svg class="graph" viewBox="0 0 {w} {hh}" role="img" aria-label="concept links">'
        '<g class="edges">{lines}</g><g class="nodes">{circles}</g></svg>{note}',
        w=_W,
        hh=_H,
        lines=join(lines),
        circles=join(circles),
        note=note,
    )


def _links_table(links: Sequence[LinkView], limit: int = 300) -> Html:
    rows = join(
        h(
            '<tr class="{cls}"><td><a href="{ha}">{a}</a></td><td><a href="{hb}">{b}</a></td><td>{s}</td>'
            "<td>{n}</td>"
            '<td class="{fbc}">{fb}</td><td>{f}</td><td>{seen}</td></tr>',
            cls="" if v.followable else "weak",
            ha=route("concepts", c=v.a),
            a=v.a,
            hb=route("concepts", c=v.b),
            b=v.b,
            s=f"{v.strength:.2f}",
            n=f"{v.count:g}",
            fbc=_fb_class(v.feedback),
            fb=f"{v.feedback:+.2f}",
            f="yes" if v.followable else "no",
            seen=date(v.last_seen, time=False),
        )
        for v in links[:limit]
    )
    more = (
        h('<p class="muted">and {n} weaker links.</p>', n=len(links) - limit)
        if len(links) > limit
        else Html("")
    )
    return h(
        '<table class="links"><thead><tr><th>concept</th><th>concept</th><th>strength</th>'
        "<th>seen together</th>"
        "<th>feedback</th><th>followed by search</th><th>last seen</th></tr></thead><tbody>{rows}</tbody>"
        "</table>{more}",
        rows=rows,
        more=more,
    )


def concepts_page(
    counts: Mapping[str, float],
    links: Sequence[LinkView],
    chosen: str | None,
    facts: Sequence[StoredFact],
) -> Html:
    """The graph, the chosen concept's facts and links, and every link as a table."""
    legend = Html(
        '<p class="legend">edge width: link strength · <span class="fb-pos">green</span>: helped '
        '(positive feedback) · <span class="fb-neg">red</span>: did not help · dashed: too weak or too '
        "rare for a search to follow · click a concept to see its facts</p>"
    )
    if not links:
        body = Html(
            '<p class="muted">No concept links yet: two concepts are linked once facts carry both.</p>'
        )
    else:
        body = h("{legend}{svg}", legend=legend, svg=_svg(counts, links, chosen))
    focus = Html("")
    if chosen is not None:
        mine = [v for v in links if chosen in (v.a, v.b)]
        items = (
            join(
                h(
                    '<li><a href="{href}">{t}</a> <span class="muted">{kind} · {at}</span></li>',
                    href=route("fact", f.id),
                    t=f.text,
                    kind=f.kind,
                    at=date(f.created_at, time=False),
                )
                for f in facts
            )
            if facts
            else Html('<li class="muted">no current facts carry it</li>')
        )
        focus = h(
            '<div class="focus" id="concept-focus"><h3>Concept “{c}” <small class="muted">{n} facts</small>'
            "</h3>"
            '<ul class="concept-facts">{items}</ul>{more}<h4>Its links</h4>{links}</div>',
            c=chosen,
            n=f"{counts.get(chosen, 0):g}",
            items=items,
            more=h('<p><a href="{href}">all its memories →</a></p>', href=route("memories", concept=chosen)),
            links=_links_table(mine) if mine else Html('<p class="muted">none</p>'),
        )
    return h(
        '<section class="page" id="concepts-page"><h2>Concepts</h2>{body}{focus}'
        '<h3>All links <small class="muted">{n}</small></h3>{table}</section>',
        body=body,
        focus=focus,
        n=len(links),
        table=_links_table(links) if links else esc("none yet"),
    )
