"""``-a list=FILE`` (``-a list=-``: standard input): the probe's URLs from a list, as ``httpx -l``.

One target a line; blank lines and ``#`` comments are skipped. A line is

* an ``http://`` or ``https://`` URL: asked as given (in its canonical form);
* a host, ``host:port`` or ``host/path`` without a scheme: ``https://`` is
  asked, and ``http://`` if https got no answer at all (httpx's fallback);
  the record is the URL that answered.

Each host is read as ``-a domain=`` is (:func:`trawl.sources.target.parse_target`):
an address, ``localhost`` or a name without a public suffix needs
``-a allow_private=true``; a wildcard (``*.example.com``) and an address range
(``10.0.0.0/24``, which httpx expands) are refused: what is asked is what is
listed. A line that cannot be read stops the run before any request, in one
line naming its number (``urls.txt line 7: ...``).

**Scope** (:mod:`.scope`): with ``-a domain=``, the lines outside it are not
asked (counted, the first named in a warning); without it, the list's own
hosts are the scope (a redirect is followed to them only, as ``httpx -fhr``).

The list is read twice: checked whole before the run, then a line at a time
as requests go out, so a list of a million lines is never held in memory (its
hosts are, for the scope). Standard input is copied once to a temporary file
for that. A line is at most :data:`MAX_LINE` bytes.
"""

from __future__ import annotations

import ipaddress
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError
from trawl.records.canonical import canonicalize
from trawl.sources.live.scope import local_host, local_netloc, local_targets
from trawl.sources.probe.patterns import interleaved, origin_of
from trawl.sources.probe.scope import ProbeScope
from trawl.sources.selection import CHUNK
from trawl.sources.target import Target, parse_target

#: Bytes a line may have: a URL over 8 KiB is refused by most servers (Apache's LimitRequestLine).
MAX_LINE = 8192
STDIN = "-"

#: Standard input, copied the first time it is read (a run checks its list, then reads it).
_stdin_copy: IO[bytes] | None = None


@dataclass(frozen=True)
class Entry:
    """One line's URL and, for a bare host, the ``http://`` URL asked if ``https://`` gets no answer."""

    line: int
    url: str
    fallback: str | None = None


@dataclass(frozen=True)
class UrlList:
    """A checked list: where it is read from, its scope, and the lines outside it."""

    source: str
    allow_private: bool
    scope: ProbeScope
    lines: int = 0
    outside: int = 0
    first_outside: int = 0

    @property
    def name(self) -> str:
        return "standard input" if self.source == STDIN else repr(self.source)

    def entries(self) -> Iterator[Entry]:
        """The lines in scope, :data:`CHUNK` at a time taken a host at a time in turn
        (:func:`~.patterns.interleaved`: a list sorted by host kept all but one host waiting)."""
        chunk: list[Entry] = []
        for entry in _entries(self.source, self.allow_private, checked=True):
            if self.scope.allows(entry.url):
                chunk.append(entry)
            if len(chunk) >= CHUNK:
                yield from interleaved(chunk, _origin)
                chunk = []
        yield from interleaved(chunk, _origin)

    def say_outside(self, logger: Any, source: str) -> None:
        """One warning for the lines outside ``-a domain=`` (said when the run starts)."""
        if self.outside:
            logger.warning(
                "%s: %d of the %d lines of %s are outside %s, not asked (the first: line %d)",
                source, self.outside, self.lines, self.name, self.scope.describe(), self.first_outside,
            )  # fmt: skip


def _origin(entry: Entry) -> str:
    return origin_of(entry.url)


def read_list(source: str, allow_private: bool, target: Target | None) -> UrlList:
    """Check every line of the list (one :class:`TrawlUsageError` for the first bad one) and
    decide the scope: ``target``'s, else the list's hosts.

    The crawl command checks a source's arguments, then the crawler configures it with
    them: the second call is this one's answer again (same list, same file), not a
    second reading (30 s for 200,000 lines on a loaded machine).
    """
    key = (source, allow_private, target, _stamp(source))
    if _checked and _checked[0][0] == key:
        return _checked[0][1]
    checked = _check(source, allow_private, target)
    _checked[:] = [(key, checked)]
    return checked


#: The last list checked: ``(key, UrlList)`` (:func:`read_list`).
_checked: list[tuple[tuple[Any, ...], UrlList]] = []


def _stamp(source: str) -> tuple[int, int]:
    """A file's size and modification time: a list edited between two reads is read again."""
    if source == STDIN:
        return (0, 0)
    try:
        stat = Path(source).expanduser().stat()
    except OSError:
        return (-1, -1)
    return (stat.st_size, stat.st_mtime_ns)


def _check(source: str, allow_private: bool, target: Target | None) -> UrlList:
    lines = outside = first_outside = 0
    if target is not None:
        scope = ProbeScope(target, frozenset(), local_targets(target))
        for entry in _entries(source, allow_private):
            lines += 1
            if not scope.allows(entry.url):
                outside += 1
                first_outside = first_outside or entry.line
        if not lines:
            raise TrawlUsageError(f"-a list=: no URL in {_where(source)} (only blank lines and # comments)")
        return UrlList(source, allow_private, scope, lines, outside, first_outside)
    hosts: set[str] = set()
    local: set[str] = set()
    for entry in _entries(source, allow_private):
        lines += 1
        host = (urlsplit(entry.url).hostname or "").lower()
        if local_host(host):
            local.update(local_netloc(url) for url in (entry.url, entry.fallback) if url)
        else:
            hosts.add(host)
    if not lines:
        raise TrawlUsageError(f"-a list=: no URL in {_where(source)} (only blank lines and # comments)")
    return UrlList(source, allow_private, ProbeScope(None, frozenset(hosts), frozenset(local)), lines)


def _entries(source: str, allow_private: bool, checked: bool = False) -> Iterator[Entry]:
    """The list's entries; ``checked``: its hosts were checked already (the run's own reading)."""
    for number, text in _lines(source):
        try:
            entry = parse_line(number, text, allow_private, checked)
        except TrawlUsageError as exc:
            raise TrawlUsageError(f"-a list=: {_where(source)} line {number}: {exc}") from None
        if entry is not None:
            yield entry


def parse_line(number: int, text: str, allow_private: bool, checked: bool = False) -> Entry | None:
    """One line as an :class:`Entry`; ``None`` for a blank line or a comment."""
    line = text.strip()
    if not line or line.startswith("#"):
        return None
    shown = repr(line if len(line) <= 60 else line[:57] + "...")
    if "://" in line:
        scheme = line.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise TrawlUsageError(f"not an http(s) URL: {shown}")
        url, fallback = canonicalize(line), None
    elif any(c.isspace() for c in line):
        raise TrawlUsageError(f"not a URL or a host: {shown}")
    elif _is_range(line):
        raise TrawlUsageError(f"an address range is not expanded: list its addresses, one a line: {shown}")
    else:
        url, fallback = canonicalize("https://" + line), canonicalize("http://" + line)
    if url is None:
        raise TrawlUsageError(f"not a URL or a host: {shown}")
    if not checked:
        _check_host(urlsplit(url).netloc, allow_private)
    return Entry(number, url, fallback)


def _is_range(line: str) -> bool:
    """``10.0.0.0/24``: httpx expands it; trawl asks what is listed, no more."""
    try:
        ipaddress.ip_network(line, strict=False)
    except ValueError:
        return False
    return "/" in line


@lru_cache(maxsize=65536)  # a list's hosts repeat: 65,536 names cost about 10 MB
def _check_host(netloc: str, allow_private: bool) -> None:
    """The host read as ``-a domain=`` is (hosts repeat: each is checked once)."""
    netloc = netloc.rpartition("@")[2]
    host = urlsplit("//" + netloc).hostname or ""
    if "*" in host:
        raise TrawlUsageError(f"a wildcard is not a host: {netloc!r}")
    parse_target(host if ":" in host else netloc, allow_private=allow_private)


def _lines(source: str) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of each line, at most :data:`MAX_LINE` bytes each, UTF-8."""
    handle = _open(source)
    try:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                raise TrawlUsageError(f"-a list=: {_where(source)} line {number}: over {MAX_LINE} bytes")
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise TrawlUsageError(f"-a list=: {_where(source)} line {number}: not UTF-8") from None
            yield number, text
    finally:
        if source != STDIN:
            handle.close()


def _where(source: str) -> str:
    return "standard input" if source == STDIN else source


def _open(source: str) -> IO[bytes]:
    global _stdin_copy
    if source == STDIN:
        if _stdin_copy is None:
            if sys.stdin is not None and sys.stdin.isatty():  # httpx reads no list from a terminal either
                raise TrawlUsageError(
                    "-a list=-: standard input is a terminal: pipe the list in (... | trawl crawl probe"
                    " -a list=-) or give a file"
                )
            copy = tempfile.TemporaryFile()
            stdin = sys.stdin.buffer if sys.stdin is not None else None
            while stdin is not None and (chunk := stdin.read(1 << 20)):
                copy.write(chunk)
            _stdin_copy = copy
        _stdin_copy.seek(0)
        return _stdin_copy
    path = Path(source).expanduser()
    try:
        return path.open("rb")
    except OSError as exc:
        raise TrawlUsageError(f"-a list=: cannot read {source!r}: {exc.strerror or exc}") from None
