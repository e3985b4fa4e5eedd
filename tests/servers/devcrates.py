"""The dev server's crates.io: a generated db-dump over HTTP (tar.gz and zip), and the API over it.

The dump is ``bench/crates_gen.py``'s (the real layout and PostgreSQL's CSV
conventions) at a small scale: 0.002 gives 400 crates, 4,000 versions and
24,000 dependencies, 0.6 MB compressed, made in about a second. It is written
once into a temporary folder and served as static.crates.io serves it, at
``/db-dump.tar.gz`` and ``/db-dump.zip``, so ``CRATES_DUMP_URL`` is a plain
``http://`` URL. :class:`~tests.servers.crates_api.FakeCratesApi` serves the
same crates and versions, eight of them updated the day after the dump (what
``-a mode=incremental`` then fetches).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import polars as pl

from bench.crates_gen import SNAPSHOT, write_dump
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.crates_dump import FakeCratesDumpServer
from tests.servers.local import Answer, SeenRequest

SCALE = 0.002
#: The API's crates updated after the dump (a new version each): what ``-a mode=incremental`` fetches.
UPDATED_EVERY = 50
UPDATED_AT = "2026-09-02T10:00:00.000000Z"


class DevCratesDump(FakeCratesDumpServer):
    """``/db-dump.tar.gz`` and ``/db-dump.zip``, each its own bytes and type; 404 elsewhere."""

    def __init__(self, tar_gz: bytes, zip_bytes: bytes) -> None:
        super().__init__(tar_gz)
        self.zip_bytes = zip_bytes

    def answer(self, request: SeenRequest) -> Answer:
        if request.path == "/db-dump.zip":
            self.requests.append(request)
            return 200, self.zip_bytes, {"Content-Type": "application/zip"}
        return super().answer(request)


def _iso(stamp: str | None) -> str:
    """PostgreSQL's ``2019-03-04 05:06:07.123456`` as the API writes it (``...T05:06:07.123456Z``)."""
    return (stamp or "1970-01-01 00:00:00").replace(" ", "T") + "Z"


def api_crates(folder: Path) -> list[FakeCrate]:
    """The dump's crates with their versions, as the API fake holds them, one in
    :data:`UPDATED_EVERY` with a version ``1.0.0`` published the day after the dump."""
    data = folder / SNAPSHOT / "data"
    table = pl.read_csv(data / "crates.csv", infer_schema=False)
    versions = pl.read_csv(data / "versions.csv", infer_schema=False)
    downloads = dict(pl.read_csv(data / "crate_downloads.csv").iter_rows())
    by_crate: dict[int, list[FakeVersion]] = {}
    for row in versions.iter_rows(named=True):
        by_crate.setdefault(int(row["crate_id"]), []).append(
            FakeVersion(
                id=int(row["id"]),
                num=row["num"],
                created_at=_iso(row["created_at"]),
                updated_at=_iso(row["updated_at"]),
                downloads=int(row["downloads"] or 0),
                yanked=row["yanked"] == "t",
                license=row["license"],
                crate_size=int(row["crate_size"]) if row["crate_size"] else None,
                rust_version=row["rust_version"],
            )
        )
    crates = [
        FakeCrate(
            id=int(row["id"]),
            name=row["name"],
            created_at=_iso(row["created_at"]),
            updated_at=_iso(row["updated_at"]),
            description=row["description"],
            homepage=row["homepage"],
            documentation=row["documentation"],
            repository=row["repository"],
            downloads=int(downloads.get(int(row["id"]), 0)),
            versions=by_crate.get(int(row["id"]), []),
        )
        for row in table.iter_rows(named=True)
    ]
    next_id = max((v.id for c in crates for v in c.versions), default=0) + 1
    for number, crate in enumerate(crates[::UPDATED_EVERY]):
        crate.versions.append(FakeVersion(next_id + number, "1.0.0", UPDATED_AT, UPDATED_AT, license="MIT"))
        crate.updated_at = UPDATED_AT
    return crates


def dev_crates(scale: float = SCALE) -> tuple[DevCratesDump, FakeCratesApi]:
    """The dump server and the API server of one generated dump, not started."""
    folder = Path(tempfile.mkdtemp(prefix="trawl-dev-crates-"))
    try:
        tar_gz = write_dump(folder, scale).read_bytes()
        zip_bytes = write_dump(folder, scale, as_zip=True).read_bytes()
        return DevCratesDump(tar_gz, zip_bytes), FakeCratesApi(api_crates(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
