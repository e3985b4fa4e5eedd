"""Where a run will write (``-o``/``-O`` files, ``-s JOBDIR=``), tried before the reactor starts.

A path the run cannot write failed only when the first batch or the last one
was written, inside the reactor: ``-o /path/under/a/file/urls.txt`` or ``-o
/proc/x.txt`` gave 136-152 lines with a ``FileExistsError`` traceback per batch
and asyncio's "Task exception was never retrieved"; ``-s JOBDIR=`` naming a
file gave an ``AssertionError`` in Scrapy's ``CoreStats.spider_closed`` (issue
13, item 6). Here each path is tried as the run will use it and a path that
cannot work is one :class:`~trawl.errors.TrawlUsageError` naming it and the
cause. Permission bits alone cannot tell (root may write anywhere, ``/proc`` and
read-only mounts refuse root too), so the check creates a probe file where the
run would create its own and removes it at once; an existing file is opened for
appending, which changes nothing in it. Nothing is left behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from w3lib.url import file_uri_to_path

from trawl.errors import TrawlUsageError

#: Feed URI schemes that are not local files (Scrapy's FEED_STORAGES): left to their storage.
_REMOTE = ("s3://", "gs://", "ftp://", "stdout:")


def _cause(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _existing_ancestor(path: Path) -> Path:
    """The nearest directory-or-file above ``path`` that exists (what ``mkdir -p`` would build on)."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def _try_directory(path: Path, shown: str) -> None:
    """``path`` is, or can become, a directory the run may create files in; ``shown`` names it in errors."""
    base = path if path.exists() else _existing_ancestor(path)
    if not base.is_dir():
        raise TrawlUsageError(f"cannot write {shown}: {base} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".trawl-probe-", dir=base)
    except OSError as exc:
        raise TrawlUsageError(f"cannot write {shown}: {_cause(exc)} ({base})") from None
    os.close(fd)
    os.unlink(probe)


def check_writable_file(path: str | Path, label: str) -> None:
    """A file the run will create, append to or replace; its directories may be missing."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise TrawlUsageError(f"cannot write {label} {path}: it is a directory")
    if target.exists():
        try:
            with open(target, "ab"):
                pass
        except OSError as exc:
            raise TrawlUsageError(f"cannot write {label} {path}: {_cause(exc)}") from None
    _try_directory(target.parent, f"{label} {path}")


def check_export_paths(feeds: Mapping[str, Mapping[str, Any]]) -> None:
    """Every local ``-o``/``-O`` target of a crawl (the ``FEEDS`` setting) can be written."""
    for uri, options in feeds.items():
        uri = str(uri)
        option = "-O" if (options or {}).get("overwrite") else "-o"
        if uri.startswith(_REMOTE) or "%(" in uri:  # remote, or named per spider/time by Scrapy
            continue
        check_writable_file(file_uri_to_path(uri) if uri.startswith("file:") else uri, option)


def check_jobdir(jobdir: str | Path) -> None:
    """``-s JOBDIR=``: a directory trawl can keep its ``trawl-<source>.json`` state files in."""
    _try_directory(Path(jobdir).expanduser(), f"JOBDIR {jobdir}")
