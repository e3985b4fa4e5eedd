"""A tar read once, in order, its members' bytes handed on as the inflater made them.

``tarfile``'s stream mode (``r|``) copied every byte of the dump three times on
its way to a table's blocks (its ``_Stream`` joins and slices each read, its
member file copies into a buffer again): 0.54 s of CPU for the 371 MB of a scale
0.25 dump, more than ISA-L takes to inflate it (0.37 s). Here ``tarfile`` still
reads every header (``ustar``, GNU long names, pax, checksums: its rules, its
errors), through :class:`Forward`, a stream that can only go forward, which
``TarFile`` in plain ``r`` mode is content with (it only seeks ahead, past what
it skips); a member's bytes are read by :class:`MemberData`, whose ``read1``
returns the inflater's piece itself when the piece lies inside the member (no copy).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from typing import BinaryIO

#: Bytes read from the inflated stream at a time (the inflater's step).
PIECE = 1 << 20


class Forward:
    """A stream read in pieces that seeks only ahead (or back inside the piece it holds)."""

    def __init__(self, raw: BinaryIO, piece: int = PIECE) -> None:
        self._raw = raw
        self._piece_size = piece
        self._piece = b""
        self._at = 0  # in the piece
        self._start = 0  # the piece's first byte in the stream

    def tell(self) -> int:
        return self._start + self._at

    def _fill(self) -> bool:
        """A new piece once this one is read; False at the stream's end."""
        if self._at < len(self._piece):
            return True
        self._start += len(self._piece)
        self._piece, self._at = self._raw.read(self._piece_size), 0
        return bool(self._piece)

    def read1(self, size: int) -> bytes:
        """At most ``size`` bytes of the piece held (the piece itself when it is all wanted)."""
        if size <= 0 or not self._fill():
            return b""
        piece, at = self._piece, self._at
        if at == 0 and len(piece) <= size:
            self._at = len(piece)
            return piece
        end = min(len(piece), at + size)
        self._at = end
        return piece[at:end]

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes, fewer only at the stream's end (as a file's ``read``)."""
        if size is None or size < 0:
            raise io.UnsupportedOperation("a tar stream is read in sizes")
        parts: list[bytes] = []
        while size > 0 and (part := self.read1(size)):
            parts.append(part)
            size -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self.tell() + offset
        if whence not in (io.SEEK_SET, io.SEEK_CUR) or target < self._start:
            raise io.UnsupportedOperation("a tar stream is read once, in order")
        while target > self._start + len(self._piece):
            self._at = len(self._piece)
            if not self._fill():
                return self.tell()  # past the end: the read after it says so (tarfile: ReadError)
        self._at = target - self._start
        return target


class MemberData:
    """One member's bytes, read from :class:`Forward` where the header left it."""

    def __init__(self, stream: Forward, size: int) -> None:
        self._stream = stream
        self._left = size

    def read1(self, size: int = -1) -> bytes:
        want = self._left if size is None or size < 0 else min(size, self._left)
        data = self._stream.read1(want)
        if want and not data:
            raise tarfile.ReadError("unexpected end of data")
        self._left -= len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        want = self._left if size is None or size < 0 else min(size, self._left)
        data = self._stream.read(want)
        if len(data) != want:
            raise tarfile.ReadError("unexpected end of data")
        self._left -= want
        return data


def tar_files(stream: BinaryIO) -> Iterator[tuple[str, MemberData]]:
    """``(name, data)`` for every regular file of an (inflated) tar stream, in order; what a
    member's data leaves unread is skipped when the next is asked for."""
    forward = Forward(stream)
    archive = tarfile.TarFile(fileobj=forward, mode="r")  # type: ignore[arg-type]
    for member in archive:
        if member.isreg():
            forward.seek(member.offset_data)
            yield member.name, MemberData(forward, member.size)
