"""``python -m tests.servers`` (the dev server) as a subprocess read line by line, and the environment
of a ``trawl`` run from outside the checkout."""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.conftest import ROOT

TRAWL = Path(sys.executable).parent / "trawl"
READY_WITHIN = 30.0


class DevServer:
    """``python -m tests.servers ARGS`` as a subprocess; its output (stderr included) line by line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.servers", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, prefix: str, timeout: float = READY_WITHIN) -> str:
        """The first line starting with ``prefix`` (every line read is kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} line in {timeout:g} s: {self.lines}") from None
            if line is None:
                raise AssertionError(f"the dev server ended before {prefix!r}: {self.lines}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def rest(self) -> list[str]:
        """Every line after the process ended."""
        self.process.wait(timeout=15)
        while (line := self._queue.get(timeout=5)) is not None:
            self.lines.append(line)
        return self.lines

    def crawl_command(self) -> list[str]:
        """The printed ``trawl crawl all ... \\`` lines, as an argument list."""
        start = next(i for i, line in enumerate(self.lines) if line.startswith(f"{TRAWL} crawl all "))
        end = next(i for i in range(start, len(self.lines)) if not self.lines[i].endswith("\\"))
        return shlex.split(" ".join(line.rstrip("\\") for line in self.lines[start : end + 1]))


def outside_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_") and k != "PYTHONPATH"}
    if os.environ.get("PYTHONPATH") == str(ROOT):  # this checkout's code under test, not the installed one
        extra = {**extra, "PYTHONPATH": os.pathsep.join(filter(None, [extra.get("PYTHONPATH"), str(ROOT)]))}
    return {**env, **extra}
