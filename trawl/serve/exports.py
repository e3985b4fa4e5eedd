"""The search page's downloads: the matching URLs as ``trawl search --format txt|csv|jsonl`` writes them.

The same writers as the command (:func:`trawl.commands.search.write_records`, and
:func:`~trawl.commands.search.write_patterns` with a collapse mode), so a download
and ``trawl search QUERY [--collapse MODE] --format csv`` are the same bytes. It
runs in a thread on a connection of its own, feeding the response through a
bounded queue of 64 KB chunks: a download of millions of URLs streams in
constant memory and never holds one of datasette's connections.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from trawl.commands.search import write_patterns, write_records
from trawl.serve.finder import Where, all_records

#: Download formats: the name in the link -> ``--format``, the content type, the file suffix.
FORMATS = {
    "txt": ("txt", "text/plain; charset=utf-8", "txt"),
    "csv": ("csv", "text/csv; charset=utf-8", "csv"),
    "json": ("jsonl", "application/x-ndjson", "jsonl"),
}
CHUNK = 64 * 1024
_END = object()


class _Gone(Exception):
    """The browser went away: the download stops."""


class _Chunks:
    """A text file whose writes go to a queue in chunks of :data:`CHUNK` characters."""

    def __init__(self, out: queue.Queue, gone: threading.Event) -> None:
        self.out, self.gone, self.parts, self.size = out, gone, [], 0

    def put(self, item: object) -> None:
        """Wait for room in the queue, unless the reader is gone (then its connection is freed)."""
        while True:
            if self.gone.is_set():
                raise _Gone
            try:
                self.out.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def write(self, text: str) -> int:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= CHUNK:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self.parts:
            self.put("".join(self.parts))
            self.parts, self.size = [], 0


def produce(
    connect: Callable[[], sqlite3.Connection],
    where: Where,
    fmt: str,
    collapse: str,
    out: queue.Queue,
    gone: threading.Event,
) -> None:
    """Write every matching URL (or pattern) in ``fmt`` into ``out``, then the end marker."""
    chunks = _Chunks(out, gone)
    try:
        con = connect()
        try:
            if collapse:
                write_patterns(chunks, all_records(con, where), collapse, None, fmt)  # type: ignore[arg-type]
            else:
                write_records(chunks, all_records(con, where), fmt)  # type: ignore[arg-type]
            chunks.flush()
        finally:
            con.close()
    except _Gone:
        return
    except Exception as exc:  # noqa: BLE001 - the response has started: end it, say why in the log
        try:
            chunks.put(exc)
        except _Gone:
            return
    try:
        chunks.put(_END)
    except _Gone:
        return


async def stream(
    connect: Callable[[], sqlite3.Connection], where: Where, fmt: str, collapse: str, writer
) -> None:
    """Send the export through datasette's response ``writer`` as the thread produces it."""
    chunks: queue.Queue = queue.Queue(maxsize=16)
    gone = threading.Event()
    thread = threading.Thread(target=produce, args=(connect, where, fmt, collapse, chunks, gone), daemon=True)
    thread.start()
    loop = asyncio.get_running_loop()
    try:
        while True:
            item = await loop.run_in_executor(None, chunks.get)
            if item is _END:
                break
            if isinstance(item, Exception):
                raise item
            await writer.write(item)
    finally:
        gone.set()  # a browser that went away (or an error): the thread stops at its next chunk


def filename(store: Path, suffix: str, collapse: str = "") -> str:
    return f"{store.stem}-{'patterns' if collapse else 'search'}.{suffix}"
