"""What a first-time user reads: the crawl's help, ``trawl list``, ``--size`` alone, the finish lines.

A trial from a fresh clone met four small untruths: ``trawl crawl -h`` named no
source and said nothing of ``-a`` arguments; ``trawl search --size 5`` without
``--facet`` was silently ignored; a crates.io load of 1.67 M rows ended
``0 pages, 0 URLs seen``; a responses run that stored 55 files ``0 pages, 0 URLs seen,
55 unique``. Each test runs trawl as the user did and reads what it printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.helpers.crates_tables import TABLES
from tests.helpers.responses_archive import archive, crawl_responses, store_urls
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump
from trawl.run.crawl_all import SELECTION_ARGUMENTS
from trawl.sources.builtin import BUILTIN_RECORD_SOURCES, BUILTIN_SOURCES

TRAWL = Path(sys.executable).parent / "trawl"
SOURCES = ["commoncrawl", "crates", "ghostarchive", "intelx", "live", "otx", "probe", "responses"]
SOURCES += ["urlscan", "virustotal", "wayback"]
#: The URL sources' finish line, word for word as tests, docs and users' scripts read it.
URL_LINE = re.compile(
    r"wayback: complete \(finished\) in [\d.]+ s: [\d,]+ requests?, [\d,]+ pages?, [\d,]+ URLs? seen, "
    r"[\d,]+ unique, [\d,]+ new this run, [\d,]+ duplicates? dropped, [\d,]+ filtered, 0 errors, "
    r"[\d,]+ captures/s$"
)


def trawl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``trawl`` console script, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    return processes.run(
        [str(TRAWL), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def finish_lines(stderr: str, source: str) -> list[str]:
    marker = f"] INFO: {source}: complete ("
    return [line.split("] INFO: ", 1)[1] for line in stderr.splitlines() if marker in line]


# --- the crawl's help and trawl list -----------------------------------------------------------


def test_crawl_help_names_every_source_and_where_their_arguments_are(tmp_path: Path) -> None:
    result = trawl(tmp_path, "crawl", "-h")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps the paragraph
    assert f"Sources: {', '.join(['all', *SOURCES])}." in text, result.stdout
    assert "`trawl list SOURCE` shows a source's -a arguments" in text


def test_list_alone_prints_the_names_one_a_line_as_scrapyd_reads_them(tmp_path: Path) -> None:
    result = trawl(tmp_path, "list")
    assert (result.returncode, result.stdout, result.stderr) == (0, "\n".join(["all", *SOURCES]) + "\n", "")


def test_list_with_a_source_shows_each_argument_with_its_line(tmp_path: Path) -> None:
    result = trawl(tmp_path, "list", "commoncrawl")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "commoncrawl"
    said = {line.split()[1]: line.split(None, 2)[2] for line in lines[1:]}
    assert said["cc_indexes="] == "the newest N crawl indexes to query (default 1; 0: all)"
    assert said["domain="].startswith("the domain (required)")
    assert said["from_date="].startswith("keep captures from this date")
    assert "subs=" in said and "filter_code=" in said and "check_only=" in said
    assert "(no description declared)" not in result.stdout


def test_list_arguments_shows_every_source_and_all_takes_sources_and_exclude(tmp_path: Path) -> None:
    result = trawl(tmp_path, "list", "--arguments")
    assert result.returncode == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    assert headers == ["all", *SOURCES]
    block = result.stdout.split("\n\n")[0]
    assert {f"-a {name}=" for name in SELECTION_ARGUMENTS} <= set(re.findall(r"-a \w+=", block))
    # A source's own argument, which crawl all hands to that source alone, says whose it is.
    said = {line.split()[1]: line.split(None, 2)[2] for line in block.splitlines()[1:]}
    assert said["cc_indexes="] == "commoncrawl only: the newest N crawl indexes to query (default 1; 0: all)"
    assert said["limit="].startswith("crates, probe, responses only: its line differs by source")


def test_list_of_an_unknown_source_is_one_line(tmp_path: Path) -> None:
    result = trawl(tmp_path, "list", "wayback", "waybak")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"trawl: error: no source named 'waybak' (known: {', '.join(['all', *SOURCES])})"
    ]


UNDECLARED: set[str] = set()


@pytest.mark.parametrize(
    "spidercls",
    [
        pytest.param(
            cls,
            id=cls.name,
            marks=[
                pytest.mark.xfail(
                    strict=True,
                    reason=f"the {cls.name} source declares its extra -a names without their lines "
                    "(extra_arguments as a frozenset, not a mapping name -> line)",
                )
            ]
            if cls.name in UNDECLARED
            else [],
        )
        for cls in (*BUILTIN_SOURCES, *BUILTIN_RECORD_SOURCES)
    ],
)
def test_every_argument_of_a_built_in_source_has_its_line(spidercls: type) -> None:
    described = spidercls.described_arguments()
    assert set(described) == set(spidercls.accepted_arguments())
    assert not [name for name, line in described.items() if not line]


# --- trawl search --size ------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [(), ("--count",)])
def test_size_without_facet_is_one_error_line(tmp_path: Path, extra: tuple[str, ...]) -> None:
    result = trawl(
        tmp_path, "search", "ext:js", "--size", "5", *extra, "--store", f"sqlite:///{tmp_path}/x.db"
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "trawl: error: --size applies to --facet (the number of values it lists)"
    ]


# --- finish lines -------------------------------------------------------------------------------


def test_a_responses_run_ends_with_what_it_stored_and_wayback_keeps_its_url_line(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        wayback = run_scrapy(
            workdir,
            *crawl_args(
                "wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url}, "-a", "filters=false"
            ),
        )
        result = crawl_responses(
            workdir, server, "-a", "query=ext:js OR mime:application/json", PROGRESS_INTERVAL=0.05
        )
    assert result.returncode == 0, result.stderr[-3000:]
    # Its progress lines too: the records so far, not 0 captures and 0 unique URLs.
    progress = [line for line in result.stderr.splitlines() if "INFO: responses: " in line and " | " in line]
    assert progress, result.stderr[-3000:]
    for line in progress:
        said = r"INFO: responses: \d+ requests? \| \d+ URLs? selected, \d+ files? stored"
        assert re.search(said, line), line
        assert "captures/s" not in line and "unique URL" not in line, line
    [url_line] = finish_lines(wayback.stderr, "wayback")
    assert URL_LINE.fullmatch(url_line), url_line
    [line] = finish_lines(result.stderr, "responses")
    assert "URLs seen" not in line and "0 pages" not in line, line
    assert re.fullmatch(
        r"responses: complete \(finished\) in [\d.]+ s: \d+ requests, 5 URLs selected, 3 files stored, "
        r"1 capture without a memento, \d+ endpoints? found, 0 errors, [\d,]+ records/s",
        line,
    ), line


def test_a_crates_load_ends_with_its_records_by_kind(workdir: Path) -> None:
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        settings = {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}
        result = run_scrapy(workdir, *crawl_args("crates", None, settings))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = finish_lines(result.stderr, "crates")
    assert "URLs seen" not in line and "0 pages" not in line, line
    by_kind = {
        key.split("'")[1].removeprefix("trawl/records/"): int(value.rstrip(",}"))
        for key, value in (
            row.strip().split(": ")
            for row in result.stderr.splitlines()
            if row.strip().startswith("'trawl/records/")
        )
    }
    assert by_kind["crate"] > 0 and by_kind["version"] > 0, by_kind
    total = sum(by_kind.values())
    assert f": 1 request, {total:,} records of {len(by_kind)} kinds (" in line, line
    biggest = max(by_kind.items(), key=lambda kv: (kv[1], kv[0]))
    assert f"({biggest[0]} {biggest[1]:,}, " in line, line


def test_crawl_all_tables_a_crates_load_by_its_records_not_by_urls(workdir: Path) -> None:
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        settings = {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}
        result = run_scrapy(workdir, *crawl_args("all", None, settings, "-a", "sources=crates"))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = finish_lines(result.stderr, "crates")
    total = int(re.search(r": 1 request, ([\d,]+) records of ", line)[1].replace(",", ""))  # type: ignore[index]
    table = [row.split() for row in (result.stdout + result.stderr).splitlines() if row.startswith("source ")]
    assert table and table[0][:6] == ["source", "requests", "pages", "URLs", "new", "URLs"], table
    assert "records" in table[0]
    [row] = [row.split() for row in (result.stdout + result.stderr).splitlines() if row.startswith("crates ")]
    assert row[:6] == ["crates", "1", "-", "-", "-", f"{total:,}"], row


def test_crawl_all_without_a_domain_refuses_an_export_in_one_line(workdir: Path) -> None:
    settings = {"CRATES_DUMP_URL": "http://127.0.0.1:9/db-dump.tar.gz", "STORE_URI": "sqlite:///x.db"}
    result = run_scrapy(workdir, *crawl_args("all", None, settings, "-a", "sources=crates", "-o", "urls.txt"))
    assert_no_traceback(result)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "trawl: error: -o with 'all' writes a domain's URLs from the store: pass -a domain="
    )
    assert not (workdir / "urls.txt").exists()


@pytest.mark.parametrize("source", ["probe", "crates"])
def test_a_source_that_reads_no_config_file_refuses_one(tmp_path: Path, source: str) -> None:
    listed = trawl(tmp_path, "list", source)
    assert listed.returncode == 0 and "-a config=" not in listed.stdout, listed.stdout
    args = ["crawl", source, "-a", "config=config.yml", "-s", "STORE_URI=sqlite:///x.db"]
    if source != "crates":
        args += ["-a", "domain=example.com"]
    done = trawl(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"trawl: error: unknown argument for the {source} source: -a config= (known: "
    ), done.stderr[-2000:]


def test_a_url_source_and_a_keyed_source_list_their_config_file(tmp_path: Path) -> None:
    for source in ("wayback", "virustotal"):
        listed = trawl(tmp_path, "list", source)
        assert "-a config=" in listed.stdout, listed.stdout
