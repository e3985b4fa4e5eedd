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
    """
    header = b""
    pending = b""
    while chunk := stream.read(block_bytes):
        buffer = pending + chunk if pending else chunk
        if not header:
            end = buffer.find(b"\n") + 1
            if not end:
                pending = _bounded(buffer, max_record)
                continue
            header, buffer = buffer[:end], buffer[end:]
        end = last_record_end(buffer)
        if end:
            yield header, buffer[:end]
        pending = _bounded(buffer[end:], max_record)
    if pending.count(b'"') % 2:
        raise ValueError("the table ends inside a quoted field")
    if header and pending.strip():
        yield header, pending + b"\n"


def _bounded(pending: bytes, max_record: int) -> bytes:
    """``pending`` (a record not ended yet), unless it is past ``max_record``: then ``ValueError``."""
    if len(pending) > max_record:
        size = max_record >> 20
        raise ValueError(f"a record over {size} MiB (no end in sight): not a table of the db-dump")
    return pending
