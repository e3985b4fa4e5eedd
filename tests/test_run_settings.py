"""A crawl's start reads the declared settings of its own components only, unless ``-s`` names another's.

Each case runs in a fresh interpreter (what a crawl imports is the point), as a crawl
of the wayback source into a SQLite store starts: the source's class imported, the
settings given on the command line at ``cmdline`` priority.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, os, sys
os.environ["SCRAPY_SETTINGS_MODULE"] = "trawl.settings"
from scrapy.utils.project import get_project_settings
settings = get_project_settings()
for pair in sys.argv[1:]:
    name, _, value = pair.partition("=")
    settings.set(name, value, priority="cmdline")
import trawl.sources.cdx.wayback
from trawl.errors import TrawlUsageError
from trawl.validation import run_settings, validate_settings
names = sorted(run_settings(settings))
try:
    validate_settings(settings)
    error = None
except TrawlUsageError as exc:
    error = str(exc)
others = sorted(m for m in sys.modules if m in ("psycopg", "elasticsearch") or m.startswith(
    ("trawl.sources.otx", "trawl.sources.urlscan", "trawl.sources.crates.", "trawl.stores.postgresql.")))
print(json.dumps({"names": names, "error": error, "others": others}))
"""


def start(*given: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "STORE_URI=sqlite:///x.db", *given],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def test_a_wayback_crawl_imports_no_other_source_or_store() -> None:
    found = start()
    assert found["others"] == []
    assert "WAYBACK_BASE_URL" in found["names"] and "SQLITE_CACHE_MB" in found["names"]
    assert "OTX_API_KEY" not in found["names"]
    assert found["error"] is None


def test_another_sources_setting_given_is_still_checked() -> None:
    found = start("OTX_BASE_URL=not a url")
    assert "OTX_API_KEY" in found["names"]
    assert found["error"] is not None and "OTX_BASE_URL" in found["error"]


@pytest.mark.parametrize(
    "typo, meant", [("SQLITE_CACHE_MD", "SQLITE_CACHE_MB"), ("OTX_BASE_UR", "OTX_BASE_URL")]
)
def test_a_misspelt_setting_of_any_component_is_caught(typo: str, meant: str) -> None:
    assert start(f"{typo}=1")["error"] == f"unknown setting {typo}: did you mean {meant}?"
