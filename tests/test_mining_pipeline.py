"""Mining in ``trawl crawl responses``, and ``trawl endpoints`` / ``trawl params``.

Every test runs trawl as a user does against a local Wayback Machine
(:class:`tests.servers.ia_replay.FakeReplayServer`) and checks what a user sees:
the ``endpoint``/``mined``/``url`` records stored, the lines the commands print,
the log. The files are written so that any reader finds the same endpoints
(quoted absolute URLs and root-relative paths), so the tests hold whichever
reader ``trawl.mining.extract_file`` runs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import CrawlResult, run_scrapy
from tests.helpers.responses_archive import crawl_responses as responses_run
from tests.helpers.responses_archive import store_urls
from tests.servers.ia_replay import FakeReplayServer, content_digest

APP = "https://example.com/app.js"
V1 = b'var users = "/api/v1/users?id=1";\nvar cdn = "https://cdn.other.net/lib.js";\n'
V2 = V1 + b'var orders = "/api/v2/orders?page=2&sort=asc";\n'
V3 = b'var orders = "/api/v2/orders?page=2&sort=asc";\nvar cdn = "https://cdn.other.net/lib.js";\n'
CONFIG = b'{"graphql": "https://api.example.com/graphql?query=q"}'
ENDPOINT_COLUMNS = "digest, endpoint, method, how, host, query, file_url, file_host, first_seen, last_seen"


def archive() -> FakeReplayServer:
    """app.js in three captures (an endpoint appears, one disappears), a fourth sharing the third's
    digest, and a JSON file on a subdomain."""
    server = FakeReplayServer()
    server.archive(APP, "20200101000000", V1)
    server.archive(APP, "20210101000000", V2)
    server.archive(APP, "20220101000000", V3)
    server.archive(APP, "20230101000000", V3)
    server.archive("https://www.example.com/config.json", "20200505000000", CONFIG, "application/json")
    return server


def crawl_responses(workdir: Path, server: FakeReplayServer, *extra: str, **settings: object) -> CrawlResult:
    """Every capture of each stored URL (the mining tests follow a file across its versions)."""
    return responses_run(workdir, server, "-a", "captures=all", *extra, **settings)


def query(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute(sql).fetchall()


def test_the_endpoints_are_mined_once_and_stored(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        first = crawl_responses(workdir, server)
        assert first.returncode == 0, first.stderr[-3000:]
        again = crawl_responses(workdir, server)
        assert again.returncode == 0, again.stderr[-3000:]
    v1, v2, v3, config = (content_digest(b) for b in (V1, V2, V3, CONFIG))
    users, orders = (
        "https://example.com/api/v1/users?id=1",
        "https://example.com/api/v2/orders?page=2&sort=asc",
    )
    cdn, graphql = "https://cdn.other.net/lib.js", "https://api.example.com/graphql?query=q"
    rows = query(workdir, f"SELECT {ENDPOINT_COLUMNS} FROM endpoint_records ORDER BY first_seen, endpoint")
    expected = [
        (v1, cdn, "", "cdn.other.net", "", "20200101000000", "20200101000000"),
        (v1, users, "", "example.com", "id", "20200101000000", "20200101000000"),
        (config, graphql, "", "api.example.com", "query", "20200505000000", "20200505000000"),
        (v2, cdn, "", "cdn.other.net", "", "20210101000000", "20210101000000"),
        (v2, users, "", "example.com", "id", "20210101000000", "20210101000000"),
        (v2, orders, "", "example.com", "page,sort", "20210101000000", "20210101000000"),
        (v3, cdn, "", "cdn.other.net", "", "20220101000000", "20230101000000"),
        (v3, orders, "", "example.com", "page,sort", "20220101000000", "20230101000000"),
    ]
    assert [(r[0], r[1], r[2], r[4], r[5], r[8], r[9]) for r in rows] == expected
    assert {(r[6], r[7]) for r in rows} == {(APP, "example.com"), ("https://www.example.com/config.json",
                                                                     "www.example.com")}  # fmt: skip
    # Four digests mined in the first run; the rerun mines none of them again.
    assert first.stat("responses/mined") == "4"
    assert again.stat("responses/mined") is None and again.stat("responses/mined_before") == "4"
    mined = sorted(r[0] for r in query(workdir, "SELECT digest FROM mined_records"))
    assert mined == sorted([v1, v2, v3, config])
    # The in-scope endpoint URLs are in the URL store, as found by the responses source.
    urls = dict(query(workdir, "SELECT url, sources FROM urls WHERE sources LIKE '%responses%'"))
    assert sorted(urls) == [graphql, users, orders]
    assert "out of scope: 3 endpoints on 1 host (top: cdn.other.net 3)" in first.stderr


def test_history_shows_what_appeared_and_disappeared(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        assert crawl_responses(workdir, server).returncode == 0
    shown = run_scrapy(workdir, "endpoints", "--history", APP, "--format", "txt")
    assert shown.returncode == 0, shown.stderr
    v1, v2, v3 = (content_digest(b) for b in (V1, V2, V3))
    assert shown.stdout.splitlines() == [
        f"{APP}: 4 captures, 3 distinct",
        f"20200101000000  {v1}  2 endpoints",
        "  + https://cdn.other.net/lib.js",
        "  + https://example.com/api/v1/users?id=1",
        f"20210101000000  {v2}  3 endpoints",
        "  + https://example.com/api/v2/orders?page=2&sort=asc",
        f"20220101000000-20230101000000  {v3}  2 endpoints",
        "  - https://example.com/api/v1/users?id=1",
    ]
    as_json = run_scrapy(workdir, "endpoints", "--history", APP, "--format", "jsonl")
    steps = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(s["timestamp"], s["captures"], s["disappeared"]) for s in steps] == [
        ("20200101000000", 1, []),
        ("20210101000000", 1, []),
        ("20220101000000", 2, ["https://example.com/api/v1/users?id=1"]),
    ]


def test_the_listing_and_the_parameter_wordlist(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        assert crawl_responses(workdir, server).returncode == 0
    listed = run_scrapy(workdir, "endpoints", "-a", "domain=example.com", "--format", "jsonl")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    columns = ("endpoint", "method", "query", "first_seen", "last_seen", "files")
    assert [tuple(r[c] for c in columns) for r in rows] == [
        ("https://api.example.com/graphql?query=q", None, ["query"], "20200505000000", "20200505000000", 1),
        ("https://cdn.other.net/lib.js", None, [], "20200101000000", "20230101000000", 3),
        ("https://example.com/api/v1/users?id=1", None, ["id"], "20200101000000", "20210101000000", 2),
        ("https://example.com/api/v2/orders?page=2&sort=asc", None, ["page", "sort"], "20210101000000",
         "20230101000000", 2),
    ]  # fmt: skip
    table = run_scrapy(workdir, "endpoints", "-a", "domain=www.example.com", "--format", "table")
    assert table.stdout.splitlines()[-1] == "1 endpoint", table.stdout
    params = run_scrapy(workdir, "params", "-a", "domain=example.com")
    assert params.returncode == 0, params.stderr
    assert params.stdout == "graphql\nid\npage\nquery\nsort\n"  # JSON keys are parameters too
    written = run_scrapy(workdir, "params", "-a", "domain=www.example.com", "-o", "params.txt")
    assert written.returncode == 0, written.stderr
    assert (workdir / "params.txt").read_text() == "graphql\nquery\n"


def test_secrets_are_stored_in_full_and_masked_in_the_log(workdir: Path) -> None:
    key = "AKIA2E0A8F3B244C9986"  # not AWS's documented example key: the readers ignore that decoy
    server = FakeReplayServer()
    server.archive("https://example.com/keys.js", "20200101000000", f'var k = "{key}";\n'.encode())
    with server:
        store_urls(workdir, server)
        result = crawl_responses(
            workdir, server, "-a", "secrets=true", "-s", "LOG_LEVEL=DEBUG"
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert query(workdir, "SELECT rule, value, line, file_url FROM secret_records") == [
        ("aws-access-key-id", key, 1, "https://example.com/keys.js")
    ]
    assert key not in result.stderr and key not in result.stdout
    assert "secret aws-access-key-id in https://example.com/keys.js line 1: AKIA********" in result.stderr


def test_mine_false_mines_nothing(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        result = crawl_responses(workdir, server, "-a", "mine=false")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stat("responses/mined") is None
    tables = {r[0] for r in query(workdir, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "endpoint_records" not in tables and "mined_records" not in tables


def test_bad_input_is_one_line(workdir: Path) -> None:
    with FakeReplayServer() as server:
        for extra, settings in (
            (("-a", "mine=perhaps"), {}),
            (("-a", "mine=false", "-a", "secrets=true"), {}),
            ((), {"MINING_PROCESSES": "-1"}),
            ((), {"MINING_EXTRACTOR": "no.such.module.extract"}),
        ):
            result = crawl_responses(workdir, server, *extra, **settings)
            assert result.returncode == 2, (extra, result.stderr[-2000:])
            assert "trawl: error:" in result.stderr, result.stderr[-2000:]
    for args in (
        ("endpoints", "-a", "nonsense"),
        ("endpoints", "--history", "not a url"),
        ("params", "-a", "domain=exa mple.com"),
        ("params", "extra"),
        ("endpoints", "--store", "elasticsearch://127.0.0.1:9"),
    ):
        result = run_scrapy(workdir, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("trawl: error: ") and result.stderr.count("\n") == 1, result.stderr


def test_saved_files_are_mined_too(workdir: Path, tmp_path: Path) -> None:
    saved = tmp_path / "waymore" / "example.com"
    saved.mkdir(parents=True)
    (saved / "1234.js").write_bytes(V2)
    (saved / "index.txt").write_text(
        "1234,https://web.archive.org/web/20210101000000id_/https://example.com/app.js,2024-01-01\n"
    )
    with FakeReplayServer() as server:
        result = crawl_responses(workdir, server, "-a", f"files={saved}")
        assert server.requests == []
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stat("responses/mined") == "1"
    assert query(workdir, "SELECT endpoint, first_seen FROM endpoint_records ORDER BY endpoint") == [
        ("https://cdn.other.net/lib.js", "20210101000000"),
        ("https://example.com/api/v1/users?id=1", "20210101000000"),
        ("https://example.com/api/v2/orders?page=2&sort=asc", "20210101000000"),
    ]


def test_a_later_capture_of_a_mined_file_widens_its_span_without_mining(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        first = crawl_responses(workdir, server, "-a", "to_date=2022")
        assert first.returncode == 0, first.stderr[-3000:]
        later = crawl_responses(workdir, server)  # the 2023 capture shares the 2022 file
        assert later.returncode == 0, later.stderr[-3000:]
    v3 = content_digest(V3)
    spans = query(
        workdir, f"SELECT DISTINCT first_seen, last_seen FROM endpoint_records WHERE digest = '{v3}'"
    )
    assert spans == [("20220101000000", "20230101000000")]
    assert later.stat("responses/mined") is None and later.stat("responses/widened") == "1"
    assert query(workdir, f"SELECT first_seen, last_seen FROM mined_records WHERE digest = '{v3}'") == [
        ("20220101000000", "20230101000000")
    ]


def test_captures_all_keeps_each_runs_first_and_last_capture() -> None:
    import polars as pl

    from trawl.pipeline.filters import FilterConfig
    from trawl.sources.responses.captures import choose

    found = pl.DataFrame(
        {
            "url": [APP] * 6,
            "timestamp": [f"20{y}0101000000" for y in (10, 11, 12, 13, 14, 15)],
            "status": ["200"] * 6,
            "mime": ["application/javascript"] * 6,
            "digest": ["A", "A", "A", "B", "A", "A"],
            "length": ["1"] * 6,
        }
    )
    kept = choose(found, "all", FilterConfig())
    assert kept.select("timestamp", "digest").rows() == [
        ("20100101000000", "A"),
        ("20120101000000", "A"),
        ("20130101000000", "B"),
        ("20140101000000", "A"),
        ("20150101000000", "A"),
    ]


def test_history_of_a_content_that_comes_back_and_of_a_file_not_mined() -> None:
    import polars as pl

    from trawl.mining.history import history

    endpoints = pl.DataFrame(
        {"digest": ["A", "B", "B"], "endpoint": ["/x", "/x", "/y"], "method": ["", "POST", ""]}
    )
    steps = history([("3", "A"), ("1", "A"), ("2", "B"), ("4", "C"), ("5", "A")], endpoints, {"A", "B"})
    assert [(s.first, s.last, s.mined, s.appeared, s.disappeared) for s in steps] == [
        ("1", "1", True, ["/x"], []),
        ("2", "2", True, ["/y", "POST /x"], ["/x"]),
        ("3", "3", True, ["/x"], ["/y", "POST /x"]),
        ("4", "4", False, [], []),
        ("5", "5", True, [], []),
    ]


def saved_file(tmp_path: Path, body: bytes) -> Path:
    """A waymore folder holding app.js with ``body``."""
    saved = tmp_path / "waymore" / "example.com"
    saved.mkdir(parents=True)
    (saved / "1234.js").write_bytes(body)
    (saved / "index.txt").write_text(
        "1234,https://web.archive.org/web/20210101000000id_/https://example.com/app.js,2024-01-01\n"
    )
    return saved


def test_a_small_run_is_mined_in_process_and_a_big_one_in_the_pool(workdir: Path, tmp_path: Path) -> None:
    """Under IN_PROCESS_BYTES no pool is started (its cold start cost seconds); above, the pool mines."""
    from trawl.mining.pool import IN_PROCESS_BYTES

    body = V2 + b'var routes = ["POST /user/repos"];\n'
    with FakeReplayServer() as server:
        small = crawl_responses(workdir, server, "-a", f"files={saved_file(tmp_path / 's', body)}")
    assert small.returncode == 0, small.stderr[-3000:]
    assert small.stat("responses/mined") == "1"
    assert small.stat("responses/mined_in_process") == "1"
    assert "1 in this process" in small.log
    assert len(query(workdir, "SELECT endpoint FROM endpoint_records")) == 4
    # A route string: stored with its method, under an unknown base; no host `expr` made of that base.
    assert query(workdir, "SELECT method, how FROM endpoint_records WHERE endpoint = 'EXPR/user/repos'") == [
        ("POST", "route")
    ]
    assert "out of scope: 1 endpoint on 1 host (top: cdn.other.net 1)" in small.log

    line = b'var u = "/api/v9/big";\n'
    big_body = V1 + line * (IN_PROCESS_BYTES // len(line) + 1)
    with FakeReplayServer() as server:
        big = crawl_responses(workdir / "big", server, "-a", f"files={saved_file(tmp_path / 'b', big_body)}")
    assert big.returncode == 0, big.stderr[-3000:]
    assert big.stat("responses/mined") == "1"
    assert big.stat("responses/mined_in_process") is None
    stored = query(workdir / "big", "SELECT endpoint FROM endpoint_records")
    assert ("https://example.com/api/v9/big",) in stored
