"""trawl's datasette plugin: the served connections' set-up and the pages trawl adds.

Registered in-process (``pm.register`` in :mod:`.app`): no package to install,
and datasette started by anything else never loads it. Its settings come from
the metadata's ``plugins.trawl`` block (:func:`config`), which :mod:`.app` writes.

* every connection to the store gets the SQL functions of trawl's query translation
  (``trawl_url()``...), an empty stand-in table for each searchable record kind the
  store has none of, and the full-text side file attached read-only;
* ``/trawl/search``: the query box, the words box, facets, a page of URLs (or of their
  patterns, ``collapse=params|ids|all`` as ``trawl search --collapse``), the downloads;
* ``/trawl/charts``: the charts of the same query;
* ``/trawl/export.txt|csv|json``: the downloads, streamed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import AsgiStream, Response

from trawl.search import QueryError
from trawl.serve import charts, exports, finder
from trawl.serve.fts import attach
from trawl.serve.store import read_only
from trawl.serve.summary import Summary
from trawl.stores.sqlite.query import ensure_kind_tables, register_sql_functions

NAME = "trawl"


def config(datasette: Any) -> dict[str, Any]:
    return datasette.plugin_config(NAME) or {}


def prepare(con: sqlite3.Connection, fts: str | None) -> None:
    """What trawl's SQL needs on a connection to the store."""
    register_sql_functions(con)
    ensure_kind_tables(con)
    attach(con, Path(fts) if fts else None)


@hookimpl
def prepare_connection(conn: sqlite3.Connection, database: str, datasette: Any) -> None:
    settings = config(datasette)
    if database == settings.get("database"):
        prepare(conn, settings.get("fts"))


#: Each served datasette's background count of the unfiltered page (:mod:`.summary`).
_summaries: dict[int, Summary] = {}


def _connect(settings: dict[str, Any]) -> sqlite3.Connection:
    """A read-only connection of trawl's own to the store (downloads, the background count)."""
    con = sqlite3.connect(read_only(settings["store"]), uri=True, check_same_thread=False)
    prepare(con, settings.get("fts"))
    return con


@hookimpl
def startup(datasette: Any) -> None:
    settings = config(datasette)
    if settings.get("store"):
        fts = settings.get("fts")
        _summaries[id(datasette)] = Summary(lambda: _connect(settings), Path(fts) if fts else None)


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]]:
    return [
        {"href": datasette.urls.path("/trawl/search"), "label": "Search URLs"},
        {"href": datasette.urls.path("/trawl/charts"), "label": "Charts"},
    ]


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return [
        (r"^/trawl/search$", search_page),
        (r"^/trawl/charts$", charts_page),
        (r"^/trawl/export\.(?P<format>txt|csv|json)$", export),
    ]


def _form(request: Any) -> tuple[str, str]:
    return request.args.get("q", "").strip(), request.args.get("words", "").strip()


def _modes() -> tuple[str, ...]:
    from trawl.search.collapse import MODES

    return MODES


def _collapse(request: Any) -> str:
    """The collapse mode asked for ('' for none); a mode ``trawl search`` refuses is a QueryError."""
    mode = request.args.get("collapse", "").strip()
    if mode and mode not in _modes():
        raise QueryError(f"collapse takes one of {', '.join(_modes())}, not {mode!r}")
    return mode


def _link(path: str, **args: str) -> str:
    given = {k: v for k, v in args.items() if v}
    return path + ("?" + urlencode(given) if given else "")


def _with(query: str, clause: str) -> str:
    return clause if query in ("", "*") else f"{query} {clause}"


async def _render(datasette: Any, request: Any, template: str, context: dict, status: int = 200) -> Response:
    settings = config(datasette)
    q, words = _form(request)
    collapse = request.args.get("collapse", "")
    context = {
        "q": q,
        "words": words,
        "collapse": collapse,
        "modes": _modes(),
        "fts": bool(settings.get("fts")),
        "database": settings.get("database"),
        "exports": {
            name: _link(f"/trawl/export.{name}", q=q, words=words, collapse=collapse)
            for name in exports.FORMATS
        },
        "charts_link": _link("/trawl/charts", q=q, words=words),
        "search_link": _link("/trawl/search", q=q, words=words),
        **context,
    }
    html = await datasette.render_template(template, context, request=request)
    return Response.html(html, status=status)


async def search_page(request: Any, datasette: Any) -> Response:
    settings = config(datasette)
    q, words = _form(request)
    after = request.args.get("after", "")
    try:
        where = finder.where_of(q, words, fts=bool(settings.get("fts")))
        collapse = _collapse(request)
    except QueryError as exc:
        return await _render(datasette, request, "trawl_search.html", {"error": str(exc)}, 400)
    db = datasette.get_database(settings["database"])

    summary = _summaries.get(id(datasette))
    everything = summary is not None and q in ("", "*") and not words
    counted = summary.get() if everything else None
    counting = everything and counted is None and summary.counting

    def work(con: sqlite3.Connection) -> tuple:
        rows = [] if collapse else finder.page(con, where, after)
        patterns = finder.patterns(con, where, collapse) if collapse else None
        if counted is not None:
            return counted.total, rows, patterns, counted.facets
        if counting:
            return None, rows, patterns, []
        return finder.count(con, where), rows, patterns, finder.facets(con, where)

    total, rows, patterns, facets = await db.execute_fn(work)
    facet_links = [
        (facet, [(value, n, _link("/trawl/search", q=_with(q, facet.clause(value)), words=words,
                                  collapse=collapse)) for value, n in facet.values])
        for facet in facets
    ]  # fmt: skip
    more = (
        _link("/trawl/search", q=q, words=words, after=rows[-1].url) if len(rows) == finder.PAGE_SIZE else ""
    )
    return await _render(
        datasette,
        request,
        "trawl_search.html",
        {
            "total": total,
            "rows": rows,
            "patterns": patterns,
            "facets": facet_links,
            "more": more,
            "day": finder.day,
            "counted_at": counted.at if counted is not None else "",
            "counting": counting,
        },
    )


async def charts_page(request: Any, datasette: Any) -> Response:
    settings = config(datasette)
    q, words = _form(request)
    try:
        where = finder.where_of(q, words, fts=bool(settings.get("fts")))
    except QueryError as exc:
        return await _render(datasette, request, "trawl_charts.html", {"error": str(exc)}, 400)
    db = datasette.get_database(settings["database"])
    summary = _summaries.get(id(datasette))
    counted = summary.get() if summary is not None and q in ("", "*") and not words else None
    if counted is not None and counted.charts:
        drawn = counted.charts
    else:
        drawn = await db.execute_fn(lambda con: charts.charts(con, where))
    context = {"charts": drawn, "counted_at": counted.at if counted is not None and counted.charts else ""}
    return await _render(datasette, request, "trawl_charts.html", context)


async def export(request: Any, datasette: Any) -> Any:
    settings = config(datasette)
    q, words = _form(request)
    fmt, content_type, suffix = exports.FORMATS[request.url_vars["format"]]
    try:
        where = finder.where_of(q, words, fts=bool(settings.get("fts")))
        collapse = _collapse(request)
    except QueryError as exc:
        return Response.text(f"{exc}\n", status=400)
    store = Path(settings["store"])

    async def send(writer: Any) -> None:
        await exports.stream(lambda: _connect(settings), where, fmt, collapse, writer)

    disposition = f'attachment; filename="{exports.filename(store, suffix, collapse)}"'
    return AsgiStream(send, headers={"content-disposition": disposition}, content_type=content_type)
