"""Dead letters: URLs the cluster still refused, kept on disk for ``scrapy es-replay``.

One NDJSON line per URL with what its batch said about it (the index, source
and run it was written for, its provenance) and the error. The file is
appended with ``fsync``: a line is there before the run reports it. Replay
writes the lines through the same merge as a crawl, as part of the run they
came from, so capture counts are not doubled.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from trawl.errors import StoreError
from trawl.records.provenance import Provenance
from trawl.stores.elasticsearch.config import setting
from trawl.stores.elasticsearch.connection import connect, one_line
from trawl.stores.elasticsearch.documents import UrlDocument
from trawl.stores.elasticsearch.writer import BatchWrite, WriteOptions, run_sync

#: Stores of one process (workers in threads) share the file: one append at a time.
_lock = threading.Lock()


def dead_letter_path(settings: Any) -> Path:
    return Path(os.path.expanduser(str(setting(settings, "ELASTICSEARCH_DEAD_LETTERS"))))


def append_dead_letters(path: Path, lines: list[bytes]) -> None:
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock, open(path, "ab") as file:
        file.write(b"".join(line + b"\n" for line in lines))
        file.flush()
        os.fsync(file.fileno())


def dead_letter_line(
    index: str, record: UrlDocument, source: str, run: str, status: int, error: Any
) -> bytes:
    p = record.provenance
    return orjson.dumps(
        {
            "index": index,
            "source": source,
            "run": run,
            "url": p.url,
            "host": p.host,
            "sources": p.sources,
            "first_seen": p.first_seen,
            "last_seen": p.last_seen,
            "captures": p.captures,
            "statuses": p.statuses,
            "mimes": p.mimes,
            "status": status,
            "error": error,
            "failed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )


def error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        return f"{error.get('type')}: {error.get('reason')}"
    return str(error)


@dataclass
class ReplayResult:
    replayed: int
    left: int


def replay_dead_letters(uri: str, settings: Any, path: Path | None = None) -> ReplayResult:
    """Write every dead letter in ``path`` through the store's merge; keep only those that fail again.

    Lines are grouped by (index, source, run) and written as batches of the run
    they came from, so capture counts merge as if the write had not failed. The
    file is rewritten atomically with what is left (removed when nothing is).
    """
    path = path or dead_letter_path(settings)
    if not path.exists():
        return ReplayResult(0, 0)
    client = connect(uri, settings)
    try:
        groups: dict[tuple[str, str, str], list[UrlDocument]] = {}
        unreadable: list[bytes] = []
        with open(path, "rb") as file:
            for raw in file:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    line = orjson.loads(raw)
                    key = (line["index"], line["source"], line["run"])
                    record = _from_dead_letter(line)
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    unreadable.append(raw)
                    continue
                groups.setdefault(key, []).append(record)
        left: list[bytes] = list(unreadable)
        replayed = 0
        options = WriteOptions.from_settings(settings)
        try:
            for (index, source, run), records in groups.items():
                write = BatchWrite(index, records, source, run, options)
                run_sync(client, write)
                for dead in write.dead:
                    record = records[dead.position]
                    left.append(dead_letter_line(index, record, source, run, dead.status, dead.error))
                replayed += len(records) - len(write.dead)
            client.indices.refresh(index=",".join(sorted({key[0] for key in groups})) or "_all")
        except Exception as exc:  # noqa: BLE001 - the file is left as it was: replay again later
            raise StoreError(f"the replay stopped, {path} is unchanged: {one_line(exc)}") from None
        tmp = path.with_name(path.name + ".tmp")
        if left:
            tmp.write_bytes(b"".join(line + b"\n" for line in left))
            tmp.replace(path)
        else:
            path.unlink()
        return ReplayResult(replayed, len(left))
    finally:
        client.close()


def _as_set(value: Any) -> list[str]:
    """A set field of a line: a list, or comma-joined text (files written before sets were lists)."""
    if isinstance(value, str):
        return sorted({v for v in value.split(",") if v})
    return sorted({str(v) for v in value or [] if v})


def _from_dead_letter(line: Mapping[str, Any]) -> UrlDocument:
    source, run = line["source"], line["run"]
    provenance = Provenance.contribution(
        line["url"], line["host"], _as_set(line["sources"]), line["first_seen"], line["last_seen"],
        int(line["captures"]), _as_set(line["statuses"]), _as_set(line["mimes"]), source, run,
    )  # fmt: skip
    return UrlDocument.contribution(provenance, 0)
