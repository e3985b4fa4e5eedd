"""The tests' fork server: ``trawl`` and ``scrapy`` runs forked from one warm interpreter.

A crawl run as a user runs it spent 1.5 of its 2.5 s importing Scrapy, Twisted's TLS,
polars, psycopg, redis and trawl before reading its first argument, and the suite
starts about two thousand of them. This process imports all of that once, reactor
not installed and no thread started, and forks a child per run: the child is a real
process (its own pid, exit status, signals, stdout and stderr on the files the test
gave), with the run's argv, working directory and environment, reseeded ``random``,
and Python's own exit steps (non-daemon threads joined, ``atexit``, stdio flushed).

Protocol, one connection per run on a Unix socket: the client sends one JSON line
(``argv``, ``cwd``, ``env``, ``main``: ``scrapy``, ``trawl.cli`` or a script path)
with three file descriptors (stdin, stdout, stderr); the server answers ``pid N``,
then ``exit N`` (negative: killed by that signal, as :mod:`subprocess` says it).
Single-threaded on purpose: forking beside other threads can copy a held lock.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys

#: Imported once here, so a child starts where a crawl starts doing its own work.
WARM = (
    "scrapy.cmdline",
    "scrapy.crawler",
    "scrapy.core.engine",
    "scrapy.core.scraper",
    "scrapy.core.downloader.handlers.http11",
    "scrapy.core.downloader.handlers.http2",
    "scrapy.extensions.feedexport",
    "scrapy.pipelines.files",
    "twisted.internet.asyncioreactor",
    "trawl.cli",
    "trawl.settings",
    "trawl.sources.builtin",
    # The plugins import these on first use (trawl.lazyclasses); every crawl uses one or more.
    "trawl.stores.sqlite.store",
    "trawl.stores.postgresql.store",
    "trawl.stores.elasticsearch.store",
    "trawl.stores.elasticsearch.search",
    "trawl.metrics.collector",
    "trawl.pipeline.builtins.crates_alerts.send",
    "polars",
    "pyarrow",
    "psycopg",
    "redis",
    "lxml.html",
)


def _warm() -> None:
    for name in WARM:
        try:
            importlib.import_module(name)
        except Exception:  # an optional part that does not import here is imported by the run
            pass
    from scrapy.utils.misc import walk_modules_iter

    from trawl.sources.builtin import SOURCES

    for name in SOURCES:  # the sources are imported on first use
        SOURCES[name]
    for _ in walk_modules_iter("trawl.commands"):
        pass
    # A fork copies only the forking thread, and the run installs its own reactor.
    assert "twisted.internet.reactor" not in sys.modules, "a warm import installed the reactor"
    import threading

    assert threading.active_count() == 1, "a warm import started a thread"


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the run, then exit as Python exits."""
    import atexit
    import random
    import runpy
    import threading
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()
    main = request["main"]
    first = os.getcwd() if main in ("scrapy", "trawl.cli") else os.path.dirname(main)
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [first, *extra, *sys.path[1:]]
    importlib.invalidate_caches()
    import trawl.settings

    importlib.reload(trawl.settings)  # it reads TRAWL_REDIS_URL from the environment
    sys.argv = list(request["argv"])
    code = 0
    try:
        try:
            if main in ("scrapy", "trawl.cli"):
                if main == "trawl.cli":  # run as __main__, as ``python -m`` does, beside no warm copy
                    sys.modules.pop(main, None)
                runpy.run_module(main, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(main, run_name="__main__")
        except SystemExit as stop:
            code = _exit_code(stop.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:
            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]  # as Py_FinalizeEx: threads, atexit, stdio
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        if code < 0:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)


def serve(path: str) -> None:
    _warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    while True:
        readable, _, _ = select.select([listener, *waiting], [], [])
        for ready in readable:
            if ready is listener:
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                while not message.endswith(b"\n"):
                    message += conn.recv(1 << 20)
                request = json.loads(message)
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    _child(request, fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"pid {pid}\n".encode())
                waiting[os.pidfd_open(pid)] = (pid, conn)
            else:
                pid, conn = waiting.pop(ready)
                os.close(ready)
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
                try:
                    conn.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
