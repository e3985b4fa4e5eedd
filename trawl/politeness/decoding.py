"""A body read as a stream, decoded of its ``Content-Encoding`` step by step, and bounded.

A page's body is decoded whole by Scrapy's ``HttpCompressionMiddleware``
(:class:`~trawl.politeness.bounds.BoundedCompressionMiddleware`), which a body
streamed to a reader (the crates db-dump, :mod:`trawl.sources.crates.stream`)
never reaches: the response it sees is empty. A CDN, a mirror or a proxy may
still compress such a body on the fly (Scrapy asks for ``gzip, deflate, br,
zstd``; a ``.tar.gz`` is then gzip twice), and the reader would get bytes it
cannot read. :class:`Decoded` takes the encodings off as the reader reads, in
the order HTTP lists them (the last applied first off), the same encodings the
middleware decodes, and the same bound: at most ``limit`` bytes decoded (the
request's ``DOWNLOAD_MAXSIZE``), past which :class:`~trawl.politeness.bounds.ResponseTooLarge`
is raised, as for a page that inflates past it. Each read inflates at most
:data:`STEP` bytes per layer (zlib's ``max_length``, zstd's ``max_length``,
brotli's output limit), so a bomb costs one step of memory, never its size.

``identity`` is no encoding; any other this module cannot decode (``compress``,
``br`` without the brotli package) is :class:`UnknownEncoding`, said before any
byte is read. A body that does not decode is :class:`CorruptBody` whatever the
decompressor's own error type (``zlib.error``, ``brotli.error``, ``ZstdError``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Protocol

from trawl.politeness.bounds import MAXSIZE, ResponseTooLarge

#: Bytes one layer inflates per read (1 MiB: the db-dump reader's own step).
STEP = 1 << 20
#: What HTTP calls no encoding at all.
IDENTITY = {"identity", ""}


class Readable(Protocol):
    def read(self, size: int = -1) -> bytes: ...


class UnknownEncoding(ValueError):
    """A ``Content-Encoding`` this module cannot take off."""


class CorruptBody(EOFError):
    """A compressed body that does not decode (an ``EOFError``, as one cut short: both say the
    bytes that came are not the whole answer)."""


class _Layer:
    """One encoding taken off the bytes below it; ``read`` returns b"" once its stream ended."""

    def __init__(self, below: Readable) -> None:
        self.below = below
        self.ended = False

    def _more(self) -> bytes:
        return self.below.read(STEP)

    def read(self, size: int = -1) -> bytes:  # pragma: no cover - each layer has its own
        raise NotImplementedError


class _Zlib(_Layer):
    """gzip (one member or several, as ``gzip -c a b`` writes them) or deflate (zlib's format,
    or raw deflate as some servers send it: Scrapy accepts both)."""

    def __init__(self, below: Readable, gzip: bool) -> None:
        super().__init__(below)
        self.gzip = gzip
        self.wbits = 16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS
        self.inflater = zlib.decompressobj(self.wbits)
        self.started = False

    def read(self, size: int = -1) -> bytes:
        limit = STEP if size < 0 else max(1, min(size, STEP))
        while not self.ended:
            inflater = self.inflater
            if inflater.eof:
                rest = inflater.unused_data
                if not (self.gzip and (rest := rest or self.below.read(STEP))):
                    self.ended = True
                    break
                self.inflater = zlib.decompressobj(self.wbits)  # the next gzip member
                data = self._inflate(rest, limit)
            else:
                compressed = inflater.unconsumed_tail or self._more()
                if not compressed:
                    raise EOFError("the compressed answer ended before its end")
                data = self._inflate(compressed, limit)
            if data:
                return data
        return b""

    def _inflate(self, compressed: bytes, limit: int) -> bytes:
        if not self.started and not self.gzip:
            self.started = True
            try:
                return self.inflater.decompress(compressed, limit)
            except zlib.error:  # raw deflate, without zlib's header
                self.wbits = -zlib.MAX_WBITS
                self.inflater = zlib.decompressobj(self.wbits)
        self.started = True
        return self.inflater.decompress(compressed, limit)


class _Brotli(_Layer):
    """brotli's decompressor keeps what it could not put out yet: it is fed more only once an
    output came short of the limit (it wants input), so it never holds more than one step."""

    def __init__(self, below: Readable) -> None:
        super().__init__(below)
        import brotli

        self.decompressor = brotli.Decompressor()
        self.hungry = True
        self.exhausted = False

    def read(self, size: int = -1) -> bytes:
        limit = STEP if size < 0 else max(1, min(size, STEP))
        decompressor = self.decompressor
        while not self.ended:
            if decompressor.is_finished():
                self.ended = True
                break
            compressed = b""
            if self.hungry and not self.exhausted:
                compressed = self._more()
                self.exhausted = not compressed
            data = decompressor.process(compressed, output_buffer_limit=limit)
            self.hungry = len(data) < limit
            if data:
                return data
            if self.exhausted and not decompressor.is_finished():
                raise EOFError("the compressed answer ended before its end")
        return b""


class _Zstd(_Layer):
    def __init__(self, below: Readable) -> None:
        super().__init__(below)
        from backports import zstd  # Scrapy's own dependency (compression.zstd from Python 3.14)

        self.module = zstd
        self.decompressor = zstd.ZstdDecompressor()

    def read(self, size: int = -1) -> bytes:
        limit = STEP if size < 0 else max(1, min(size, STEP))
        while not self.ended:
            decompressor = self.decompressor
            if decompressor.eof:
                rest = decompressor.unused_data or self._more()
                if not rest:
                    self.ended = True
                    break
                self.decompressor = self.module.ZstdDecompressor()  # the next frame
                data = self.decompressor.decompress(rest, limit)
            else:
                compressed = self._more() if decompressor.needs_input else b""
                if not compressed and decompressor.needs_input:
                    raise EOFError("the compressed answer ended before its end")
                data = decompressor.decompress(compressed, limit)
            if data:
                return data
        return b""


def _available(name: str) -> bool:
    try:
        if name == "br":
            import brotli  # noqa: F401
        elif name == "zstd":
            from backports import zstd  # noqa: F401
    except ImportError:
        return False
    return True


def encodings_of(headers: list[bytes] | None) -> list[str]:
    """``Content-Encoding`` values in the order they were applied, ``identity`` left out;
    :class:`UnknownEncoding` for one that cannot be taken off."""
    names = [
        part.strip().lower()
        for value in headers or []
        for part in value.decode("latin-1").split(",")
        if part.strip().lower() not in IDENTITY
    ]
    for name in names:
        known = name in ("gzip", "x-gzip", "deflate") or (name in ("br", "zstd") and _available(name))
        if not known:
            raise UnknownEncoding(f"the answer came with Content-Encoding {name!r}, which cannot be decoded")
    return names


def _layer(name: str, below: Readable) -> _Layer:
    if name in ("gzip", "x-gzip"):
        return _Zlib(below, gzip=True)
    if name == "deflate":
        return _Zlib(below, gzip=False)
    if name == "br":
        return _Brotli(below)
    return _Zstd(below)


class Decoded:
    """``raw`` read with its ``encodings`` (as :func:`encodings_of` gives them) taken off,
    at most ``limit`` bytes decoded (0: no bound); ``wire`` tells the bytes received so far,
    for the line that says the answer was too large."""

    def __init__(
        self,
        raw: Readable,
        encodings: list[str],
        limit: int,
        wire: Callable[[], int] = lambda: 0,
        setting: str = MAXSIZE,
    ) -> None:
        top: Readable = raw
        for name in reversed(encodings):  # the last applied is the first off
            top = _layer(name, top)
        self._top = top
        self._limit = limit
        self._wire = wire
        self._setting = setting
        self.decoded = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._top.read(size)
        except (EOFError, OSError):  # cut short, or the transfer's own failure (the stream broke)
            raise
        except Exception as exc:  # noqa: BLE001 - each decompressor's own error: the body is corrupt
            raise CorruptBody(f"the compressed answer does not decode ({exc})") from None
        self.decoded += len(data)
        if self._limit and self.decoded > self._limit:
            raise ResponseTooLarge(self._limit, self.decoded, wire=self._wire(), setting=self._setting)
        return data
