"""``-O`` that never empties an export: the new file replaces the old one at the end, if it has URLs.

Scrapy's file storage opens an ``-O`` target with ``wb`` at the first item (or
at the end, for an empty feed): a rerun whose upstream was unreachable left a
0-line ``urls.txt`` although the store still held every URL,
and a run killed half-way left half a file. This storage, registered in
``FEED_STORAGES`` for plain paths and ``file://`` URIs, writes an overwriting
export to a temporary file beside the target and, when the run ends:

* replaces the target with it (``os.replace``: readers see the old file or the
  new one, never a mix) if it holds at least one record, or if there was no
  target yet and the run completed (an empty feed is still created, as Scrapy's
  ``FEED_STORE_EMPTY`` says: a run with no error knows there is nothing);
* otherwise leaves the target as it was, or absent, and says so in one WARNING
  line: a run that exported nothing (upstream down, a mirror answering empty,
  filters that match nothing) cannot tell "nothing there" from "nothing read",
  and the store still holds what earlier runs found. Delete the file to get an
  empty one. A failed run to a new path left a 0-byte file that looked like a
  true empty answer.

The new file gets the old one's mode; a file that is new gets the process
umask's (0600 under trawl's ``UMASK``, :mod:`trawl.common.files`).

Appending (``-o``) opens the target as Scrapy does; trawl's exporters then
leave out the URLs the file already holds (:mod:`trawl.exports.append`).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from w3lib.url import file_uri_to_path

from trawl.common.outcome import error_count

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

#: Formats whose first line is a header, not a record.
HEADER_FORMATS = frozenset({"csv"})


def crawl_completed(crawler: Crawler) -> bool:
    """Whether the crawl ended by itself with no error, as far as it can be told at ``spider_closed``.

    The outcome word (:func:`trawl.common.outcome.run_outcome`) is set later, by
    the progress extension; what decides it is known now: the errors, and
    whether the crawler was stopped from outside (Ctrl-C, SIGTERM: Scrapy
    clears ``crawling`` before it closes the spider).
    """
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    return not error_count(stats) and bool(getattr(crawler, "crawling", True))


def has_records(path: str | Path, fmt: str) -> bool:
    """Whether an export file holds a record, not only what an empty export of ``fmt`` writes."""
    with open(path, "rb") as file:
        if fmt not in HEADER_FORMATS:
            return bool(file.read(1))
        file.readline()
        return bool(file.readline().strip())


class SafeFileFeedStorage:
    """Scrapy's ``FileFeedStorage``, with overwrites done by rename at the end (module docstring)."""

    def __init__(
        self,
        uri: str,
        *,
        feed_options: dict[str, Any] | None = None,
        completed: Callable[[], bool] | None = None,
    ) -> None:
        """``completed``: whether the run ended without an error, asked when the file is stored;
        ``None`` counts as yes (a caller that does not say keeps Scrapy's empty-feed behaviour)."""
        options = feed_options or {}
        self.path = Path(file_uri_to_path(uri) if uri.startswith("file:") else uri)
        self.overwrite = bool(options.get("overwrite", False))
        self.format = str(options.get("format") or self.path.suffix.lstrip("."))
        self.partial: Path | None = None
        self.completed = completed

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> SafeFileFeedStorage:
        """A crawl's export: stored at ``spider_closed``, when the crawler's stats say how it went."""
        return cls(uri, feed_options=feed_options, completed=lambda: crawl_completed(crawler))

    def open(self, spider: Spider | None) -> IO[bytes]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.overwrite:
            return self.path.open("ab")
        # Beside the target: same file system, so the final rename is atomic.
        target = Path(os.path.realpath(self.path))
        self.partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
        return self.partial.open("xb")

    def abandon(self, file: IO[bytes]) -> None:
        """An export that failed half-way: drop the new file, keep the old one."""
        file.close()
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)
            self.partial = None

    def store(self, file: IO[bytes]) -> Deferred[None] | None:
        file.close()
        if self.partial is None:
            return None
        partial, self.partial = self.partial, None
        target = Path(os.path.realpath(self.path))
        if not has_records(partial, self.format):
            if target.exists():
                partial.unlink()
                logger.warning(
                    "%s kept as it was: this run exported no URL (delete it to start empty)", self.path
                )
                return None
            if self.completed is not None and not self.completed():
                partial.unlink()
                logger.warning("%s not written: this run failed and exported no URL", self.path)
                return None
        if target.exists():
            shutil.copymode(target, partial)
        os.replace(partial, target)
        return None
