"""What a mining worker process runs: read a batch of stored files, mine each one.

Kept apart from :mod:`trawl.mining.pool` so that a worker (:mod:`trawl.mining.worker`) imports only this, the
reader (:func:`trawl.mining.extract_file`, or ``MINING_EXTRACTOR``) and the
standard library: never Twisted, Scrapy or a store. A worker reads the files
itself (the parent sends names, not bytes: a batch of megabyte files would
otherwise be pickled through a pipe twice), bounded by ``max_bytes``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import Any

from trawl.common.processes import is_running
from trawl.mining.findings import FileFindings

#: The reader every file goes through unless ``MINING_EXTRACTOR`` names another.
DEFAULT_EXTRACTOR = "trawl.mining.extract_file"

#: One file to mine: (digest, path under the root, URL of the file, MIME type).
Job = tuple[str, str, str, "str | None"]
#: What a worker hands back for one file: (digest, findings or None, why it could not be mined).
Result = tuple[str, "FileFindings | None", "str | None"]


def exit_with(pid: int) -> None:
    """End this process as soon as process ``pid`` ends (a daemon thread waiting on its pidfd).

    A worker's requests' pipe ends when the crawl does, but a worker in the middle
    of a file reads it only once done. ``PR_SET_PDEATHSIG`` does not fit: it is tied
    to the crawl's thread that started the worker, not to the crawl. A pidfd is the crawl itself: it is
    readable once the crawl has exited (zombie included), whoever its parent or
    subreaper, with no polling (the worker exits within milliseconds; 20 of 20
    ``kill -9`` rounds left no process, see tests/test_mining_orphans.py). Where
    pidfds are missing (Linux before 5.3, other systems) the thread polls the
    pid twice a second instead.
    """
    import select
    import threading

    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)  # the crawl is gone already
    except (AttributeError, OSError):
        handle = -1

    def wait() -> None:
        if handle >= 0:
            select.select([handle], [], [])
        else:
            while is_running(pid):
                time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=wait, name="trawl-exit-with-crawl", daemon=True).start()


@cache
def extractor(dotted: str) -> Callable[..., FileFindings]:
    """The function a dotted name (``package.module.function``) names, imported once per worker."""
    module, _, name = dotted.rpartition(".")
    found: Any = getattr(import_module(module), name)
    return found  # type: ignore[no-any-return]


def mine_body(body: bytes, url: str, mime: str | None) -> FileFindings:
    """One file's findings from its bytes, with :data:`DEFAULT_EXTRACTOR`.

    For the live crawl's scripts: they are not stored, so their bytes are sent
    (at most ``LIVE_JS_MAX_BYTES``, 1 MiB by default: a millisecond through the pipe).
    """
    try:
        return extractor(DEFAULT_EXTRACTOR)(body, url, mime)
    finally:
        release_memory()


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    import ctypes
    import ctypes.util

    try:
        trim: Any = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim  # type: ignore[no-any-return]


def release_memory() -> None:
    """Hand what a file's mining freed back to the system (glibc keeps it otherwise).

    A worker that mined the Python documentation's search index (1 MiB of it)
    stayed at 94 MB of RSS while the crawl went on; the pool's memory is the
    crawl's too (the same run, the same machine). One ``malloc_trim`` costs a few ms.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def mine_files(jobs: list[Job], root: str, secrets: bool, dotted: str, max_bytes: int) -> list[Result]:
    """Mine every file of ``jobs`` (read under ``root``); one result per job, in order.

    A file that cannot be read, or whose reader raises, is a result with a reason,
    not an exception: one bad file must not lose the batch's other findings.
    """
    extract = extractor(dotted)
    results: list[Result] = []
    for digest, path, url, mime in jobs:
        try:
            with open(os.path.join(root, path), "rb") as handle:
                body = handle.read(max_bytes + 1)
        except OSError as exc:
            results.append((digest, None, f"cannot read {path}: {exc.strerror or exc}"))
            continue
        if len(body) > max_bytes:
            body = body[:max_bytes]
        try:
            results.append((digest, extract(body, url, mime, secrets=secrets), None))
        except Exception as exc:  # noqa: BLE001 - a reader's bug is one file's failure, said by the parent
            results.append((digest, None, f"{type(exc).__name__}: {exc}"[:200]))
    return results
