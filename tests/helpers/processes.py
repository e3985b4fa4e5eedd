"""Run ``trawl`` or ``scrapy`` to its end as :func:`subprocess.run` does, forked from a warm interpreter.

:func:`run` takes :func:`subprocess.run`'s arguments and returns its
``CompletedProcess``. A command that starts trawl (``python -m scrapy``,
``python -m trawl.cli``, the ``trawl`` console script) is forked by the test
worker's fork server (:mod:`tests.helpers.forkserver`), which saves the 1.5 s a
fresh interpreter spends importing; anything else, and every run when
``TRAWL_TEST_FORK=0``, is a plain :func:`subprocess.run`. Runs whose signals a
test sends use :class:`subprocess.Popen` directly: the test must be the parent.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "trawl")
#: Read by the interpreter at its start: a run is forked only when they are as the fork server's.
_INTERPRETER_ENV = (
    "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONDEVMODE", "PYTHONUNBUFFERED", "PYTHONIOENCODING",
    "PYTHONDONTWRITEBYTECODE", "PYTHONOPTIMIZE", "PYTHONSAFEPATH", "PYTHONUTF8", "PYTHONFAULTHANDLER",
)  # fmt: skip

_lock = threading.Lock()
_server: tuple[subprocess.Popen, str] | None = None


def _start_server() -> str | None:
    """The fork server's socket path, started on first use (None when it cannot start)."""
    global _server
    with _lock:
        if _server is not None and _server[0].poll() is None:
            return _server[1]
        folder = tempfile.mkdtemp(prefix="trawl-fork-")
        path = os.path.join(folder, "sock")
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.forkserver", path],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        if process.stdout is None or process.stdout.readline().strip() != "ready":
            process.kill()
            return None
        _server = (process, path)
        atexit.register(_stop_server, process, folder)
        return path


def _stop_server(process: subprocess.Popen, folder: str) -> None:
    process.kill()
    process.wait()
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _main_of(args: list[str]) -> tuple[str, list[str]] | None:
    """What the fork server runs for this command line, and the child's ``sys.argv``; None: not ours."""
    if args and args[0] == CONSOLE_SCRIPT:
        return CONSOLE_SCRIPT, [CONSOLE_SCRIPT, *args[1:]]
    if len(args) >= 3 and args[:2] == [sys.executable, "-m"] and args[2] in ("scrapy", "trawl.cli"):
        module = args[2]
        if module == "scrapy":
            import scrapy

            first = str(Path(scrapy.__file__).parent / "__main__.py")
        else:
            first = str(ROOT / "trawl" / "cli.py")
        return module, [first, *args[3:]]
    return None


def _forkable(args: Any, kwargs: dict[str, Any]) -> tuple[str, list[str]] | None:
    if os.environ.get("TRAWL_TEST_FORK", "1") == "0" or not isinstance(args, (list, tuple)):
        return None
    if set(kwargs) - {"cwd", "env", "capture_output", "text", "timeout", "stdin", "input", "check"}:
        return None
    env = kwargs.get("env") or os.environ
    if any(env.get(name) != os.environ.get(name) for name in _INTERPRETER_ENV):
        return None
    if kwargs.get("stdin") not in (None, subprocess.DEVNULL) or not kwargs.get("capture_output"):
        return None
    return _main_of([str(a) for a in args])


def _read_line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            raise RuntimeError("the fork server went away")
        data += chunk
    return data.decode()


def run(args: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` (``capture_output=True`` runs of trawl are forked, the rest are not)."""
    target = _forkable(args, kwargs)
    path = _start_server() if target is not None else None
    if target is None or path is None:
        return subprocess.run(args, **kwargs)
    main, argv = target
    env = dict(kwargs.get("env") or os.environ)
    cwd = str(Path(kwargs.get("cwd") or os.getcwd()).resolve())
    text = bool(kwargs.get("text"))
    given = kwargs.get("input")
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if given is not None:
            stdin.write(given.encode() if isinstance(given, str) else given)
            stdin.seek(0)
            stdin_fd = stdin.fileno()
        else:
            devnull = os.open(os.devnull, os.O_RDONLY)
            stdin_fd = devnull
        request = json.dumps({"argv": argv, "cwd": cwd, "env": env, "main": main}).encode() + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            socket.send_fds(conn, [request], [stdin_fd, out.fileno(), err.fileno()])
            if given is None:
                os.close(devnull)
            pid = int(_read_line(conn).split()[1])
            conn.settimeout(kwargs.get("timeout"))
            try:
                line = _read_line(conn)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                conn.settimeout(None)
                _read_line(conn)
                raise subprocess.TimeoutExpired(args, kwargs["timeout"]) from None
            code = int(line.split()[1])
        out.seek(0)
        err.seek(0)
        stdout: Any = out.read()
        stderr: Any = err.read()
    if text:
        stdout, stderr = (
            data.decode().replace("\r\n", "\n").replace("\r", "\n") for data in (stdout, stderr)
        )
    done = subprocess.CompletedProcess(args, code, stdout, stderr)
    if kwargs.get("check"):
        done.check_returncode()
    return done
