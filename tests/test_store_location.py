"""Where a run stores by default: one store per user, whatever the working directory (docs/scrapyd.md)."""

from __future__ import annotations

import configparser
import sqlite3
import stat
from pathlib import Path

import pytest
import scrapyd
from scrapy.utils.misc import load_object

from tests.conftest import ROOT, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture

URLS = {"https://example.com/a", "https://example.com/b"}


@pytest.fixture(scope="module")
def wayback():
    with FakeCdxServer([make_capture(u, "20200101000000") for u in sorted(URLS)]) as server:
        yield server


def crawl(workdir: Path, wayback: FakeCdxServer, env: dict[str, str], *extra: str):
    args = crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": wayback.base_url}, *extra)
    result = run_scrapy(workdir, *args, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def stored_urls(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        return {url for (url,) in con.execute("SELECT url FROM urls")}


def test_runs_from_two_directories_share_the_data_directory_store(tmp_path: Path, wayback) -> None:
    data_home = tmp_path / "xdg"  # does not exist yet
    env = {"TRAWL_STORE_URI": "", "XDG_DATA_HOME": str(data_home)}
    first = crawl(tmp_path / "one", wayback, env)
    second = crawl(tmp_path / "two", wayback, env)
    db = data_home / "trawl" / "trawl.db"
    for result in (first, second):
        assert f"store: sqlite:///{db}" in result.stderr
        assert not (result.workdir / "trawl.db").exists()
    assert stored_urls(db) == URLS
    assert "0 new this run" in second.stderr  # the second run found what the first stored
    assert stat.S_IMODE((data_home / "trawl").stat().st_mode) == 0o700


def test_a_relative_xdg_data_home_is_ignored(tmp_path: Path, wayback) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = crawl(
        tmp_path / "run", wayback, {"TRAWL_STORE_URI": "", "XDG_DATA_HOME": "rel", "HOME": str(home)}
    )
    db = home / ".local" / "share" / "trawl" / "trawl.db"
    assert f"store: sqlite:///{db}" in result.stderr
    assert stored_urls(db) == URLS


def test_trawl_store_uri_replaces_the_default_and_store_uri_replaces_both(tmp_path: Path, wayback) -> None:
    named = tmp_path / "named.db"
    env = {"TRAWL_STORE_URI": f"sqlite:///{named}", "XDG_DATA_HOME": str(tmp_path / "xdg")}
    crawl(tmp_path / "run", wayback, env)
    assert stored_urls(named) == URLS
    given = tmp_path / "given.db"
    crawl(tmp_path / "run", wayback, env, "-s", f"STORE_URI=sqlite:///{given}")
    assert stored_urls(given) == URLS
    assert not (tmp_path / "xdg").exists()


def test_a_named_directory_is_still_never_created(tmp_path: Path, wayback) -> None:
    missing = tmp_path / "missing" / "x.db"
    result = run_scrapy(
        tmp_path / "run",
        *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": wayback.base_url}),
        env={"TRAWL_STORE_URI": f"sqlite:///{missing}"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("trawl: error: STORE_URI")
    assert not missing.parent.exists()


def test_trawls_scrapyd_conf_sets_only_options_scrapyd_has() -> None:
    defaults = configparser.ConfigParser()
    defaults.read(Path(scrapyd.__file__).with_name("default_scrapyd.conf"))
    ours = configparser.ConfigParser()
    ours.read(ROOT / "scrapyd.conf")
    assert ours.sections() == ["scrapyd", "services"]
    # trawl.scrapyd.app reads one option of its own, the application it wraps (docs/schedules.md).
    assert set(ours["scrapyd"]) <= set(defaults["scrapyd"]) | {"trawl_application"}
    for path in (
        ours["scrapyd"]["application"],
        ours["scrapyd"]["trawl_application"],
        *ours["services"].values(),
    ):
        assert load_object(path)  # no typo in a class path
    assert ours["scrapyd"]["bind_address"] == "127.0.0.1"
    assert ours.getint("scrapyd", "max_proc") >= 2
