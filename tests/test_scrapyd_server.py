"""Smoke test of the scrapyd launcher (tests/servers/scrapyd.py): it starts, deploys, restarts, stops."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FAST, ROOT
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.scrapyd import ScrapydError, ScrapydServer


def test_starts_deploys_restarts_and_stops(tmp_path: Path) -> None:
    with ScrapydServer(tmp_path / "scrapyd", {"services": {}}) as scrapyd:
        assert scrapyd.url.startswith("http://127.0.0.1:")
        assert scrapyd._get("daemonstatus.json")["status"] == "ok"
        version = scrapyd.deploy(ROOT)
        assert scrapyd._get("listversions.json", project="trawl")["versions"] == [version]
        spiders = scrapyd._get("listspiders.json", project="trawl")["spiders"]
        assert {"wayback", "otx", "urlscan", "all"} <= set(spiders)
        process = scrapyd.process
        scrapyd.restart()
        assert scrapyd.process is not process and process.poll() is not None
        assert scrapyd._get("listprojects.json")["projects"] == ["trawl"]  # eggs_dir kept
        assert "max_proc = 4" in scrapyd.conf_path.read_text()
    assert process.poll() is not None and scrapyd.process is None


def test_a_scrapyd_that_cannot_start_says_why(tmp_path: Path) -> None:
    server = ScrapydServer(tmp_path / "scrapyd", {"scrapyd": {"http_port": "not-a-port"}}, start_timeout=30)
    with pytest.raises(ScrapydError, match="scrapyd exited|not ready") as info:
        server.start()
    assert "not-a-port" in str(info.value)


def test_a_scheduled_job_runs_and_leaves_its_log(tmp_path: Path) -> None:
    with FakeCdxServer([make_capture("http://example.com/a", "20200101000000")]) as cdx:
        with ScrapydServer(tmp_path / "scrapyd") as scrapyd:
            scrapyd.deploy(ROOT)
            store = tmp_path / "store.db"
            settings = {"WAYBACK_BASE_URL": cdx.base_url, "STORE_URI": f"sqlite:///{store}", **FAST}
            job = scrapyd.schedule("wayback", settings=settings, domain="example.com")
            finished = scrapyd.wait_finished(job, timeout=120)
            assert finished["spider"] == "wayback" and finished["log_url"].endswith(f"/{job}.log")
            assert "Scrapy" in scrapyd.job_log(job)  # what the job itself did: tests/test_scrapyd.py


def test_jobs_run_the_deployed_egg_not_the_checkout(tmp_path: Path) -> None:
    """A deployed version is what runs: here one whose settings name another bot."""
    project = tmp_path / "changed"
    shutil.copytree(ROOT / "trawl", project / "trawl", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "scrapy.cfg", "README.md"):
        shutil.copy(ROOT / name, project / name)
    settings = project / "trawl" / "settings.py"
    settings.write_text(settings.read_text().replace('BOT_NAME = "trawl"', 'BOT_NAME = "trawl-egg-check"'))
    with ScrapydServer(tmp_path / "scrapyd") as scrapyd:
        scrapyd.deploy(project)
        job = scrapyd.schedule("wayback", domain="co.uk")  # refused at once: no upstream needed
        scrapyd.wait_finished(job, timeout=120)
        log = scrapyd.job_log(job)
    assert "(bot: trawl-egg-check)" in log, log[-2000:]
    assert log.splitlines()[-1] == "trawl: error: 'co.uk' is a public suffix, not a domain"
