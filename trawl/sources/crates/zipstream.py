"""The ``db-dump.zip`` variant read as a stream, member by member, from its local headers.

crates.io's zip compresses each file on its own (crates.io PR #8748), so one
table can be inflated without the others: the members the loader does not read
(``export.sql``, ``reserved_crate_names.csv``...) are skipped without being
inflated, each needed one inflated block by block as its records are parsed.
Python's ``zipfile`` needs the central directory at the archive's end, so a
seekable file: the whole archive on disk or in memory, which the dump must never
be. The local headers say the same per member (name, method, sizes) as it comes.

Read here: deflate (8) and stored (0) members; sizes in the local header, in
its Zip64 extra field, or (flag bit 3) only in a data descriptor after the data,
where a deflate stream's own end says where the data ends. The central
directory ends the reading. Raises ``zipfile.BadZipFile`` for anything else.
With ``max_bytes``, what the members read inflate to is counted (a member skipped
unread costs nothing), and the reading stops past it (:class:`.dump.TooLarge`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO
from zipfile import BadZipFile

from trawl.sources.crates.dump import too_large
from trawl.sources.crates.inflate import decompressobj

_LOCAL = b"PK\x03\x04"
_CENTRAL = (b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06")
_DESCRIPTOR = b"PK\x07\x08"
CHUNK = 1 << 20


class _Source:
    """The archive's bytes with a little lookahead (what a deflate stream read past its end)."""

    def __init__(self, stream: BinaryIO, max_bytes: int | None = None) -> None:
        self.stream = stream
        self.pending = b""
        self.max_bytes = max_bytes
        self.inflated = 0

    def count(self, size: int) -> None:
        """``size`` more bytes inflated; the bound's error past ``max_bytes``."""
        self.inflated += size
        if self.max_bytes and self.inflated > self.max_bytes:
            raise too_large(self.max_bytes)

    def read(self, size: int) -> bytes:
        if self.pending:
            out, self.pending = self.pending[:size], self.pending[size:]
            return out
        return self.stream.read(size)

    def exact(self, size: int) -> bytes:
        parts, got = [], 0
        while got < size:
            chunk = self.read(size - got)
            if not chunk:
                raise BadZipFile("the archive ends inside a member")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def skip(self, size: int) -> None:
        while size > 0:
            chunk = self.read(min(size, CHUNK))
            if not chunk:
                raise BadZipFile("the archive ends inside a member")
            size -= len(chunk)


class _Member:
    """One member's inflated bytes, read as a file; :meth:`finish` goes past what is left."""

    def __init__(self, source: _Source, method: int, size: int | None, zip64: bool) -> None:
        self.source = source
        self.method = method
        self.left = size  # compressed bytes still to read (None: until the deflate stream ends)
        self.zip64 = zip64
        self.inflater = decompressobj(-15) if method == 8 else None
        self.out = b""
        self.done = False

    def read(self, size: int = -1) -> bytes:
        while not self.done and (size < 0 or len(self.out) < size):
            self._more()
        if size < 0:
            out, self.out = self.out, b""
        else:
            out, self.out = self.out[:size], self.out[size:]
        return out

    def _more(self) -> None:
        """At most :data:`CHUNK` more bytes of the member: a deflate stream's input not inflated
        yet waits in zlib's ``unconsumed_tail`` (1 MiB of a bomb inflates to about 1 GiB)."""
        tail = self.inflater.unconsumed_tail if self.inflater is not None else b""
        if tail:
            raw = tail
        else:
            want = CHUNK if self.left is None else min(CHUNK, self.left)
            raw = self.source.read(want) if want else b""
            if self.left is not None:
                self.left -= len(raw)
            if not raw and (self.left or self.left is None):
                raise BadZipFile("the archive ends inside a member")
        if self.inflater is None:
            self.out += raw
            self.source.count(len(raw))
        else:
            data = self.inflater.decompress(raw, CHUNK)
            self.source.count(len(data))
            self.out += data
            if self.inflater.eof:
                if self.left is None:
                    self.source.pending = self.inflater.unused_data + self.source.pending
                    self._descriptor()
                self.done = True
                return
            if self.inflater.unconsumed_tail:
                return
        if self.left == 0:
            self.done = True

    def _descriptor(self) -> None:
        head = self.source.exact(4)
        if head != _DESCRIPTOR:
            self.source.pending = head + self.source.pending  # the signature is optional
        self.source.exact(4 + (16 if self.zip64 else 8))

    def finish(self) -> None:
        """Past the rest of the member: skipped unread when its size is known, else inflated."""
        self.out = b""
        if self.left is not None and not self.done:
            self.source.skip(self.left)
            self.left, self.done = 0, True
        while not self.done:
            self._more()
            self.out = b""


def zip_members(stream: BinaryIO, max_bytes: int | None = None) -> Iterator[tuple[str, BinaryIO]]:
    """``(name, readable)`` for every file of a zip, in archive order, read once; at most
    ``max_bytes`` inflated (:class:`.dump.TooLarge`)."""
    source = _Source(stream, max_bytes)
    while True:
        signature = source.read(4)
        if len(signature) < 4:
            signature += source.exact(4 - len(signature)) if signature else b""
        if not signature or signature in _CENTRAL:
            return
        if signature != _LOCAL:
            raise BadZipFile(f"not a zip local header ({signature!r})")
        _, flags, method, _, _, _, csize, usize, name_len, extra_len = struct.unpack(
            "<HHHHHIIIHH", source.exact(26)
        )
        name = source.exact(name_len).decode("utf-8", "replace")
        extra = source.exact(extra_len)
        zip64 = False
        if 0xFFFFFFFF in (csize, usize):
            csize, zip64 = _zip64_size(extra, usize, csize), True
        if method not in (0, 8):
            raise BadZipFile(f"{name}: compression method {method} (only deflate and stored are read)")
        deferred = bool(flags & 0x08)
        if deferred and method == 0:
            raise BadZipFile(f"{name}: a stored member whose size comes after it")
        member = _Member(source, method, None if deferred else csize, zip64)
        if not name.endswith("/"):
            yield name, member  # type: ignore[misc]
        member.finish()


def _zip64_size(extra: bytes, usize: int, csize: int) -> int:
    """The compressed size from the Zip64 extra field (0x0001: the 64-bit sizes the header lacks)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack("<HH", extra[pos : pos + 4])
        body = extra[pos + 4 : pos + 4 + length]
        if tag == 1:
            values = [v[0] for v in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
            if usize == 0xFFFFFFFF:
                values = values[1:]
            if csize == 0xFFFFFFFF and values:
                return values[0]
            return csize
        pos += 4 + length
    raise BadZipFile("a Zip64 member without its Zip64 sizes")
