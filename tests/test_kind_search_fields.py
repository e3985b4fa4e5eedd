"""A record kind declared by a plugin is searchable by its ``SEARCH_FIELDS`` alone.

The plugin in ``tests/plugins/trawl-notes`` declares a ``note`` kind keyed by
``url`` with two search fields (``label``, and ``note_score`` stored as ``score``);
nothing in ``trawl/search/`` or a store's ``query.py`` names it. With the plugin
enabled the SQLite store joins ``note_records`` to the URLs; a store without that
table matches nothing; the stores that do not join other kinds refuse the fields
in one line that names the kind.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, run_scrapy
from tests.helpers.browser import served
from tests.helpers.probe import seed
from trawl.errors import TrawlUsageError
from trawl.records.batches import Batch
from trawl.search import Field, QueryError, parse

PLUGIN_DIR = Path(__file__).parent / "plugins" / "trawl-notes"
PLUGIN = ("-s", 'TRAWL_PLUGINS={"trawl_notes": true}')
URLS = [
    "https://example.com/",
    "https://example.com/admin",
    "https://example.com/login",
    "https://b.example/x",
]
NOTES = [
    ("https://example.com/admin", "Admin", 90),
    ("https://example.com/login", "login", 40),
    ("https://b.example/x", "admin", 10),
]


def plugin_env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGIN_DIR), os.environ.get("PYTHONPATH")]))}


def import_plugin() -> None:
    """The plugin in this process, as the plugin manager imports it (NoteBatch declares its fields)."""
    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        importlib.import_module("trawl_notes")
    finally:
        sys.path.remove(str(PLUGIN_DIR))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two stores of the same URLs: one with notes (written as the store keeps a kind: a table of its
    declared columns, one row per key), one that never kept any."""
    folder = tmp_path_factory.mktemp("notes")
    seed(folder / "notes.db", URLS)
    seed(folder / "plain.db", URLS)
    with sqlite3.connect(folder / "notes.db") as con:
        con.execute("CREATE TABLE note_records (url TEXT PRIMARY KEY, label TEXT, score INTEGER)")
        con.executemany("INSERT INTO note_records VALUES (?, ?, ?)", NOTES)
    return folder


def search(folder: Path, db: str, *args: str, plugin: bool = True) -> CrawlResult:
    store = ("-s", f"STORE_URI=sqlite:///{folder / db}")
    return run_scrapy(folder / "cmd", "search", *args, *store, *(PLUGIN if plugin else ()), env=plugin_env())


def test_the_sqlite_store_joins_a_plugin_kinds_fields(stores: Path) -> None:
    result = search(stores, "notes.db", "label:admin AND host:example.com")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["https://example.com/admin"]  # lower=True: "Admin" is "admin"
    ranged = search(stores, "notes.db", "note_score:[30 TO 100] AND NOT label:login")
    assert ranged.stdout.split() == ["https://example.com/admin"], ranged.stderr[-2000:]
    unnoted = search(stores, "notes.db", "NOT label:*")
    assert unnoted.stdout.split() == ["https://example.com/"], unnoted.stderr[-2000:]


def test_a_store_that_never_kept_the_kind_matches_nothing(stores: Path) -> None:
    result = search(stores, "plain.db", "label:admin OR note_score:>0", "--count")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0"
    assert_no_traceback(result)


def test_without_the_plugin_the_field_is_unknown(stores: Path) -> None:
    result = search(stores, "notes.db", "label:admin", plugin=False)
    assert result.returncode != 0
    assert "unknown field 'label'" in result.stderr
    assert_no_traceback(result)


@pytest.mark.parametrize(
    ("module", "translate", "store"),
    [
        ("trawl.stores.postgresql.query", "to_sql", "the PostgreSQL store"),
        ("trawl.stores.elasticsearch.query", "to_es", "the Elasticsearch store"),
    ],
)
def test_the_stores_that_do_not_join_kinds_refuse_the_fields_in_one_line(
    module: str, translate: str, store: str
) -> None:
    import_plugin()
    with pytest.raises(QueryError) as refused:
        getattr(importlib.import_module(module), translate)(parse("ext:php AND note_score:>50"))
    assert str(refused.value) == (
        f"bad query: note_score: is a field of the note records, which {store} does not search"
        " (use a SQLite store)"
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"host": Field("host", "keyword")}, "declares search field 'host', a URL field's name"),
        ({"tag": Field("tag", "keyword", column="tag; DROP TABLE urls")}, "names are [a-z][a-z0-9_]*"),
        ({"label": Field("label", "keyword")}, "'label' is declared by kinds 'note' and 'other'"),
    ],
)
def test_a_bad_search_field_declaration_is_one_line(fields: dict[str, Field], says: str) -> None:
    """Checked when the batch type is defined: a plugin's mistake stops the plugin's import."""
    import_plugin()
    with pytest.raises(TrawlUsageError) as refused:
        type("OtherBatch", (Batch,), {"__slots__": (), "kind": "other", "SEARCH_FIELDS": fields})
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_trawl_serve_searches_a_plugin_kinds_fields(stores: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search page's export is the same query on the same store (the plugin imported before it serves)."""
    monkeypatch.setenv("PYTHONPATH", plugin_env()["PYTHONPATH"])
    with served(stores, "--store", f"sqlite:///{stores / 'notes.db'}", *PLUGIN) as running:
        url = running.url + "trawl/export.txt?" + urlencode({"q": "label:admin OR note_score:>50"})
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.read().decode().split() == ["https://b.example/x", "https://example.com/admin"]
