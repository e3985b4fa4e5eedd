"""``trawl crawl responses``: archived responses downloaded once each, indexed in the store.

Every test runs trawl as a user does against a local Wayback Machine
(:class:`tests.servers.ia_replay.FakeReplayServer`: CDX and ``id_`` replay on
one base URL) and checks what a user sees: the files in ``FILES_STORE``, the
``response_records`` of the store, the replay requests the server logged.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import run_scrapy
from tests.helpers.responses_archive import (
    CONFIG,
    MOVED,
    SHARED,
    archive,
    crawl_responses,
    store_urls,
)
from tests.servers.ia_replay import FakeReplayServer, content_digest


def files_in(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``: relative path -> bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def index(workdir: Path) -> list[tuple]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute(
            "SELECT url, timestamp, host, digest, status, mime, length, path, origin, served"
            " FROM response_records ORDER BY url, timestamp"
        ).fetchall()


def test_each_digest_is_downloaded_once_and_indexed(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        first = crawl_responses(workdir, server, "-a", "query=ext:js OR mime:application/json")
        replays = server.downloads()
    assert first.returncode == 0, first.stderr[-3000:]
    shared = content_digest(SHARED)
    # One download for the digest app.js and lib.js share; the 302 followed to the capture served.
    shared_fetches = [
        r for r in replays if r[1] in ("https://example.com/app.js", "https://example.com/lib.js")
    ]
    assert len(shared_fetches) == 1, replays
    assert sorted(r for r in replays if r not in shared_fetches) == [
        ("20190101000000", "https://example.com/old.js"),
        ("20200202000000", "https://example.com/moved.js"),
        ("20200202000500", "https://example.com/moved.js"),
        ("20200505000000", "https://www.example.com/config.json"),
    ]
    folder = workdir / "files"
    assert files_in(folder) == {
        f"example.com/{shared}.js": SHARED,
        f"example.com/{content_digest(MOVED)}.js": MOVED,
        f"www.example.com/{content_digest(CONFIG)}.json": CONFIG,
    }
    rows = index(workdir)
    # The row whose replay was downloaded says which capture was served; the other shares its file.
    assert sorted(row[-1] or "" for row in rows[:2]) == ["", shared_fetches[0][0]]
    assert [row[:-1] for row in rows[:2]] == [
        ("https://example.com/app.js", "20210101000000", "example.com", shared, "200",
         "application/javascript", len(SHARED), f"example.com/{shared}.js", "wayback"),
        ("https://example.com/lib.js", "20210606000000", "example.com", shared, "200",
         "application/javascript", len(SHARED), f"example.com/{shared}.js", "wayback"),
    ]  # fmt: skip
    assert rows[2:] == [
        ("https://example.com/moved.js", "20200202000000", "example.com", content_digest(MOVED), "200",
         "application/javascript", len(MOVED), f"example.com/{content_digest(MOVED)}.js", "wayback",
         "20200202000500"),
        ("https://example.com/old.js", "20190101000000", "example.com", content_digest(b"gone"),
         "no memento", "application/javascript", None, None, "wayback", None),
        ("https://www.example.com/config.json", "20200505000000", "www.example.com", content_digest(CONFIG),
         "200", "application/json", len(CONFIG), f"www.example.com/{content_digest(CONFIG)}.json", "wayback",
         "20200505000000"),
    ]  # fmt: skip
    assert first.stat("responses/no_memento") == "1"
    assert first.stat("responses/downloaded") == "3"
    assert "1 without a memento (not stored)" in first.stderr


def test_a_rerun_fetches_nothing_and_the_list_shows_the_index(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        first = crawl_responses(workdir, server, "-a", "query=ext:js", "-o", "index.jsonl")
        assert first.returncode == 0, first.stderr[-3000:]
        before = files_in(workdir / "files")
        server.replays.clear()
        again = crawl_responses(workdir, server, "-a", "query=ext:js")
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.downloads() == []  # every digest stored, the missing memento remembered
    assert files_in(workdir / "files") == before
    assert again.stat("responses/stored_before") == "3"
    assert again.stat("responses/known_missing") == "1"
    exported = [json.loads(line) for line in (workdir / "index.jsonl").read_text().splitlines()]
    assert sorted((r["url"], r["path"]) for r in exported) == sorted(
        (u, p) for u, _, _, _, _, _, _, p, _, _ in index(workdir)
    )
    listed = run_scrapy(workdir, "responses", "list", "-a", "domain=example.com", "--format", "txt")
    assert listed.returncode == 0, listed.stderr
    shared = content_digest(SHARED)
    assert listed.stdout.splitlines() == [
        f"example.com/{shared}.js",
        f"example.com/{shared}.js",
        f"example.com/{content_digest(MOVED)}.js",
    ]
    table = run_scrapy(workdir, "responses", "list", "--format", "table")
    assert "3 stored responses" in table.stdout
    bad = run_scrapy(workdir, "responses", "list", "-a", "nonsense")
    assert bad.returncode == 2 and bad.stderr.startswith("trawl: error: ")


HOSTILE_HOSTS = [
    "..",
    "con",
    "nul.example.com",
    "a" * 200 + ".example.com",
]


def test_hostile_names_never_leave_the_files_store(workdir: Path, tmp_path: Path) -> None:
    """URLs, archive answers and a symlink planted in the folder: nothing is written outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    files = workdir / "files"
    files.mkdir()
    (files / "example.com").symlink_to(outside, target_is_directory=True)  # planted before the run
    server = FakeReplayServer()
    bodies = {}
    for number, host in enumerate([*HOSTILE_HOSTS, "example.com"]):
        body = f"hostile {number}".encode()
        url = f"https://{host}/../../../../etc/passwd%00.js"
        bodies[url] = body
        server.archive(url if host != ".." else "https://x..example.com/../x.js", "20200101000000", body)
    server.archive("https://example.com/%2e%2e/%2e%2e/CON.js?x=/../../y", "20200202000000", b"encoded dots")
    with server:
        store_urls(workdir, server)
        result = crawl_responses(workdir, server, "-a", "filters=false")
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(outside.iterdir()) == []  # the symlink was not followed
    written = files_in(files)
    for path in written:
        parts = path.split("/")
        assert len(parts) == 2 and ".." not in parts and all(len(p) <= 120 for p in parts), path
        assert parts[0].split(".")[0].lower() not in ("con", "nul"), path
    assert (files / "example.com").is_symlink()
    assert int(result.stat("responses/unsafe_path") or 0) == 2  # the two example.com files
    for row in index(workdir):
        assert row[7] is None or row[7] in written


def test_saved_folders_and_warc_files_are_indexed_without_downloading(workdir: Path, tmp_path: Path) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    saved = tmp_path / "waymore" / "example.com"
    saved.mkdir(parents=True)
    (saved / "1234.js").write_bytes(SHARED)
    (saved / "5678.xnl").write_bytes(CONFIG)
    (saved / "index.txt").write_text(
        "1234,https://web.archive.org/web/20200101000000id_/https://example.com/app.js,2024-01-01\n"
        "5678,https://web.archive.org/web/20210101000000/https://api.example.com/conf,2024-01-01\n"
    )
    (saved / "link.js").symlink_to("/etc/hostname")
    warc = tmp_path / "crawl.warc.gz"
    with warc.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, body in (
            ("https://example.com/moved.js", MOVED),
            ("https://other.org/x.js", b"out of scope"),
        ):
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "application/javascript")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(url, "response", payload=__import__("io").BytesIO(body),
                                               http_headers=headers)  # fmt: skip
            writer.write_record(record)
    with FakeReplayServer() as server:
        result = crawl_responses(workdir, server, "-a", f"files={saved}", "-a", f"warc={warc}")
        assert server.downloads() == [] and server.requests == []
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {(r[0], r[1], r[7], r[8]) for r in index(workdir)}
    assert {(u, t, o) for u, t, _, o in rows} == {
        ("https://example.com/app.js", "20200101000000", "files"),
        ("https://api.example.com/conf", "20210101000000", "files"),
        (
            "https://example.com/moved.js",
            rows and next(t for u, t, _, _ in rows if u.endswith("moved.js")),
            "warc",
        ),
    }
    assert files_in(workdir / "files") == {
        f"example.com/{content_digest(SHARED)}.js": SHARED,
        f"api.example.com/{content_digest(CONFIG)}": CONFIG,
        f"example.com/{content_digest(MOVED)}.js": MOVED,
    }
    assert "skipped 2 entries of the local files" in result.stderr  # the symlink, the other.org record


def test_bad_arguments_are_one_line(workdir: Path) -> None:
    with FakeReplayServer() as server:
        for extra in (("-a", "captures=weekly"), ("-a", "query=ext:("), ("-a", "files=/no/such/folder")):
            result = crawl_responses(workdir, server, *extra)
            assert result.returncode == 2, (extra, result.stderr[-2000:])
            assert "trawl: error:" in result.stderr, result.stderr[-2000:]
        capped = crawl_responses(workdir, server, RESPONSES_MAX_BYTES="0")
        assert capped.returncode == 2 and "RESPONSES_MAX_BYTES" in capped.stderr
