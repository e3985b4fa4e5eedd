"""A crawl's start imports what it uses: Scrapy's remote control only when it is turned on.

Scrapy loads every extension it lists, and its remote control imports aiohttp as it is
loaded (0.13 s of CPU a crawl) although trawl turns it off. Each case runs a crawl in a
fresh interpreter (the fork server's children have everything imported already) against
a port nothing listens on, and reads the modules it imported at exit.
"""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.helpers.imported import RUN_AND_LIST_MODULES


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: Run as ``python -c``: the command line, then how many objects the collector has frozen, in $FROZEN_OUT.
RUN_AND_COUNT_FROZEN = """
import atexit, gc, os, sys
atexit.register(lambda: open(os.environ["FROZEN_OUT"], "w").write(str(gc.get_freeze_count())))
from trawl.cli import main
main(sys.argv[1:])
"""


def _crawl(tmp_path: Path, *settings: str, script: str = RUN_AND_LIST_MODULES) -> tuple[set[str], str]:
    modules = tmp_path / "modules.txt"
    command = [
        sys.executable, "-c", script, "crawl", "wayback", "-a", "domain=example.com",
        "-s", f"WAYBACK_BASE_URL=http://127.0.0.1:{_closed_port()}", "-s", "RETRY_ENABLED=False",
        "-s", f"STORE_URI=sqlite:///{tmp_path / 'store.db'}", *[a for s in settings for a in ("-s", s)],
    ]  # fmt: skip
    env = dict(os.environ, MODULES_OUT=str(modules), FROZEN_OUT=str(modules))
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    return set(modules.read_text().split()), result.stderr


def test_a_crawl_does_not_load_the_remote_control_it_leaves_off(tmp_path: Path) -> None:
    modules, stderr = _crawl(tmp_path)
    assert "cannot reach" in stderr  # the crawl ran
    assert "scrapy.extensions.remote_control" not in modules
    assert "aiohttp" not in modules


def test_the_remote_control_still_runs_when_a_user_turns_it_on(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    on = ("REMOTE_CONTROL_ENABLED=True", f"REMOTE_CONTROL_JOBS_DIR={jobs}", "LOG_LEVEL=DEBUG")
    _, stderr = _crawl(tmp_path, *on)
    assert "Remote control HTTP server listening on port" in stderr


def test_the_start_up_s_objects_are_frozen_out_of_the_collector_s_full_passes(tmp_path: Path) -> None:
    (frozen,), stderr = _crawl(tmp_path, script=RUN_AND_COUNT_FROZEN)
    assert "cannot reach" in stderr  # the engine started
    assert int(frozen) > 100_000  # modules, classes, functions: every start-up object


def test_scrapy_s_deprecated_tls_aliases_keep_their_module_and_inspect_is_restored() -> None:
    from scrapy.core.downloader.contextfactory import ScrapyClientContextFactory
    from scrapy.core.downloader.tls import ScrapyClientTLSOptions

    import trawl.politeness.handler  # noqa: F401  (imports Scrapy's TLS modules under the shallow stack)

    assert ScrapyClientContextFactory.__module__ == "scrapy.core.downloader.contextfactory"
    assert ScrapyClientTLSOptions.__module__ == "scrapy.core.downloader.tls"
    assert inspect.stack()[0].function.startswith("test_scrapy_s_deprecated_tls_aliases")


def test_the_start_up_is_frozen_once_a_process_not_again_at_each_crawler_s_start() -> None:
    """A worker runs crawler after crawler: freezing at each would keep each one's cycles for good."""
    import gc

    from trawl.common.startupheap import freeze_startup_objects

    gc.unfreeze()
    try:
        freeze_startup_objects()
        first = gc.get_freeze_count()
        kept = [[] for _ in range(1000)]  # a later crawler's objects
        freeze_startup_objects()
        assert first > 0
        assert gc.get_freeze_count() == first
        del kept
    finally:
        gc.unfreeze()
