"""A crates.io db-dump made in the test, and the static host that serves it.

:func:`make_dump` writes a ``db-dump.tar.gz`` with the real layout (one
``YYYY-MM-DD-HHMMSS/`` folder, ``metadata.json``, ``README.md``, ``data/*.csv``
in alphabetical order, so ``crate_downloads`` and ``default_versions`` come before
``crates`` and ``versions``) and PostgreSQL's ``\\copy ... CSV HEADER``
conventions: NULL as an unquoted empty field, an empty string as ``""``, a field
quoted when it holds a comma, a quote or a line break, ``t``/``f``, ``{a,b}``.
The rows come from plain dicts, so a test's expectations come from the same
dicts, not from the reader under test.

:class:`FakeCratesDumpServer` serves bytes at ``/db-dump.tar.gz`` (as
``application/gzip``, like static.crates.io) and logs every request.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from collections.abc import Sequence
from typing import Any

from tests.servers.local import Answer, LocalServer, SeenRequest

SNAPSHOT = "2026-09-01-020003"


def pg_field(value: Any) -> str:
    """One field as PostgreSQL's CSV COPY writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "t" if value else "f"
    # An array is written as its text ({a,"b c"}), then quoted like any field.
    text = "{" + ",".join(_pg_element(v) for v in value) + "}" if isinstance(value, list) else str(value)
    if text == "" or any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _pg_element(value: str) -> str:
    if value == "" or any(c in value for c in ',"{} \\'):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def pg_csv(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> bytes:
    """A table: the header, then each row's fields in ``columns`` order."""
    lines = [",".join(columns)]
    lines += [",".join(pg_field(row.get(c)) for c in columns) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def make_dump(
    tables: dict[str, tuple[Sequence[str], Sequence[dict[str, Any]]]],
    snapshot: str = SNAPSHOT,
    timestamp: str = "2026-09-01T02:00:03Z",
    extra: dict[str, bytes] | None = None,
    compresslevel: int = 9,
    as_zip: bool = False,
) -> bytes:
    """``tables``: name -> (columns in file order, rows); ``extra``: more members (path under the
    snapshot folder -> bytes), after ``schema.sql``. Returns the tar.gz bytes (``as_zip``: the zip's,
    each member deflated on its own, as crates.io's ``db-dump.zip``)."""
    members: dict[str, bytes] = {
        "README.md": b"# crates.io database dump\n",
        "metadata.json": json.dumps(
            {"timestamp": timestamp, "crates_io_commit": "0" * 40}, indent=2
        ).encode(),
        "schema.sql": b"-- schema\n",
        **(extra or {}),
    }
    for name, (columns, rows) in sorted(tables.items()):
        members[f"data/{name}.csv"] = pg_csv(columns, rows)
    out = io.BytesIO()
    if as_zip:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(f"{snapshot}/{name}", data)
        return out.getvalue()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=compresslevel) as archive:
        folder = tarfile.TarInfo(snapshot)
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(f"{snapshot}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


class FakeCratesDumpServer(LocalServer):
    """Serves :attr:`dump` at ``/db-dump.tar.gz`` and ``/db-dump.zip`` (whichever it is); 404 elsewhere."""

    def __init__(self, dump: bytes) -> None:
        self.dump = dump
        self.requests: list[SeenRequest] = []

    def answer(self, request: SeenRequest) -> Answer:
        self.requests.append(request)
        if request.path not in ("/db-dump.tar.gz", "/db-dump.zip"):
            return 404, b"Not Found", {"Content-Type": "text/plain"}
        return 200, self.dump, {"Content-Type": "application/gzip"}

    @property
    def dump_url(self) -> str:
        return f"{self.base_url}/db-dump.tar.gz"

    @property
    def zip_url(self) -> str:
        return f"{self.base_url}/db-dump.zip"
