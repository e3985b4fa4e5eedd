"""Rows printed by the read commands (``trawl search``, ``trawl crates``): one writer per format.

``trawl search`` wrote its table, CSV and JSON lines inline; ``trawl crates``
prints the same formats for other rows, so the writers live here once and both
commands call them: a table sized to the terminal (one column, the URL or a
description, takes what the others leave; the others may be capped), CSV with a
header line, one JSON object a line. No module here is a command (Scrapy lists
only modules that define one).
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

import orjson

#: What ``--format`` takes in every read command.
FORMATS = ("table", "txt", "jsonl", "csv")


def default_format(out: TextIO, chosen: str | None) -> str:
    """``--format`` as given, else a table on a terminal and plain lines in a pipe."""
    return chosen or ("table" if out.isatty() else "txt")


def write_jsonl(out: TextIO, rows: Iterable[Mapping[str, Any]]) -> int:
    """One JSON object a line; how many."""
    count = 0
    for row in rows:
        out.write(orjson.dumps(row).decode() + "\n")
        count += 1
    return count


def write_csv(out: TextIO, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """A header line, then the rows; how many."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def write_table(
    out: TextIO,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    flexible: int = 0,
    caps: Mapping[int, int] | None = None,
    noun: tuple[str, str] = ("row", "rows"),
    empty: str = "no rows",
) -> int:
    """Columns sized to their cells and the terminal; column ``flexible`` gets what the others leave.

    ``caps`` bounds other columns (index -> width); a cell wider than its column
    is cut with ``…``. A last line counts the rows (``noun``: singular, plural).
    """
    if not rows:
        out.write(empty + "\n")
        return 0
    width = shutil.get_terminal_size((120, 24)).columns
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    for index, cap in (caps or {}).items():
        widths[index] = min(widths[index], cap)
    rest = sum(w for i, w in enumerate(widths) if i != flexible) + 2 * (len(header) - 1)
    widths[flexible] = max(20, min(widths[flexible], width - rest))
    for row in [header, tuple("-" * w for w in widths), *rows]:
        cells = [cut(cell, w) for cell, w in zip(row, widths, strict=True)]
        out.write("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n")
    out.write(f"{len(rows)} {noun[0] if len(rows) == 1 else noun[1]}\n")
    return len(rows)


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, the last one ``…`` when it was longer."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"
