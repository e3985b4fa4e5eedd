"""``trawl worker`` and ``trawl queue`` as the queue tests run them: a worker whose lines a test waits for.

``TRAWL`` is the command line (``python -m trawl.cli``), ``COMMON`` the settings
every worker gets (politeness and the cache off). :class:`WorkerProcess` runs
``trawl worker`` with its output read line by line (:meth:`~WorkerProcess.wait_for`
a line, :meth:`~WorkerProcess.finish` within ``DEADLINE``); :func:`settings_args`
turns settings into ``-s`` options; :func:`queue_status` is what ``trawl queue``
prints; :func:`stored` reads URL -> captures from a SQLite store.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers import processes

TRAWL = [sys.executable, "-m", "trawl.cli"]
#: Every run ends well within this; a hung worker fails the test instead of hanging it.
DEADLINE = 240.0
COMMON = {"RATE_LIMITS_ENABLED": "False", "AUTOTHROTTLE_ENABLED": "False", "TRAWL_CACHE_DIR": ""}


class WorkerProcess:
    """``trawl worker`` with its stderr read line by line, so that a test can wait for a line."""

    def __init__(self, cwd: Path, settings: dict[str, str], *options: str) -> None:
        command = [*TRAWL, "worker", *options, *settings_args(settings)]
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = next((line for line in self.lines if re.search(pattern, line)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self.reader.is_alive()):
                    raise AssertionError(f"no line matching {pattern!r}; last lines:\n" + self.tail())
                self.changed.wait(left)

    def finish(self, timeout: float = DEADLINE) -> int:
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    def count(self, pattern: str) -> int:
        with self.changed:
            return sum(1 for line in self.lines if re.search(pattern, line))

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def settings_args(settings: dict[str, Any]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


def stored(store: Path) -> dict[str, int]:
    """URL -> captures, as the store holds them (the URL is the key: a URL is there once or not)."""
    with sqlite3.connect(store) as con:
        return dict(con.execute("SELECT url, captures FROM urls"))


def queue_status(cwd: Path, url: str) -> str:
    done = processes.run(
        [*TRAWL, "queue", "-s", f"TRAWL_REDIS_URL={url}"], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
