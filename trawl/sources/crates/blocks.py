"""A CSV stream cut into blocks of whole records, without parsing it in Python.

PostgreSQL's ``\\copy ... CSV`` quotes a field that holds a newline, and a
README in ``crates.csv`` holds many (and exceeds Python csv's 131,072-byte
default: crates.io#11656). A record ends at a newline outside quotes; whether a
newline is outside is the parity of the quotes before it (an escaped quote is
two, so parity holds). ``bytes.count`` and ``rfind`` run in C: finding the cut
costs a pass over the block, and polars then parses the block, quoted newlines
and all. A record longer than a block makes the block grow until it holds it, up
to :data:`MAX_RECORD_BYTES`: past that the table is no table of the db-dump (a
README, its longest field, is a few MB) and reading it fails. Without the bound,
a 255 KB dump whose ``crates.csv`` was one line of 256 MiB took the crawl to
2.0 GB of RSS and stored that line as a crate (the download's size limit counts
the compressed bytes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

#: Bytes read at a time: about 35,000 rows of ``versions.csv``, 200,000 of ``dependencies.csv``.
#: polars parses a block on every core; a bigger block costs memory and gains little.
BLOCK_BYTES = 8 << 20
#: The longest record (and small file read whole, :mod:`.prefetch`) the reader holds.
MAX_RECORD_BYTES = 64 << 20


def last_record_end(buffer: bytes) -> int:
    """The index just past the last newline outside quotes (0: none), the buffer
    starting at a record's start."""
    pos = buffer.rfind(b"\n")
    quotes = buffer.count(b'"', 0, pos) if pos >= 0 else 0
    while pos >= 0 and quotes % 2:
        # Inside a quoted field: the record ends before the quote that opened it,
        # so the next candidate is before the last quote we counted.
        opening = buffer.rfind(b'"', 0, pos)
        earlier = buffer.rfind(b"\n", 0, opening)
        quotes -= buffer.count(b'"', max(earlier, 0), pos)
        pos = earlier
    return pos + 1


def record_blocks(
    stream: BinaryIO, block_bytes: int = BLOCK_BYTES, max_record: int = MAX_RECORD_BYTES
) -> Iterator[tuple[bytes, bytes]]:
    """``(header, block)`` pairs: the header line, then blocks of whole records.

    The header is the first line (``\\copy`` never quotes a column name across
    lines). Raises ``ValueError`` for a table that ends inside a quoted field
    (a cut or corrupt table), or whose header or a record is over ``max_record`` bytes.

    A stream with ``read1`` (:class:`.tarstream.MemberData`) is read in the inflater's
    pieces, and a block is joined from them once: the bytes are copied once on their way
    from the inflater to polars (joining them into a buffer, then cutting the block out of
    it, copied each twice).
    """
    read = getattr(stream, "read1", stream.read)
    header = b""
    pending = b""  # the start of a record (or of the header) that has not ended yet
    while True:
        pieces: list[bytes] = []
        size = 0
        while size < block_bytes and (piece := read(block_bytes - size)):
            pieces.append(piece)
            size += len(piece)
        if not pieces:
            break
        if not header:
            buffer = b"".join([pending, *pieces])
            end = buffer.find(b"\n") + 1
            if not end:
                pending = _bounded(buffer, max_record)
                continue
            header, pieces, pending = buffer[:end], [buffer[end:]], b""
        block, pending = _cut(pending, pieces)
        if block:
            yield header, block
        pending = _bounded(pending, max_record)
    if pending.count(b'"') % 2:
        raise ValueError("the table ends inside a quoted field")
    if header and pending.strip():
        yield header, pending + b"\n"


def _cut(pending: bytes, pieces: list[bytes]) -> tuple[bytes, bytes]:
    """The whole records of ``pending`` and ``pieces`` as one block, and what is left after them.

    Usually the last piece holds the last record end (an even number of quotes before its
    last newline): the block is one join. Else (a quoted field across the last newline)
    the buffer is cut by :func:`last_record_end`."""
    tail = pieces[-1]
    pos = tail.rfind(b"\n")
    if pos >= 0:
        quotes = _quotes(pending) + sum(_quotes(p) for p in pieces[:-1]) + _quotes(tail, pos)
        if quotes % 2 == 0:
            return b"".join([pending, *pieces[:-1], memoryview(tail)[: pos + 1]]), tail[pos + 1 :]
    buffer = b"".join([pending, *pieces])
    end = last_record_end(buffer)
    return buffer[:end], buffer[end:]


def _quotes(data: bytes, end: int | None = None) -> int:
    """The quotes in ``data[:end]``, looked for before they are counted: ``find`` stops at the
    first (and skips a piece with none at memchr's speed) where ``count`` reads every byte at about
    2 GB/s. Tables of numbers and dates have none: ``version_downloads.csv``, 418 MB of a
    full-scale dump, cost 0.2 s of CPU to count."""
    if data.find(b'"', 0, end) < 0:
        return 0
    return data.count(b'"', 0, end)


def _bounded(pending: bytes, max_record: int) -> bytes:
    """``pending`` (a record not ended yet), unless it is past ``max_record``: then ``ValueError``."""
    if len(pending) > max_record:
        size = max_record >> 20
        raise ValueError(f"a record over {size} MiB (no end in sight): not a table of the db-dump")
    return pending
