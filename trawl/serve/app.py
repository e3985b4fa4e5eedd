"""The datasette instance ``trawl serve`` runs, and the server on its socket.

The socket is bound here, before datasette starts, so that a port in use is one
line (not uvicorn's traceback) and ``--port 0`` gets a free port whose number
the ready line prints. uvicorn then serves that socket (``fd=``).
"""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

from trawl.errors import StoreError
from trawl.serve import plugin
from trawl.serve.views import available

HERE = Path(__file__).parent
#: datasette's settings for a store of millions of URLs: a canned query may take 5 s (the hosts
#: view reads every URL), no facet suggestions (each is a query per column on every table page).
SETTINGS = {"sql_time_limit_ms": 5000, "suggest_facets": False, "default_page_size": 100}


def metadata(store: Path, fts: Path | None, tables: set[str]) -> dict[str, Any]:
    database = store.stem
    queries = {
        view.name: {"title": view.title, "description": view.description, "sql": view.sql}
        for view in available(tables)
    }
    return {
        "title": f"trawl: {store.name}",
        "description_html": (
            '<a href="/trawl/search">Search URLs</a> (trawl\'s query language, facets, downloads) · '
            '<a href="/trawl/charts">Charts</a> · the views: '
            + ", ".join(f'<a href="/{database}/{name}">{q["title"]}</a>' for name, q in queries.items())
        ),
        "plugins": {
            plugin.NAME: {"database": database, "store": str(store), "fts": str(fts) if fts else None}
        },
        "databases": {database: {"queries": queries, "tables": {"urls": {"sort": "url"}}}},
    }


def build(store: Path, fts: Path | None, tables: set[str]) -> Any:
    """A datasette serving ``store`` read-only (``mode=ro``: it never opens its write connection)."""
    from datasette.app import Datasette
    from datasette.plugins import pm

    if not pm.is_registered(plugin):
        pm.register(plugin, name=plugin.NAME)
    datasette = Datasette(
        files=[],
        metadata=metadata(store, fts, tables),
        template_dir=str(HERE / "templates"),
        static_mounts=[("trawl-static", str(HERE / "static"))],
        settings=SETTINGS,
    )
    datasette.add_database(read_only_database(datasette, store), name=store.stem)
    return datasette


def read_only_database(datasette: Any, store: Path) -> Any:
    """datasette's database of ``store``, opened through a ``file:`` URI with the path quoted.

    datasette 0.65 writes the path into the URI as it is: in a store under
    ``runs?2026/`` SQLite read ``?2026/...`` as the URI's query and opened another file.
    """
    from urllib.parse import quote

    from datasette.database import Database

    class QuotedPathDatabase(Database):  # type: ignore[misc]
        def connect(self, write: bool = False) -> sqlite3.Connection:
            if write:
                raise StoreError("trawl serve never writes the store")
            conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, check_same_thread=False)
            self._all_file_connections.append(conn)
            return conn

    return QuotedPathDatabase(datasette, path=str(store), is_mutable=True)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; one line if it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise StoreError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise StoreError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def run(datasette: Any, sock: socket.socket) -> None:
    """Serve until Ctrl-C or SIGTERM (uvicorn's handlers end it cleanly)."""
    import asyncio

    import uvicorn

    asyncio.run(datasette.invoke_startup())
    config = uvicorn.Config(
        datasette.app(), fd=sock.fileno(), log_level="warning", lifespan="on", access_log=False
    )
    uvicorn.Server(config).run()
