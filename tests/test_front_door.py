"""What a newcomer met on a fresh clone, refused in one line before anything is sent.

Each case runs ``crawl`` as a user would and checks what they see: exit status
2, exactly one ``trawl: error:`` line naming the path or setting and the
cause, a fake server that received no request, nothing left behind. On the
code before: ``-o`` under a file or in ``/proc`` gave 136-152 lines with a
traceback per batch; ``-s JOBDIR=`` a file, an ``AssertionError`` in
``CoreStats.spider_closed``; a misspelt setting was silently ignored; a
repeated ``-a domain=`` silently took the last.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_scrapy
from tests.helpers import processes
from tests.helpers.validation import QUIET, refused
from tests.helpers.virustotal import EXAMPLE_FILTERED, EXAMPLE_REPORT, KEY, NO_KEY_ENV
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.virustotal import FakeVirusTotal


@pytest.fixture
def server() -> Iterator[FakeCdxServer]:
    """A fresh one per test: a refusal is checked by the requests it did not receive."""
    with FakeCdxServer([make_capture("https://example.com/a", "20200101000000")]) as srv:
        yield srv


def crawl(workdir: Path, server: FakeCdxServer, source: str, *extra: str):
    base = ("-a", "domain=example.com", "-s", f"WAYBACK_BASE_URL={server.base_url}")
    quiet = [arg for name, value in QUIET.items() for arg in ("-s", f"{name}={value}")]
    return run_scrapy(workdir, "crawl", source, *base, *quiet, *extra)


# --- where the run writes ------------------------------------------------------------------

PATHS = [
    (("-o", "afile/urls.txt"), "cannot write -o afile/urls.txt: afile is a file, not a directory"),
    (("-O", "afile/deep/urls.csv"), "cannot write -O afile/deep/urls.csv: afile is a file, not a directory"),
    (("-o", "/proc/x.txt"), "cannot write -o /proc/x.txt: "),
    (("-o", "adir.txt"), "cannot write -o adir.txt: it is a directory"),
    (("-s", "JOBDIR=afile"), "cannot write JOBDIR afile: afile is a file, not a directory"),
    (("-s", "JOBDIR=afile/job"), "cannot write JOBDIR afile/job: afile is a file, not a directory"),
    (("-s", "JOBDIR=/proc/job"), "cannot write JOBDIR /proc/job: "),
]


@pytest.mark.parametrize("source", ["wayback", "all"])
@pytest.mark.parametrize(("option", "message"), PATHS, ids=[" ".join(p[0]) for p in PATHS])
def test_a_path_the_run_cannot_write_is_one_line(
    workdir: Path, server: FakeCdxServer, source: str, option: tuple[str, str], message: str | None
) -> None:
    (workdir / "afile").write_text("a file, not a directory\n")
    (workdir / "adir.txt").mkdir()
    before = sorted(path.name for path in workdir.iterdir())
    result = crawl(workdir, server, source, *option)
    refused(result, server, message)
    assert sorted(path.name for path in workdir.iterdir()) == before  # no probe left behind


def test_a_writable_path_in_a_missing_directory_is_still_created(
    workdir: Path, server: FakeCdxServer
) -> None:
    result = crawl(workdir, server, "wayback", "-o", "out/deeper/urls.txt", "-s", "JOBDIR=jobs/one")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workdir / "out/deeper/urls.txt").read_text().split() == ["https://example.com/a"]
    assert [path.name for path in (workdir / "jobs/one").iterdir()] == ["trawl-wayback.json"]


# --- misspelt settings, repeated arguments ---------------------------------------------------

TYPOS = [
    (("-s", "PROGRES_INTERVAL=5"), "unknown setting PROGRES_INTERVAL: did you mean PROGRESS_INTERVAL?"),
    (("-s", "progress_interval=5"), "unknown setting progress_interval: did you mean PROGRESS_INTERVAL?"),
    (("-s", "WAYBAK_BASE_URL=http://x"), "unknown setting WAYBAK_BASE_URL: did you mean WAYBACK_BASE_URL?"),
    (("-a", "domain=b.com"), "-a domain= is given twice: give each argument once"),
    (("-a", "DOMAIN=b.com"), "-a DOMAIN= is given twice: give each argument once"),
]


@pytest.mark.parametrize("source", ["wayback", "all"])
@pytest.mark.parametrize(("option", "message"), TYPOS, ids=[" ".join(t[0]) for t in TYPOS])
def test_a_misspelt_setting_or_a_repeated_argument_is_one_line(
    workdir: Path, server: FakeCdxServer, source: str, option: tuple[str, str], message: str
) -> None:
    refused(crawl(workdir, server, source, *option), server, message)


def test_a_setting_far_from_every_trawl_setting_stays_allowed(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "wayback", "-s", "MY_PROJECT_THING=1", "-s", "DOWNLOAD_DELAY=0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stored().keys() == {"https://example.com/a"}


# --- API keys in waymore's config.yml ----------------------------------------------------------

#: waymore's config.yml as waymore writes it (filters shortened): keys next to filters and webhooks.
WAYMORE_CONFIG = """\
FILTER_CODE: 404,301,302
FILTER_URL: .css,.jpg
FILTER_KEYWORDS: admin,login
URLSCAN_API_KEY:
VIRUSTOTAL_API_KEY: {key}
INTELX_API_KEY:
CONTINUE_RESPONSES_IF_PIPED: True
WEBHOOK_DISCORD: YOUR_WEBHOOK
DEFAULT_OUTPUT_DIR: {outdir}
"""


def test_an_api_key_in_waymores_config_file_is_used_and_never_shown(workdir: Path) -> None:
    (workdir / "config.yml").write_text(WAYMORE_CONFIG.format(key=KEY, outdir=workdir))
    with FakeVirusTotal(keys={KEY}, reports={"example.com": EXAMPLE_REPORT}) as vt:
        result = run_scrapy(
            workdir,
            "crawl", "virustotal", "-a", "domain=example.com", "-a", "config=config.yml",
            "-s", f"VIRUSTOTAL_BASE_URL={vt.base_url}", "-s", "LOG_LEVEL=DEBUG", "-o", "urls.txt",
            env=NO_KEY_ENV,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert [request.params.get("apikey") for request in vt.requests] == [KEY]
    assert set(result.lines("urls.txt")) == EXAMPLE_FILTERED
    assert "skipped" not in result.stderr
    assert KEY not in result.stderr + result.stdout
    assert "apikey=***" in result.stderr  # the request URL, logged at DEBUG, masked


# --- a fresh clone: the docs and the install ---------------------------------------------------


def test_the_notifications_page_opens_with_its_subject() -> None:
    """It opened with a "README excerpt" block naming a branch, left from an edit."""
    text = (ROOT / "docs" / "notifications.md").read_text(encoding="utf-8")
    assert text.startswith("# Notifications when a run ends\n\nHow to start: [scheduling.md]")
    assert "README excerpt" not in text and "wip-" not in text and "<!--" not in text


def test_building_the_package_prints_no_license_deprecation(tmp_path: Path) -> None:
    """``pip install -e .`` printed setuptools' ``project.license`` deprecation warning twice."""
    build = (
        "import sys\n"
        "from setuptools import build_meta\n"
        "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))\n"
    )
    done = processes.run(
        [sys.executable, "-W", "always", "-c", build, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Deprecat" not in done.stdout + done.stderr, done.stderr[-3000:]
    metadata = (tmp_path / done.stdout.split()[-1] / "METADATA").read_text(encoding="utf-8")
    assert "License-Expression: MIT" in metadata
