"""The db-dump's tar read as a stream (``trawl/sources/crates/tarstream.py``): what tarfile reads.

The members' bytes bypass tarfile (no copies), its headers do not: every kind
of header tarfile reads (a GNU long name, a pax path, a ustar prefix, a directory, a link) must
give the same files with the same bytes, read whole or in pieces, skipped or
not; an archive cut inside a member is a ``tarfile.ReadError``, as tarfile says it.
"""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from trawl.sources.crates.dump import tar_members
from trawl.sources.crates.tarstream import tar_files

LONG = "2026-09-01-020003/" + "d" * 120 + "/data/crates.csv"


def archive(tar_format: int) -> tuple[bytes, dict[str, bytes]]:
    files = {
        "2026-09-01-020003/metadata.json": b'{"timestamp": "2026-09-01T02:00:03Z"}',
        "2026-09-01-020003/data/versions.csv": b"id,num\n" + b"".join(b"%d,0.1\n" % n for n in range(90000)),
        LONG: b"id,name\n1,a\n",
        "2026-09-01-020003/data/empty.csv": b"",
        "2026-09-01-020003/data/keywords.csv": bytes(range(256)) * 2049,  # not a multiple of 512
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tar_format) as tar:
        folder = tarfile.TarInfo("2026-09-01-020003")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("2026-09-01-020003/data/link.csv")
        link.type, link.linkname = tarfile.SYMTYPE, "versions.csv"
        tar.addfile(link)
    return out.getvalue(), files


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
@pytest.mark.parametrize("piece", [None, 500, 4096, 1 << 20])
def test_the_files_and_their_bytes_are_tarfiles(tar_format: int, piece: int | None) -> None:
    raw, files = archive(tar_format)
    read = {}
    for name, data in tar_members(io.BytesIO(gzip.compress(raw))):
        if piece is None:
            read[name] = data.read()
        else:
            parts = []
            while part := data.read1(piece):
                assert len(part) <= piece
                parts.append(part)
            read[name] = b"".join(parts)
    assert read == files


def test_members_not_read_are_skipped() -> None:
    raw, files = archive(tarfile.PAX_FORMAT)
    names = [name for name, _ in tar_files(io.BytesIO(raw))]
    assert names == list(files)


def test_an_archive_cut_inside_a_member_is_a_read_error() -> None:
    raw, _ = archive(tarfile.GNU_FORMAT)
    cut = raw[: len(raw) // 2]
    with pytest.raises(tarfile.ReadError, match="unexpected end of data"):
        for _, data in tar_files(io.BytesIO(cut)):
            data.read()
    with pytest.raises(tarfile.ReadError, match="unexpected end of data"):
        for _ in tar_files(io.BytesIO(cut)):  # skipped, not read: the same
            pass
