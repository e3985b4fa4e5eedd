"""The end of ``scrapy crawl``: Python's exit steps, then the process ends, without tearing Scrapy down.

Once the command had returned, a crawl's process had nothing left to do but
tear the interpreter down: clear ~1,640 modules and collect ~155,000 objects
(Scrapy, Twisted, polars, psycopg...), freeing memory the kernel frees anyway.
Measured on a fresh ``python -m scrapy crawl wayback`` whose webhook never
answers (``NOTIFY_TIMEOUT=1``, tests/test_notify.py), from the post's arrival:
the notifier gave up at 1.0 s, the command returned and every ``atexit``
handler had run by 1.0 s (the notifier's daemon thread holds nothing up), and
the process ended at 1.5-1.6 s on an idle machine (py-spy: the 0.5-0.6 s after
``atexit`` all in the finalizer's garbage collections), at 1.4-3.4 s with one of
the two cores busy (up to 2.4 s of teardown), the bound of 1 + 3 s within
0.6 s of failing; a loaded CI machine once took over 3 s.

:func:`end_without_teardown` keeps every exit step whose work someone would miss
and skips only the teardown: after the command has returned (its exit status
set) and Python has joined the non-daemon threads, its ``atexit`` handler runs
every other ``atexit`` handler (``logging.shutdown``, which flushes and closes
the log file; ``weakref.finalize`` callbacks; coverage's), flushes every file
still open for writing (as closing it at teardown would; 50 ms) and stdout and
stderr, then ends the process (:func:`os._exit`) with the status Scrapy exits
with. The same run now ends 1.07-1.12 s after the post idle, 1.12-1.23 s with one
core busy, 1.13-1.44 s with both. A run that raised after the command (a
traceback, exit status 1) is left to Python's own exit. (The tests' fork server,
tests/helpers/forkserver.py, ends its children the same way: 1.01-1.03 s there,
before and after.)
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import sys
from collections.abc import Callable

#: The files that may hold unwritten data: text layers are flushed first (into their buffers).
_WRITERS = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, io.BufferedRWPair)


def end_without_teardown(status: Callable[[], int | None]) -> None:
    """When the process exits: Python's ``atexit`` handlers, every open file flushed, then
    :func:`os._exit` with ``status()`` (the command's exit status), skipping the teardown.

    Call it once the command's work is done and its status is set (``scrapy.cmdline``
    exits with ``cmd.exitcode`` right after ``run`` returns). Registered then, its
    handler is the first ``atexit`` runs, and it runs the others itself.
    """

    def finish() -> None:
        if getattr(sys, "last_exc", None) is not None or getattr(sys, "last_value", None) is not None:
            return  # an uncaught exception after the command: Python's own exit, and its status
        atexit.unregister(finish)
        atexit._run_exitfuncs()  # the rest, in their order (last registered first)
        _flush_open_files()
        os._exit(int(status() or 0))

    atexit.register(finish)


def _flush_open_files() -> None:
    """Write out what open files still buffer: the teardown would, closing them."""
    found = [obj for obj in gc.get_objects() if isinstance(obj, _WRITERS)]  # 50 ms for 155,000 objects
    text = [file for file in found if isinstance(file, io.TextIOWrapper)]
    for files in (text, found, [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]):
        for file in files:
            try:
                if file is not None and not file.closed:
                    file.flush()
            except Exception:  # noqa: BLE001, S110 - a closed pipe, a detached buffer: nothing to write to
                pass
