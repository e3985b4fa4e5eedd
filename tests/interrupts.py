"""A real ``trawl`` process to signal, read as it runs (tests/test_signals.py, bench/stress_interrupts.py).

The process's stderr is read line by line on a thread, so a test waits for a
line (``paused until``, ``shutting down gracefully``) before it signals: it
polls for readiness, it never sleeps for a guessed time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: Ceiling for any wait on the process; a wait that reaches it is a failure, not a pause.
DEADLINE = 60.0
ROOT = Path(__file__).resolve().parents[1]


class Trawl:
    """``trawl ARGS`` in ``cwd`` (the ``trawl`` console script's code: ``python -m trawl.cli``)."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ, **(env or {}))
        # This checkout's code first, whoever started us (a test, the stress bench).
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
        full_env.pop("SCRAPY_SETTINGS_MODULE", None)  # trawl sets its own
        full_env.pop("SCRAPY_PROJECT", None)
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trawl.cli", *args],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout = ""
        self._readers = [
            threading.Thread(target=self._read_stderr, daemon=True),
            threading.Thread(target=self._read_stdout, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.signalled_at: float | None = None

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()

    @property
    def stderr(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, text: str, timeout: float = DEADLINE) -> str:
        """The first stderr line containing ``text``; AssertionError if the process ends or time runs out."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if text in line:
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._readers[0].is_alive()):
                    raise AssertionError(f"no line with {text!r}; stderr:\n" + "\n".join(self.lines[-40:]))
                self._changed.wait(min(left, 0.5))

    def wait_until(self, ready: Callable[[], object], timeout: float = DEADLINE) -> None:
        """Poll ``ready()`` (a server saw a request, a file appeared) while the process runs."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("not ready; stderr:\n" + "\n".join(self.lines[-40:]))
            with self._changed:
                self._changed.wait(0.02)

    def send(self, signum: int) -> None:
        if self.signalled_at is None:
            self.signalled_at = time.monotonic()
        self.proc.send_signal(signum)

    def finish(self, timeout: float = DEADLINE) -> tuple[int | None, float]:
        """(exit status, seconds from the first signal to the exit); kills the process after ``timeout``.

        The status is ``None`` when the process had to be killed: it did not stop by itself.
        """
        try:
            code: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        ended = time.monotonic()
        for reader in self._readers:
            reader.join(5)
        return code, ended - (self.signalled_at or ended)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> Trawl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
