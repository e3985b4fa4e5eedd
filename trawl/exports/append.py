"""``-o`` appends only the URLs a file lacks: a rerun adds what is new, it does not double the file.

Scrapy's ``-o`` appends every item of the run: the same crawl run twice gave
a ``urls.txt`` of 16 lines for 8 URLs. Someone watching a
domain appends each run's URLs to one file and reads the new lines (waymore
appends to ``waymore.txt`` and dedups it; ``anew`` prints only new lines), so
trawl's exporters, given a file that already holds URLs, read those first
and write only the others. What is in the file is never rewritten: a record
keeps the provenance it had when it was appended (``-O`` writes it afresh).

URLs are held as 64-bit hashes (:class:`trawl.pipeline.seen.SeenUrls`), 8 bytes each.
A file that cannot be read as the format says is appended to in full, with a
warning: the old behaviour, never a lost URL.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from typing import IO

import orjson
import polars as pl

from trawl.pipeline.seen import SeenUrls

logger = logging.getLogger(__name__)

#: URLs read from an existing file per lookup batch.
CHUNK = 100_000


def known_urls(file: IO[bytes], fmt: str) -> SeenUrls | None:
    """The URLs a file opened for appending holds already; ``None`` when it holds none (or is not a file)."""
    name = getattr(file, "name", None)
    if not isinstance(name, str) or fmt not in READERS:
        return None
    try:
        if file.tell() == 0:
            return None
        seen = SeenUrls()
        for chunk in chunks(READERS[fmt](name)):
            seen.add(pl.Series(chunk, dtype=pl.String).unique())
    except (OSError, ValueError, csv.Error) as exc:
        logger.warning("%s: cannot read the URLs it holds (%s); appending every URL of this run", name, exc)
        return None
    return seen


def unseen(frame: pl.DataFrame, known: SeenUrls | None) -> pl.DataFrame:
    """The rows whose URL the file does not hold yet (and, from now on, does)."""
    if known is None or not frame.height:
        return frame
    return frame.filter(~known.add(frame.get_column("url")))


def _txt(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            url = line.rstrip("\r\n")
            if url:
                yield url


def _jsonl(path: str) -> Iterator[str]:
    with open(path, "rb") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a crash: its URL is written again
            if isinstance(record, dict) and isinstance(record.get("url"), str):
                yield record["url"]


def _csv(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace", newline="") as file:
        reader = csv.DictReader(file)
        if "url" not in (reader.fieldnames or ()):
            raise ValueError("no url column")
        for row in reader:
            if row.get("url"):
                yield row["url"]


READERS = {"txt": _txt, "jsonl": _jsonl, "jsonlines": _jsonl, "csv": _csv}


def chunks(urls: Iterator[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    for url in urls:
        chunk.append(url)
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
