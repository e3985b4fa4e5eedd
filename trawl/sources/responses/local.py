"""Responses a user has already: a folder of saved responses, or WARC files (``-a files=``, ``-a warc=``).

Both are read into the same index as downloads, their bytes copied into
``FILES_STORE`` under their content hash, so a miner reads one layout
whatever the origin. Nothing is downloaded.

* **A folder** (``-a files=DIR``), e.g. a waymore results folder: waymore's
  ``index.txt`` lines (``<hash>,<archive URL>,<time>``) give each file's URL
  and capture time (the archive URL is ``.../web/<timestamp>[flags]/<url>``);
  a file it does not list is indexed as ``file:<relative path>`` at its
  modification time. Symlinks are not followed (a link in a saved folder
  could point anywhere), waymore's own lists (``waymore.txt``,
  ``index.txt``, ``*.tmp``) are not responses.
* **WARC files** (``-a warc=PATH``, a file or a folder of ``*.warc``/``*.warc.gz``),
  read with warcio: every ``response`` record, its payload decoded of its
  transfer and content encodings, its status and type from its HTTP headers.

Readers yield chunks of rows (at most :data:`CHUNK_ROWS` rows or
:data:`CHUNK_BYTES` bytes) so the spider can step them in a thread and hand
each to the pipeline as one batch.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trawl.sources.responses.naming import content_digest
from trawl.sources.target import Target

CHUNK_ROWS = 500
CHUNK_BYTES = 32 << 20
_ARCHIVE_URL = re.compile(r"/web/(\d{14})[a-z_]*/(.+)$")
#: waymore's own files in a results folder: lists, not responses.
WAYMORE_FILES = frozenset({"index.txt", "waymore.txt", "waymore.new", "responses.tmp", "continueresp.tmp"})


@dataclass
class LocalCounts:
    """What reading skipped, said in the run's summary."""

    skipped: int = 0
    too_big: int = 0
    reasons: list[str] = field(default_factory=list)

    def skip(self, why: str) -> None:
        self.skipped += 1
        if len(self.reasons) < 5:
            self.reasons.append(why)


def host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _entry(
    url: str, timestamp: str, status: str | None, mime: str | None, data: bytes, origin: str
) -> dict[str, Any]:
    return {
        "url": url,
        "timestamp": timestamp,
        "host": host_of(url),
        "digest": content_digest(data),
        "status": status,
        "mime": mime,
        "length": len(data),
        "origin": origin,
        "payload": data,
    }


def _chunks(entries: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        chunk.append(entry)
        size += entry["length"]
        if len(chunk) >= CHUNK_ROWS or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _in_scope(url: str, target: Target) -> bool:
    host = host_of(url)
    return host is None or url.startswith("file:") or target.in_scope(host)


def read_waymore_index(folder: Path) -> dict[str, tuple[str, str]]:
    """waymore's ``index.txt``: file stem -> (URL, capture timestamp)."""
    index: dict[str, tuple[str, str]] = {}
    try:
        text = (folder / "index.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return index
    for line in text.splitlines():
        parts = line.strip().split(",", 2)
        if len(parts) < 2 or not parts[0]:
            continue
        archive = parts[1].strip()
        found = _ARCHIVE_URL.search(archive)
        if found:
            index[parts[0].strip()] = (found.group(2), found.group(1))
        else:
            digits = re.sub(r"\D", "", parts[2] if len(parts) > 2 else "")[:14]
            index[parts[0].strip()] = (archive, digits if len(digits) == 14 else "")
    return index


def _stamp(epoch: float) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(epoch))


def read_folder(
    folder: Path, target: Target, max_bytes: int, counts: LocalCounts
) -> Iterator[list[dict[str, Any]]]:
    """Chunks of entries from a folder of saved responses."""
    index = read_waymore_index(folder)

    def entries() -> Iterator[dict[str, Any]]:
        for root, dirs, files in os.walk(folder, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                path = Path(root, name)
                relative = path.relative_to(folder).as_posix()
                if name in WAYMORE_FILES or name.endswith(".tmp") or name.startswith("."):
                    continue
                if path.is_symlink() or not path.is_file():
                    counts.skip(f"{relative}: a symlink or not a file")
                    continue
                stat = path.stat()
                if stat.st_size > max_bytes:
                    counts.too_big += 1
                    continue
                url, timestamp = index.get(path.name.split(".", 1)[0], (f"file:{relative}", ""))
                if not _in_scope(url, target):
                    counts.skip(f"{relative}: {host_of(url)} is outside {target.domain}")
                    continue
                try:
                    data = path.read_bytes()
                except OSError as exc:
                    counts.skip(f"{relative}: {exc.strerror}")
                    continue
                yield _entry(url, timestamp or _stamp(stat.st_mtime), None, None, data, "files")

    return _chunks(entries())


def warc_paths(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.name.endswith((".warc", ".warc.gz")) and p.is_file())
    return [path]


def _warc_stamp(date: str | None) -> str:
    try:
        moment = datetime.fromisoformat((date or "").replace("Z", "+00:00"))
    except ValueError:
        return ""
    return moment.astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")


def read_warc(
    path: Path, target: Target, max_bytes: int, counts: LocalCounts
) -> Iterator[list[dict[str, Any]]]:
    """Chunks of entries from the ``response`` records of WARC files."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    def entries() -> Iterator[dict[str, Any]]:
        for file in warc_paths(path):
            try:
                with file.open("rb") as stream:
                    for record in ArchiveIterator(stream):
                        if record.rec_type != "response":
                            continue
                        url = record.rec_headers.get_header("WARC-Target-URI") or ""
                        if not url or not _in_scope(url, target):
                            counts.skip(f"{file.name}: {url or 'a record without a URI'}")
                            continue
                        data = record.content_stream().read(max_bytes + 1)
                        if len(data) > max_bytes:
                            counts.too_big += 1
                            continue
                        http = record.http_headers
                        status = http.get_statuscode() if http is not None else None
                        mime = http.get_header("Content-Type") if http is not None else None
                        stamp = _warc_stamp(record.rec_headers.get_header("WARC-Date"))
                        mime = mime.split(";", 1)[0].strip() if mime else None
                        yield _entry(url, stamp, status, mime, data, "warc")
            except (ArchiveLoadFailed, OSError, ValueError) as exc:
                why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
                counts.skip(f"{file.name}: not a readable WARC ({why})")

    return _chunks(entries())
