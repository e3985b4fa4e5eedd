"""The crates.io db-dump read as a stream: no table whole in memory, nothing on disk.

The ``.zip`` variant's members come from :mod:`.zipstream`; the rest is the same.

The tarball holds one folder named for its time (``2026-09-01-020003/``) with
``metadata.json`` and ``data/<table>.csv``. A gzip'd tar can only be read in
order (crates.io#2078), so it is read once, in order (inflated 1 MiB at a time by
:class:`Gunzipped`, so that a bomb is never inflated whole; its headers read by ``tarfile``,
:mod:`.tarstream`):
each table of :data:`~.tables.TABLES` is cut into blocks of whole records
(:mod:`.blocks`) on a thread of its own that inflates ahead (:mod:`.prefetch`),
each block parsed by polars and converted in whole columns (:mod:`.tables`),
and handed on as it is read; every other member is skipped unread.
:func:`read_dump` is a plain generator: the spider steps it in a thread, one
batch at a time, so the pipeline's pace (and the prefetch's bound) bounds what
is in memory.

Bounded as a page is: the answer by ``DOWNLOAD_MAXSIZE`` on the wire and once
its ``Content-Encoding`` is taken off (:mod:`.stream`), the archive by
:data:`SETTINGS`' ``CRATES_DUMP_MAX_BYTES``: the bytes it inflates to, skipped
members included (tarfile inflates what it skips). Past it the reading stops in
one :class:`TooLarge` line: a bomb of 1 MB inflating to terabytes costs the
bound's worth of CPU, never memory or disk.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import BinaryIO
from zipfile import BadZipFile

import orjson
import polars as pl

from trawl.politeness.bounds import MAXSIZE, ResponseTooLarge, size_text
from trawl.politeness.decoding import UnknownEncoding
from trawl.records.batches import Batch
from trawl.settings_checks import Setting, whole
from trawl.sources.crates.blocks import BLOCK_BYTES
from trawl.sources.crates.inflate import INFLATE_ERRORS, decompressobj
from trawl.sources.crates.prefetch import Kind, Prefetched, StopSignal
from trawl.sources.crates.tables import TABLES, DumpError, read_block
from trawl.sources.crates.tarstream import tar_files

_FOLDER = re.compile(r"(\d{4})-(\d\d)-(\d\d)-(\d\d)(\d\d)(\d\d)")
#: The tables without which a dump is no snapshot of the registry: it is not switched to.
CORE_TABLES = ("crates", "versions", "dependencies")
_MEMBER = re.compile(r"(?P<top>[^/]+)/(?:(?P<meta>metadata\.json)|data/(?P<table>[a-z_]+)\.csv)")


class NotAnArchive(DumpError):
    """What came is not an archive at all; ``html``: an HTML page (an error page served with 200)."""

    def __init__(self, message: str, html: bool = False) -> None:
        super().__init__(message)
        self.html = html


#: What the real dump inflates to, with room for years of growth (1.7 GiB compressed in
#: September 2026, about 5x that inflated): a bound on bombs, not on the registry.
MAX_BYTES = 64 << 30
SETTINGS = {
    "CRATES_DUMP_MAX_BYTES": Setting(
        MAX_BYTES,
        whole(1 << 20, None),
        "bytes the crates db-dump's archive may inflate to (its members, skipped ones too), at least 1 MiB",
    ),
}


class TooLarge(DumpError):
    """The answer or the archive passed its bound: the reading stopped there."""


class _Counted:
    """The archive's inflated bytes, counted; :class:`TooLarge` past ``limit``."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        self._raw = raw
        self._limit = limit
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.total += len(data)
        if self.total > self._limit:
            raise too_large(self._limit)
        return data


def too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"the archive inflates past CRATES_DUMP_MAX_BYTES ({size_text(limit, exact=True)}); not read further"
    )


class _Prefixed:
    """A stream whose first bytes were read to look at them, read again from the start."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0 or size >= len(self._head):
                head, self._head = self._head, b""
                more = self._rest.read(size - len(head)) if size < 0 or size > len(head) else b""
                return head + more
            head, self._head = self._head[:size], self._head[size:]
            return head
        return self._rest.read(size)


def looked_at(stream: BinaryIO, expected: str) -> BinaryIO:
    """``stream`` as it was, once its first bytes said it is no HTML page (:class:`NotAnArchive`)."""
    head = b""
    while len(head) < 512 and (chunk := stream.read(512 - len(head))):
        head += chunk
    if head.lstrip()[:1] == b"<":
        raise NotAnArchive(f"the server sent an HTML page instead of {expected}", html=True)
    return _Prefixed(head, stream)


@dataclass
class DumpBatch:
    """Rows of one table, as the record kind they become, with where they came from."""

    batch_type: type[Batch]
    frame: pl.DataFrame
    table: str
    #: The dump's folder name (its export time), and this table's block number.
    snapshot: str
    number: int
    #: The whole block this batch was cut from, on its first batch only (None on the others).
    block: pl.DataFrame | None = None
    #: The file its rows were staged in for the store, if they were (:mod:`trawl.stores.sqlite.prestage`).
    stage_file: str | None = None
    #: ... and those rows, one per key (what the store returns for the batch).
    staged_rows: pl.DataFrame | None = None

    @property
    def page(self) -> str:
        """The page key of the ledger: unique per dump, table and block."""
        return f"{self.snapshot}/{self.table}#{self.number}"


@dataclass
class DumpInfo:
    """What the dump says of itself, filled in as its members go by."""

    snapshot: str = ""
    timestamp: str = ""
    commit: str = ""
    tables: int = 0
    total_downloads: int | None = None
    #: The tables read (their members seen, rows or not).
    seen: set[str] = field(default_factory=set)

    @property
    def time(self) -> datetime | None:
        """When the dump was made: ``metadata.json``'s timestamp, else the folder's name."""
        return parse_time(self.timestamp) or parse_time(self.snapshot)

    def missing(self, tables: tuple[str, ...] = CORE_TABLES) -> list[str]:
        """The members of ``tables`` the dump did not have (``2026-09-01-020003/data/versions.csv``)."""
        return [f"{self.snapshot}/data/{table}.csv" for table in tables if table not in self.seen]


class NotNewer(DumpError):
    """The dump is not newer than the one the store holds: nothing to load."""


def parse_time(text: str) -> datetime | None:
    """``2026-09-01T02:00:03.5Z``, ``...+00:00`` or a folder name ``2026-09-01-020003``, in UTC."""
    folder = _FOLDER.fullmatch(text or "")
    if folder:
        return datetime(*(int(part) for part in folder.groups()), tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat((text or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=parsed.tzinfo or UTC).astimezone(UTC)


def iso(moment: datetime) -> str:
    """A time as the crates.io API writes it: ``2026-09-01T02:00:03Z`` (micros only when some)."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").removesuffix(".000000")
    return text + "Z"


#: Bytes of the dump inflated at a time (at most, per read).
INFLATE_STEP = 1 << 20
#: Compressed bytes read from the download at a time: about what one step inflates from (the
#: dump inflates about 5 to 1). The input a step leaves is copied into ``unconsumed_tail`` at
#: every step: reads of 1 MiB inflated the full-scale dump's 1.5 GB in 1.4-1.6 s of CPU, reads
#: of 256 KiB (or 128 KiB) in 1.1 s.
COMPRESSED_STEP = 256 << 10


class Gunzipped:
    """A gzip stream read inflated, at most :data:`INFLATE_STEP` bytes inflated per read.

    tarfile's own ``r|gz`` inflates each compressed read whole: one 1 MiB read of a
    bomb became up to 1 GiB at once (a 255 KB dump inflating to 256 MiB took the reader
    to 826 MB of RSS). Here the compressed bytes not inflated yet wait in zlib's
    ``unconsumed_tail``. The stream ends with the gzip member (the tar's end is inside it).
    """

    def __init__(self, raw: BinaryIO, step: int = INFLATE_STEP, read_step: int = COMPRESSED_STEP) -> None:
        self._raw = raw
        self._step = step
        self._read_step = read_step
        self._inflater = decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer

    def read(self, size: int = -1) -> bytes:
        limit = self._step if size is None or size < 0 else max(1, min(size, self._step))
        inflater = self._inflater
        while not inflater.eof:
            compressed = inflater.unconsumed_tail or self._raw.read(self._read_step)
            if not compressed:
                raise EOFError("the compressed stream ended before its end")
            data = inflater.decompress(compressed, limit)
            if data:
                return data
        return b""


def tar_members(stream: BinaryIO, max_bytes: int | None = None) -> Iterator[tuple[str, BinaryIO]]:
    """``(name, readable)`` for every file of a tar.gz, in order, read once (inflated by
    :class:`Gunzipped`, the members' bytes handed on as inflated: :mod:`.tarstream`). At most
    ``max_bytes`` inflated (:class:`TooLarge`).

    A plain tar is read as such: an object store that labels the ``.tar.gz`` itself
    ``Content-Encoding: gzip`` has its one gzip layer taken off as an encoding (:mod:`.stream`)."""
    head = b""
    while len(head) < 2 and (chunk := stream.read(2 - len(head))):
        head += chunk
    rest = _Prefixed(head, stream)
    tar: BinaryIO = Gunzipped(rest) if head == b"\x1f\x8b" else rest  # type: ignore[assignment]
    if max_bytes:
        tar = _Counted(tar, max_bytes)  # type: ignore[assignment]
    yield from tar_files(tar)  # type: ignore[misc]


def _classify(name: str) -> Kind:
    """What the reader wants of an archive member: a table's records, a small file whole, or nothing."""
    found = _MEMBER.fullmatch(name)
    if not found:
        return None
    if found["meta"] or found["table"] == "metadata":
        return "whole"
    return "blocks" if found["table"] in TABLES else None


def read_dump(
    stream: BinaryIO,
    info: DumpInfo,
    batch_rows: int = 50_000,
    block_bytes: int = BLOCK_BYTES,
    newer_than: datetime | None = None,
    members: Callable[[BinaryIO], Iterator[tuple[str, BinaryIO]]] = tar_members,
    expected: str = "a tar.gz",
    stop: StopSignal | None = None,
    max_bytes: int | None = None,
) -> Iterator[DumpBatch]:
    """Batches of at most ``batch_rows`` rows, table by table in archive order.

    ``members`` lists the archive's files (:func:`tar_members`, or the zip's:
    :func:`.zipstream.zip_members`), on the thread of :class:`.prefetch.Prefetched`,
    which inflates the archive and cuts its tables into blocks ahead of this
    generator's parsing. Raises :class:`NotNewer` before the first table when the
    dump was made at or before ``newer_than``; :class:`DumpError` for an archive
    that is cut short or corrupt, or a table that cannot be read (named with what
    is wrong). A file outside the dump's layout is skipped unread. ``stop``, once set
    (from any thread), ends the reading: :class:`.prefetch.Stopped` is raised. ``max_bytes``
    bounds what the archive inflates to; an answer past its bound (``DOWNLOAD_MAXSIZE`` once
    decoded) or in an encoding that cannot be decoded is :class:`TooLarge` / :class:`DumpError`.
    """
    lister = partial(members, max_bytes=max_bytes) if max_bytes else members
    prefetched: Prefetched | None = None
    table = ""
    numbers: dict[str, int] = {}
    try:
        prefetched = Prefetched(looked_at(stream, expected), lister, _classify, block_bytes, stop=stop)
        for event in prefetched.events():
            if event[0] == "member":
                found = _MEMBER.fullmatch(event[1])
                assert found is not None
                info.snapshot = info.snapshot or found["top"]
                table = "" if found["meta"] else found["table"]
                if event[2] == "blocks":
                    if not info.tables and newer_than and info.time is not None and info.time <= newer_than:
                        raise NotNewer(f"the db-dump {info.snapshot} is not newer than the one stored")
                    info.tables += 1
                    info.seen.add(table)
            elif event[0] == "whole":
                if table == "metadata":
                    _read_total(event[1], info)
                else:
                    _read_metadata(event[1], info)
            else:
                yield from _read_block(event[1], event[2], table, info.snapshot, batch_rows, numbers)
    except ResponseTooLarge as exc:
        why = " (SOURCE_DOWNLOAD_MAXSIZE sets this source's limit)" if exc.setting == MAXSIZE else ""
        raise TooLarge(f"{exc.describe()}; not read further{why}") from None
    except UnknownEncoding as exc:
        raise DumpError(str(exc)) from None
    except ValueError as exc:
        if isinstance(exc, DumpError):
            raise
        raise DumpError(f"{table}.csv: {exc}") from None
    except (tarfile.TarError, BadZipFile, EOFError, *INFLATE_ERRORS, OSError) as exc:
        raise DumpError(f"the archive is cut short or corrupt ({exc or type(exc).__name__})") from None
    finally:
        if prefetched is not None:
            prefetched.close()
    if not info.snapshot:
        raise DumpError("not a crates.io db-dump: no <date>/data/*.csv or metadata.json in the archive")


def _read_total(raw: bytes, info: DumpInfo) -> None:
    """``metadata.csv``: one row, ``total_downloads``."""
    frame = read_block(b"", raw, "metadata") if raw.strip() else pl.DataFrame()
    if "total_downloads" in frame.columns and frame.height:
        info.total_downloads = frame.select(pl.col("total_downloads").cast(pl.Int64, strict=False)).item(0, 0)


def _read_metadata(raw: bytes, info: DumpInfo) -> None:
    try:
        meta = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise DumpError("metadata.json is not JSON") from None
    if isinstance(meta, dict):
        info.timestamp = str(meta.get("timestamp") or "")
        info.commit = str(meta.get("crates_io_commit") or "")


def _read_block(
    header: bytes, block: bytes, table: str, snapshot: str, batch_rows: int, numbers: dict[str, int]
) -> Iterator[DumpBatch]:
    """One block of a table parsed and converted whole, handed on in batches of ``batch_rows``."""
    batch_type, convert = TABLES[table]
    frame = convert(read_block(header, block, table))
    for start in range(0, frame.height, batch_rows):
        numbers[table] = number = numbers.get(table, 0) + 1
        batch = DumpBatch(batch_type, frame.slice(start, batch_rows), table, snapshot, number)
        # The whole block with its first batch: the raw layer writes it as one file.
        batch.block = frame if start == 0 else None
        yield batch
