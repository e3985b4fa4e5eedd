"""Three domains x three sources into one PostgreSQL store, as the distributed PostgreSQL tests run them.

``SOURCES`` and ``DOMAINS`` are the work; :func:`trawl` runs a command line as a
user does (forked, no traceback, exit 0); :func:`crawl_arguments` is a domain's
``trawl enqueue`` arguments (:func:`as_crawl_all` the same for ``crawl all``);
:func:`stored` is every record of a store as ``trawl search '*'`` prints it, the
password never shown.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import processes
from tests.helpers.workers import TRAWL
from tests.servers.postgres_server import PASSWORD

SOURCES = ("wayback", "commoncrawl", "otx")
DOMAINS = ("example.com", "example.org", "example.net")


def trawl(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = processes.run([*TRAWL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def crawl_arguments(domain: str) -> list[str]:
    """``trawl enqueue``'s arguments for ``domain``: three sources, filters off, one Common Crawl index."""
    return [domain, "-a", "sources=" + ",".join(SOURCES), "-a", "filters=false", "-a", "cc_indexes=0"]


def as_crawl_all(arguments: list[str]) -> list[str]:
    """``enqueue DOMAIN -a ...`` as ``crawl all -a domain=DOMAIN -a ...``."""
    domain, *rest = arguments
    return ["-a", f"domain={domain}", *rest]


def stored(cwd: Path, uri: str) -> list[dict[str, Any]]:
    """Every URL of the store as ``trawl search '*' --format jsonl`` prints it."""
    done = trawl(cwd, "search", "*", "--format", "jsonl", "--store", uri)
    assert PASSWORD not in done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def by_url(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["url"]: r for r in records}
