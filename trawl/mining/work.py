"""What a mining worker process runs: read a batch of stored files, mine each one.

Kept apart from :mod:`trawl.mining.pool` so that a worker imports only this, the
reader (:func:`trawl.mining.extract_file`, or ``MINING_EXTRACTOR``) and the
standard library: never Twisted, Scrapy or a store. A worker reads the files
itself (the parent sends names, not bytes: a batch of megabyte files would
otherwise be pickled through a pipe twice), bounded by ``max_bytes``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import Any

from trawl.mining.findings import FileFindings

#: The reader every file goes through unless ``MINING_EXTRACTOR`` names another.
DEFAULT_EXTRACTOR = "trawl.mining.extract_file"

#: One file to mine: (digest, path under the root, URL of the file, MIME type).
Job = tuple[str, str, str, "str | None"]
#: What a worker hands back for one file: (digest, findings or None, why it could not be mined).
Result = tuple[str, "FileFindings | None", "str | None"]


def ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C is the crawl's to handle (it stops, then stops the pool);
    a worker that took it too would die mid-batch with a traceback on the terminal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@cache
def extractor(dotted: str) -> Callable[..., FileFindings]:
    """The function a dotted name (``package.module.function``) names, imported once per worker."""
    module, _, name = dotted.rpartition(".")
    found: Any = getattr(import_module(module), name)
    return found  # type: ignore[no-any-return]


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
