"""A streamed body decoded of its ``Content-Encoding`` step by step (``trawl/politeness/decoding.py``).

What a reader gets is the body exactly, whatever the encoding or the number of
gzip members or zstd frames; a step never inflates more than about :data:`STEP`; past
the limit, a corrupt body, an encoding it cannot take off: one exception each,
named for what the user is told. The zip reader's own inflate is bounded the same way.
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib

import pytest

from tests.servers.crates_http import encode
from trawl.politeness.bounds import ResponseTooLarge
from trawl.politeness.decoding import STEP, CorruptBody, Decoded, UnknownEncoding, encodings_of
from trawl.sources.crates.dump import TooLarge
from trawl.sources.crates.zipstream import zip_members

BODY = os.urandom(300_000) + bytes(3 << 20) + b"the end\n"


def read_all(decoded: Decoded, size: int = 64 << 10) -> tuple[bytes, int]:
    """Everything, and the largest single read."""
    parts, largest = [], 0
    while chunk := decoded.read(size):
        parts.append(chunk)
        largest = max(largest, len(chunk))
    return b"".join(parts), largest


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_each_encoding_gives_the_body_exactly_in_bounded_steps(encoding: str) -> None:
    raw = io.BytesIO(encode(BODY, encoding))
    body, largest = read_all(Decoded(raw, encodings_of([encoding.encode()]), limit=0), size=-1)
    assert body == BODY
    assert largest <= 2 * STEP  # brotli's output limit is a hint it may pass by a little


def test_layers_come_off_last_applied_first_and_identity_is_none() -> None:
    """``Content-Encoding: gzip, br``: gzip was applied first, br last."""
    sent = encode(encode(BODY, "gzip"), "br")
    names = encodings_of([b"gzip, identity", b"br"])
    assert names == ["gzip", "br"]
    assert read_all(Decoded(io.BytesIO(sent), names, limit=0))[0] == BODY


def test_raw_deflate_and_several_gzip_members_are_read_as_scrapy_reads_them() -> None:
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    sent = raw_deflate.compress(BODY) + raw_deflate.flush()
    assert read_all(Decoded(io.BytesIO(sent), ["deflate"], limit=0))[0] == BODY
    two = gzip.compress(BODY[:1000]) + gzip.compress(BODY[1000:])
    assert read_all(Decoded(io.BytesIO(two), ["gzip"], limit=0))[0] == BODY


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_inflating_past_the_limit_stops_there(encoding: str) -> None:
    bomb = encode(bytes(64 << 20), encoding)
    decoded = Decoded(io.BytesIO(bomb), [encoding], limit=1 << 20, wire=lambda: len(bomb))
    with pytest.raises(ResponseTooLarge) as raised:
        read_all(decoded)
    assert raised.value.limit == 1 << 20
    assert raised.value.received <= (1 << 20) + 2 * STEP
    assert "once decompressed" in str(raised.value)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_corrupt_or_cut_body_is_an_eof_error(encoding: str) -> None:
    sent = encode(BODY, encoding)
    corrupt = bytes(8) + sent[8:]  # no format's header (zstd has no checksum of its data by default)
    for broken in (corrupt, sent[: len(sent) // 2]):
        with pytest.raises(EOFError):
            read_all(Decoded(io.BytesIO(broken), [encoding], limit=0))
    assert issubclass(CorruptBody, EOFError)


def test_an_encoding_that_cannot_be_taken_off_is_refused_by_name() -> None:
    with pytest.raises(UnknownEncoding, match="'compress'"):
        encodings_of([b"compress"])


def test_a_zip_member_inflating_past_crates_dump_max_bytes_stops_in_bounded_steps() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("2026-09-01-020003/data/versions.csv", bytes(64 << 20))
    out.seek(0)
    with pytest.raises(TooLarge, match="CRATES_DUMP_MAX_BYTES"):
        for _, member in zip_members(out, max_bytes=16 << 20):
            while chunk := member.read(1 << 20):
                assert len(chunk) <= 1 << 20


def test_a_gzipped_day_of_the_archive_inflates_bounded_and_whole() -> None:
    """``-a history=``: a day's file is read whole (not streamed), but its gzip was inflated
    by ``gzip.decompress`` without a bound: a 300 KB bomb was 300 MiB in memory."""
    from trawl.sources.crates.archive import ArchiveError, parse_day

    rows = b"version_id,downloads,date\n" + b"".join(b"%d,%d,2026-01-02\n" % (n, n) for n in range(1000))
    two_members = gzip.compress(rows[:5000]) + gzip.compress(rows[5000:])
    assert parse_day(two_members, "2026-01-02").height == 1000
    with pytest.raises(ArchiveError, match="inflates past 256 MiB"):
        parse_day(gzip.compress(rows + bytes(300 << 20), compresslevel=1), "2026-01-02")
