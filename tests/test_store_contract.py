"""The store contract: one merge rule, declared capabilities, one-line refusals.

* The SQLite store merges provenance in SQL; :meth:`Provenance.merge` is the
  rule. Random batches from several sources and runs must leave the same
  records in both.
* A third-party store that implements only the writing Protocol (the package
  in ``tests/plugins/trawl-text-store``, pip-installed as a user would) works
  for plain crawls and is refused, in one line naming what it lacks, for runs
  that need resume, reading back or search.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.settings import Settings

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.records.provenance import Provenance
from trawl.stores.contract import missing_capabilities
from trawl.stores.sqlite import SqliteStore

DOMAIN = "example.com"
ALL = ["write", "resume", "read", "search", "report"]


class _Stats:
    def inc_value(self, *args: object) -> None:
        pass

    def get_stats(self) -> dict[str, object]:
        return {}


def _store(db: Path, run_id: str, source: str) -> SqliteStore:
    crawler = SimpleNamespace(settings=Settings({"SQLITE_SYNCHRONOUS": "NORMAL", "SQLITE_CACHE_MB": 4}),
                              stats=_Stats())  # fmt: skip
    context = RunContext(
        crawler, SimpleNamespace(name=source), run_id, None, inputs={"target": SimpleNamespace(domain=DOMAIN)}
    )  # type: ignore[arg-type]
    store = SqliteStore(f"sqlite:///{db}", context)
    store.open()
    return store


def _random_rows(rng: random.Random, urls: list[str]) -> list[tuple]:
    rows = []
    for url in rng.sample(urls, rng.randint(1, len(urls))):
        first = str(rng.randint(2000, 2020))
        last = str(max(int(first), rng.randint(2000, 2024)))
        stamps = [None, first][rng.random() < 0.8]
        statuses = sorted(set(rng.sample(["200", "301", "404", ""], rng.randint(0, 2))) - {""})
        mimes = sorted(set(rng.sample(["text/html", "application/json", "image/png"], rng.randint(0, 2))))
        rows.append((url, stamps, last if stamps else None, rng.randint(1, 5), statuses, mimes))
    return rows


def test_sql_merge_is_the_provenance_rule(tmp_path: Path) -> None:
    rng = random.Random(8)
    urls = [f"https://{DOMAIN}/p/{i}" for i in range(30)]
    model: dict[str, Provenance] = {}
    db = tmp_path / "merge.db"
    run_number = 0
    for run_id, source in [("r1", "wayback"), ("r2", "otx"), ("r3", "wayback"), ("r4", "urlscan")]:
        run_number += 1
        store = _store(db, run_id, source)
        for _ in range(rng.randint(1, 4)):  # pages of one run: a URL may recur on several
            rows = _random_rows(rng, urls)
            batch = UrlBatch.from_columns(
                source, [r[0] for r in rows], [DOMAIN] * len(rows), [r[1] for r in rows],
                [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows],
            )  # fmt: skip
            store.write_batch(batch)
            for url, first, last, captures, statuses, mimes in rows:
                new = Provenance.contribution(url, DOMAIN, [source], first, last, captures, statuses, mimes,
                                              source, run_number)  # fmt: skip
                model[url] = model[url].merge(new, source, run_number) if url in model else new
            # What the batch carries back for exports is the merged record too.
            for row in batch.frame.iter_rows(named=True):
                expected = model[row["url"]]
                assert (row["sources"], row["first_seen"], row["last_seen"], row["captures"],
                        row["statuses"], row["mimes"]) == (expected.sources, expected.first_seen,
                        expected.last_seen, expected.captures, expected.statuses, expected.mimes)  # fmt: skip
        store.close("finished")
    con = sqlite3.connect(db)
    stored = {
        url: (sources.split(","), first, last, captures, [s for s in statuses.split(",") if s],
              [m for m in mimes.split(",") if m])
        for url, sources, first, last, captures, statuses, mimes in con.execute(
            "SELECT url, sources, first_seen, last_seen, captures, statuses, mimes FROM urls")
    }  # fmt: skip
    assert stored == {
        url: (p.sources, p.first_seen, p.last_seen, p.captures, p.statuses, p.mimes)
        for url, p in model.items()
    }
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_built_in_stores_implement_every_protocol() -> None:
    assert missing_capabilities(SqliteStore, ALL) == []


# --- a third-party store with the writing Protocol only ----------------------------------------

STORE_SOURCE = Path(__file__).parent / "plugins" / "trawl-text-store"
URLS = ["http://example.com/", "http://example.com/a", "http://example.com/b"]


@pytest.fixture(scope="module")
def store_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / STORE_SOURCE.name
    shutil.copytree(STORE_SOURCE, source)
    processes.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True,
    )  # fmt: skip
    return target


@pytest.fixture(scope="module")
def server():
    with FakeCdxServer([make_capture(u, "20200101000000") for u in URLS], lines_per_page=10) as srv:
        yield srv


def test_writing_only_store_lacks_the_rest(store_plugin: Path) -> None:
    sys.path.insert(0, str(store_plugin))
    try:
        from trawl_text_store import TextStore  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(store_plugin))
    assert missing_capabilities(TextStore, ALL) == ["resume", "read", "search", "report"]


def test_writing_only_store_works_for_a_plain_crawl(workdir: Path, server: FakeCdxServer, store_plugin: Path):
    out = workdir / "stored.txt"
    settings = {"WAYBACK_BASE_URL": server.base_url, "STORE_URI": f"text://{out}"}
    result = run_scrapy(
        workdir, *crawl_args("wayback", DOMAIN, settings), env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(out.read_text().split()) == URLS


@pytest.mark.parametrize(
    ("args", "lacks"),
    [
        (["-s", "JOBDIR=job"], "ResumableStore (resuming a crawl (JOBDIR))"),
        (["-o", "urls.txt"], "ReadableStore (exports from the store (crawl all -o))"),
    ],
)
def test_writing_only_store_is_refused_where_it_cannot_serve(
    workdir: Path, server: FakeCdxServer, store_plugin: Path, args: list[str], lacks: str
) -> None:
    settings = {"WAYBACK_BASE_URL": server.base_url, "STORE_URI": f"text://{workdir / 'x.txt'}"}
    before = len(server.requests)
    source = "all" if "-o" in args else "wayback"
    result = run_scrapy(
        workdir, *crawl_args(source, DOMAIN, settings, *args), env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert errors == [f"trawl: error: the 'text' store (TextStore) does not implement {lacks}"]
    assert len(server.requests) == before  # refused before anything was sent


def test_writing_only_store_cannot_be_searched(workdir: Path, store_plugin: Path) -> None:
    result = run_scrapy(workdir, "search", "*", "--store", f"text://{workdir / 'x.txt'}",
                        env={"PYTHONPATH": str(store_plugin)})  # fmt: skip
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "trawl: error: the 'text' store (TextStore) does not implement SearchableStore (trawl search)" in (
        result.stderr
    )


def test_writing_only_store_cannot_report(workdir: Path, store_plugin: Path) -> None:
    store = f"text://{workdir / 'x.txt'}"
    result = run_scrapy(
        workdir, "report", "new", "--domain", DOMAIN, "--store", store, env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 2
    assert_no_traceback(result)
    assert result.stderr == (
        "trawl: error: the 'text' store (TextStore) does not implement ReportingStore (trawl report new)\n"
    )
