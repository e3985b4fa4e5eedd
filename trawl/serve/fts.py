"""The full-text index of the URLs (SQLite FTS5), in a side file next to the store.

In a side file, not in the store: the store stays as the crawls wrote it (served
read-only, its write speed untouched: FTS5 triggers on ``urls`` would cost each
crawl batch its tokenizing), and deleting the side file loses nothing. It is
brought up to date at each ``trawl serve`` start: the URLs the store added since
(``added_at`` after the last one indexed) are tokenized, so a restart costs one
scan of ``urls`` (8 s on 5,000,000 URLs at load 20), the first build the whole
tokenizing (58 s there, a 776 MB side file: ``bench/bench_serve.py``). URLs a crawl adds while the
server runs are found by the query box at once, by the words box after a restart.

Each URL's row id in the index is a 64-bit hash of the URL (:func:`url_id`), so
a page checks the URLs its query selects against the index one by one (a row id
lookup each) and stops at its 100th: "words in one host" read every URL holding
the words instead (4.5 s for ``admin`` among 5,000,000 URLs). Two URLs of one
hash (about one chance in a million on 5,000,000 URLs) keep the later one. The
URLs go in in row id order: in the store's order, the 5,000,000 took 455 s.

The tokenizer is FTS5's ``unicode61``: a URL's words are its runs of letters and
digits, so ``admin`` finds ``/admin/login.php`` and ``login php`` finds it too.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from trawl.serve.store import read_only

#: The side file's schema: the index and what it has read of the store.
SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS url_words USING fts5(url, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS indexed (store_id TEXT, added_at REAL NOT NULL);
"""
#: The side file's layout (``PRAGMA user_version``): a file of another layout is made anew.
LAYOUT = 2
#: The schema name the side file is attached under in every served connection.
ATTACHED = "fts"


def url_id(url: str) -> int:
    """The URL's row id in the index: 64 bits of its BLAKE2b hash, signed as SQLite's integers are."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big", signed=True)


def side_file(store: Path) -> Path:
    return store.with_name(store.name + "-fts.db")


@dataclass
class FtsUpdate:
    file: Path | None
    added: int
    seconds: float
    problem: str = ""


def _store_id(con: sqlite3.Connection) -> str:
    """The first run's id: a store replaced by another at the same path gets a fresh index."""
    row = con.execute("SELECT run_id FROM store.runs ORDER BY run LIMIT 1").fetchone()
    return row[0] if row else ""


def update(store: Path) -> FtsUpdate:
    """Index the URLs added since the last update (all of them the first time)."""
    file = side_file(store)
    started = time.perf_counter()
    try:
        con = sqlite3.connect(f"file:{quote(str(file))}", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return FtsUpdate(None, 0, 0.0, f"cannot write {str(file)!r}: {exc}")
    try:
        if con.execute("PRAGMA user_version").fetchone()[0] != LAYOUT:
            for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                con.execute(f'DROP TABLE IF EXISTS "{name}"')
            con.execute(f"PRAGMA user_version = {LAYOUT}")
        con.executescript(SCHEMA)
        con.create_function("trawl_url_id", 1, url_id, deterministic=True)
        con.execute("ATTACH ? AS store", (read_only(store),))
        store_id = _store_id(con)
        row = con.execute("SELECT store_id, added_at FROM indexed").fetchone()
        if row is not None and row[0] != store_id:
            con.execute("DELETE FROM url_words")
            row = None
        since = row[1] if row else -1.0
        newest = con.execute("SELECT max(added_at) FROM store.urls").fetchone()[0]
        added = 0
        if newest is not None and newest > since:
            with con:
                added = con.execute(
                    "INSERT OR REPLACE INTO url_words (rowid, url) SELECT trawl_url_id(url), url"
                    " FROM store.urls WHERE added_at > ? AND added_at <= ? ORDER BY 1",
                    (since, newest),
                ).rowcount
                con.execute("DELETE FROM indexed")
                con.execute("INSERT INTO indexed VALUES (?, ?)", (store_id, newest))
        return FtsUpdate(file, added, time.perf_counter() - started)
    except sqlite3.Error as exc:
        return FtsUpdate(None, 0, 0.0, f"cannot index {str(file)!r}: {exc}")
    finally:
        con.close()


def attach(con: sqlite3.Connection, file: Path | None) -> None:
    """Attach the side file read-only to a served connection (none: the words box is off)."""
    con.create_function("trawl_url_id", 1, url_id, deterministic=True)
    if file is not None:
        con.execute(f"ATTACH ? AS {ATTACHED}", (read_only(file),))


def match_expression(words: str) -> str:
    """The words box as an FTS5 query: each word a quoted token, all of them required.

    Quoted, because FTS5's own syntax (``AND``, ``*``, ``:``, ``-``) turns a URL
    fragment typed as it is into a syntax error.
    """
    return " ".join('"' + word.replace('"', '""') + '"' for word in words.split())
