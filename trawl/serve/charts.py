"""The charts page's three charts, drawn as SVG on the server.

SVG from Python rather than a JavaScript chart library: nothing to vendor, no
CDN, the page works without JavaScript, and a test reads the drawing in the
page itself; the three charts are 200 lines of bars and lines, which a library
of 40-200 KB would not shorten. Each chart reads the URLs a query selects (the
search page's query and words), under :data:`CHART_MS`; those of every URL are drawn
once in the background with the unfiltered page's facets (:mod:`.summary`): on 5,000,000
URLs two of the three take longer than their budget.

* URLs first seen per month, one line per source (a URL several sources found
  counts for each);
* captures per year: the captures of the URLs first seen in each year (the store
  keeps a URL's capture count and its first and last capture, not each capture);
* top hosts: the hosts with most URLs.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass
from html import escape

from trawl.serve.finder import Where, time_limit

#: Each chart's time budget: a chart of 5,000,000 URLs is one scan of the ``first_seen`` index.
CHART_MS = 5000
WIDTH, HEIGHT, MARGIN = 720, 260, 44
#: Colours of the lines, one per source (cycled).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")  # fmt: skip
TOP_HOSTS = 15


@dataclass
class Chart:
    name: str
    title: str
    svg: str
    timed_out: bool = False


def _run(con: sqlite3.Connection, sql: str, params: list, ms: int | None) -> list[tuple] | None:
    try:
        with time_limit(con, ms):
            return con.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" not in str(exc):
            raise
        return None


def first_seen_by_month(con: sqlite3.Connection, where: Where, ms: int | None = CHART_MS) -> Chart:
    title = "URLs first seen per month, by source"
    rows = _run(
        con,
        "SELECT substr(first_seen, 1, 6) AS month, sources, count(*) FROM urls"
        f" WHERE ({where.sql}) AND first_seen IS NOT NULL GROUP BY month, sources",
        where.params,
        ms,
    )
    if rows is None:
        return Chart("first-seen", title, "", timed_out=True)
    series: dict[str, Counter[str]] = defaultdict(Counter)
    for month, sources, n in rows:
        for source in filter(None, str(sources).split(",")):
            series[source][_month(month)] += n
    return Chart("first-seen", title, lines(series))


def captures_by_year(con: sqlite3.Connection, where: Where, ms: int | None = CHART_MS) -> Chart:
    title = "Captures per year (of the URLs first seen that year)"
    rows = _run(
        con,
        "SELECT substr(first_seen, 1, 4) AS year, sum(captures) FROM urls"
        f" WHERE ({where.sql}) AND first_seen IS NOT NULL GROUP BY year ORDER BY year",
        where.params,
        ms,
    )
    if rows is None:
        return Chart("captures", title, "", timed_out=True)
    return Chart("captures", title, bars([(str(year), int(n or 0)) for year, n in rows]))


def top_hosts(con: sqlite3.Connection, where: Where, ms: int | None = CHART_MS) -> Chart:
    title = f"Top {TOP_HOSTS} hosts by URLs"
    rows = _run(
        con,
        f"SELECT host, count(*) AS n FROM urls WHERE {where.sql} GROUP BY host ORDER BY n DESC, host LIMIT ?",
        [*where.params, TOP_HOSTS],
        ms,
    )
    if rows is None:
        return Chart("hosts", title, "", timed_out=True)
    return Chart("hosts", title, horizontal_bars([(str(h), int(n)) for h, n in rows]))


def charts(con: sqlite3.Connection, where: Where, ms: int | None = CHART_MS) -> list[Chart]:
    """The three charts of the URLs ``where`` selects, each within ``ms`` (``None``: no limit)."""
    return [first_seen_by_month(con, where, ms), captures_by_year(con, where, ms), top_hosts(con, where, ms)]


def _month(yyyymm: str) -> str:
    return f"{yyyymm[:4]}-{yyyymm[4:6]}" if len(yyyymm) == 6 else yyyymm


def _svg(body: str, height: int = HEIGHT, label: str = "") -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trawl-chart" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}"'
        f' font-family="sans-serif" font-size="11">{body}</svg>'
    )


def _empty() -> str:
    return _svg(f'<text x="{MARGIN}" y="{HEIGHT // 2}">no data</text>', label="no data")


def _axis(top: int, labels: list[str]) -> str:
    """The y axis' maximum and the x labels (first, middle, last)."""
    bottom = HEIGHT - MARGIN
    parts = [
        f'<line x1="{MARGIN}" y1="{bottom}" x2="{WIDTH - 10}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{MARGIN}" y1="10" x2="{MARGIN}" y2="{bottom}" stroke="#999"/>',
        f'<text x="{MARGIN - 4}" y="16" text-anchor="end">{top:,}</text>',
        f'<text x="{MARGIN - 4}" y="{bottom}" text-anchor="end">0</text>',
    ]
    if labels:
        span = WIDTH - 10 - MARGIN
        picks = sorted({0, len(labels) // 2, len(labels) - 1})
        for i in picks:
            x = MARGIN + (span * (i + 0.5) / len(labels))
            parts.append(
                f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(labels[i])}</text>'
            )
    return "".join(parts)


def lines(series: dict[str, Counter[str]]) -> str:
    """One polyline per series over the union of their x values (sorted)."""
    xs = sorted({x for counts in series.values() for x in counts})
    if not xs:
        return _empty()
    top = max(max(counts.values()) for counts in series.values())
    span, bottom, height = WIDTH - 10 - MARGIN, HEIGHT - MARGIN, HEIGHT - MARGIN - 10
    parts = [_axis(top, xs)]
    for n, name in enumerate(sorted(series)):
        colour = PALETTE[n % len(PALETTE)]
        points = " ".join(
            f"{MARGIN + span * (i + 0.5) / len(xs):.1f},{bottom - height * series[name][x] / top:.1f}"
            for i, x in enumerate(xs)
        )
        parts.append(
            f'<polyline class="series" data-series="{escape(name)}" fill="none" stroke="{colour}"'
            f' stroke-width="1.5" points="{points}"/>'
        )
        parts.append(
            f'<rect x="{MARGIN + 10 + 90 * n}" y="{HEIGHT - 14}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{MARGIN + 24 + 90 * n}" y="{HEIGHT - 5}">{escape(name)}</text>'
        )
    return _svg("".join(parts), label="lines")


def bars(values: list[tuple[str, int]]) -> str:
    if not values:
        return _empty()
    top = max(max(n for _, n in values), 1)
    span, bottom, height = WIDTH - 10 - MARGIN, HEIGHT - MARGIN, HEIGHT - MARGIN - 10
    step = span / len(values)
    parts = [_axis(top, [label for label, _ in values])]
    for i, (label, n) in enumerate(values):
        h = height * n / top
        parts.append(
            f'<rect class="bar" x="{MARGIN + step * i + 1:.1f}" y="{bottom - h:.1f}"'
            f' width="{max(step - 2, 1):.1f}" height="{h:.1f}" fill="{PALETTE[0]}">'
            f"<title>{escape(label)}: {n:,}</title></rect>"
        )
    return _svg("".join(parts), label="bars")


def horizontal_bars(values: list[tuple[str, int]]) -> str:
    if not values:
        return _empty()
    row, label_width = 18, 220
    height = row * len(values) + 10
    top = max(max(n for _, n in values), 1)
    span = WIDTH - label_width - 70
    parts = []
    for i, (label, n) in enumerate(values):
        y = 5 + row * i
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 12}" text-anchor="end">{escape(label[:36])}</text>'
            f'<rect class="bar" x="{label_width}" y="{y}" width="{max(span * n / top, 1):.1f}"'
            f' height="{row - 4}" fill="{PALETTE[0]}"><title>{escape(label)}: {n:,}</title></rect>'
            f'<text x="{label_width + span * n / top + 4:.1f}" y="{y + 12}">{n:,}</text>'
        )
    return _svg("".join(parts), height=height, label="bars")
