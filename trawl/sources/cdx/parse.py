"""Reading CDX server answers in both dialects trawl meets.

* The Internet Archive's wayback-cdx-server: ``output=json`` is one JSON array
  of arrays whose first row names the fields (``original``, ``mimetype``,
  ``statuscode``...); ``showNumPages`` is a bare integer.
* pywb (Common Crawl's index server and most private archives): ``output=json``
  is NDJSON, one object per line with keys ``url``, ``mime``, ``status``...;
  ``showNumPages`` is a JSON object ``{"pages": N, ...}``.

Parsing never raises on bad data: rows that cannot be read (a body cut off in
the middle of a line, say) are skipped and counted, and the caller decides what
a page with only bad rows means.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from enum import Enum

import orjson
import polars as pl

from trawl.pipeline.filters import FilterConfig


class Dialect(str, Enum):
    IA = "ia"
    PYWB = "pywb"


#: Our column -> the field name each dialect uses (also in ``fl=`` and ``filter=``).
FIELDS: dict[Dialect, dict[str, str]] = {
    Dialect.IA: {
        "url": "original",
        "timestamp": "timestamp",
        "status": "statuscode",
        "mime": "mimetype",
        "digest": "digest",
        "length": "length",
    },
    Dialect.PYWB: {
        "url": "url",
        "timestamp": "timestamp",
        "status": "status",
        "mime": "mime",
        "digest": "digest",
        "length": "length",
    },
}
#: A capture batch's columns, in ``fl=`` order.
CAPTURE_COLUMNS = ("url", "timestamp", "status", "mime", "digest", "length")
#: Any field name either dialect uses -> our column.
COLUMN_OF: dict[str, str] = {name: column for fields in FIELDS.values() for column, name in fields.items()}
#: Names that can start a JSON header row.
HEADER_NAMES = frozenset(COLUMN_OF) | {"urlkey"}
#: IA's field order when a server ignores ``fl=`` and answers in plain text.
IA_DEFAULT_FIELDS = ("urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length")

BLOCKED_MARKER = b"blocked site error"


@dataclass(slots=True)
class PageCount:
    dialect: Dialect
    pages: int


@dataclass(slots=True)
class ParsedPage:
    """Columns of one CDX page, plus what could not be read.

    ``frame`` holds the capture columns (``url``, ``timestamp``, ``status``,
    ``mime``, ``digest``, ``length``) as text; columns the page did not carry
    are absent.
    """

    frame: pl.DataFrame = field(default_factory=pl.DataFrame)
    rows: int = 0
    bad_lines: int = 0
    dialect: Dialect | None = None
    #: Lines with bytes that are not UTF-8, read with U+FFFD in their place (plain text only:
    #: a JSON line with them does not parse and is one of ``bad_lines``).
    undecodable_lines: int = 0

    @property
    def columns(self) -> dict[str, list[str]]:
        """The columns as lists, by their plural names (``urls``, ``statuses``...)."""
        return {f"{name}s" if name != "status" else "statuses": self.frame.get_column(name).to_list()
                for name in self.frame.columns}  # fmt: skip


def _frame(columns: dict[str, list[str]]) -> pl.DataFrame:
    return pl.DataFrame({name: pl.Series(name, values, dtype=pl.String) for name, values in columns.items()})


def fl_fields(dialect: Dialect) -> tuple[str, ...]:
    """The fields trawl asks for, in the dialect's names, in ``fl=`` order."""
    names = FIELDS[dialect]
    return tuple(names[c] for c in CAPTURE_COLUMNS)


def fl_param(dialect: Dialect) -> str:
    return ",".join(fl_fields(dialect))


def parse_page_count(body: bytes) -> PageCount | None:
    """``showNumPages`` answer -> dialect and page count, or ``None`` if unreadable."""
    text = body.strip()
    if text.isdigit():
        return PageCount(Dialect.IA, int(text))
    if text.startswith(b"{"):
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        pages = data.get("pages") if isinstance(data, dict) else None
        if isinstance(pages, int) and pages >= 0:
            return PageCount(Dialect.PYWB, pages)
    return None


def is_blocked(status: int, headers_text: bytes, body: bytes) -> bool:
    """The Wayback Machine's answer for sites excluded from the archive."""
    if BLOCKED_MARKER in headers_text.lower():
        return True
    return status in (200, 403) and BLOCKED_MARKER in body[:2048].lower()


def parse_page(body: bytes, fields: tuple[str, ...] | None = None) -> ParsedPage:
    """Any CDX page body (IA JSON, NDJSON, CDXJ or plain text) -> columns.

    ``fields`` names the columns of plain-text lines (the ``fl=`` sent), which
    carry no header; without it, or when lines have another width, IA's
    default seven fields are assumed.
    """
    text = body.lstrip()
    if not text:
        return ParsedPage()
    if text.startswith(b"["):
        return _parse_ia_json(text)
    if text.startswith(b"{"):
        return _parse_ndjson(text)
    return _parse_text(text, fields)


def _columns_from_rows(header: list[str], rows: list[list[str]]) -> dict[str, list[str]]:
    columns: dict[str, list[str]] = {}
    if not rows:
        return columns
    for name, column in zip(header, zip(*rows, strict=True), strict=False):
        target = COLUMN_OF.get(name)
        if target is not None:
            columns[target] = list(column)
    return columns


def _parse_ia_json(text: bytes) -> ParsedPage:
    bad = 0
    try:
        rows = orjson.loads(text)
    except orjson.JSONDecodeError:
        rows, bad = _salvage_ia_json(text)
    if not isinstance(rows, list):
        return ParsedPage(bad_lines=1, dialect=Dialect.IA)
    if rows and isinstance(rows[0], list) and rows[0] and rows[0][0] in HEADER_NAMES:
        header = [str(h) for h in rows[0]]
        rows = rows[1:]
    else:
        header = list(IA_DEFAULT_FIELDS)
    width = len(header)
    try:
        # The common case, every row well formed, costs one C-level transpose.
        return ParsedPage(_frame(_columns_from_rows(header, rows)), len(rows), bad, Dialect.IA)
    except (ValueError, TypeError):
        pass
    # Drop empty rows (``[]`` before a resume key), resume-key rows and broken rows.
    good = [r for r in rows if isinstance(r, list) and len(r) == width]
    bad += sum(1 for r in rows if not isinstance(r, list) or (r and len(r) not in (width, 1)))
    return ParsedPage(_frame(_columns_from_rows(header, good)), len(good), bad, Dialect.IA)


def _salvage_ia_json(text: bytes) -> tuple[list[list[str]], int]:
    """Row by row, for a JSON array cut short (rows are one per line)."""
    rows: list[list[str]] = []
    bad = 0
    for raw in text.split(b"\n"):
        line = raw.strip()
        if line.startswith(b"[["):
            line = line[1:]
        if line.endswith(b"]]"):
            line = line[:-1]
        line = line.rstrip(b",")
        if not line:
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += 1
            continue
        if isinstance(row, list):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


def _parse_ndjson(text: bytes) -> ParsedPage:
    """pywb's NDJSON: polars' reader for a well-formed page (json decoding per
    line in Python cost 2.5 s of a 41 s profile); line by line, keeping
    what can be read, for anything else."""
    fast = _read_ndjson(text)
    if fast is not None:
        return fast
    columns: dict[str, list[str]] = {}
    rows = 0
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += 1
            continue
        if not isinstance(record, dict) or not (record.get("url") or record.get("original")):
            bad += 1
            continue
        for column in FIELDS[Dialect.PYWB]:
            columns.setdefault(column, [])
        for column, name in FIELDS[Dialect.PYWB].items():
            value = record.get(name)
            if value is None:
                value = record.get(FIELDS[Dialect.IA][column], "")
            columns[column].append(str(value))
        rows += 1
    return ParsedPage(_frame(columns), rows, bad, Dialect.PYWB)


_PYWB_NAMES = {name: column for column, name in FIELDS[Dialect.PYWB].items()}
#: Our fields as text, whatever else a line holds: polars reads only these, with no schema to infer.
_PYWB_SCHEMA = {name: pl.String for name in _PYWB_NAMES}


def _read_ndjson(text: bytes) -> ParsedPage | None:
    """Every line an object with ``url``: one columnar read; else ``None``.

    Read with our fields' schema, as text: inferring one from every line, then casting,
    took 11.4 against 4.2 ms a 5,000-line page (numbers and booleans come out as the
    cast wrote them; an array, which the cast refused, is its JSON text).
    """
    try:
        frame = pl.read_ndjson(text, schema=_PYWB_SCHEMA)
    except Exception:  # noqa: BLE001 - polars raises several kinds for bad input
        return None
    if frame.height == 0:
        return None
    url = frame.get_column("url")
    if url.null_count() or (url == "").any():
        return None
    # pywb leaves fields out rather than sending them empty: as the per-line reader does, "".
    return ParsedPage(
        frame.select(
            pl.col(name).alias(column) if name == "url" else pl.col(name).fill_null("").alias(column)
            for name, column in _PYWB_NAMES.items()
        ),
        frame.height,
        0,
        Dialect.PYWB,
    )


#: ``read_csv``'s way of reading an empty field as "" and not null: polars 2 renamed the option, and
#: a keyword it does not know raised inside :func:`_read_text`'s ``except``, so every page went the
#: careful Python way (``str.split`` and a Python list a column: 1.14 against 0.46 µs a capture).
_EMPTY_AS_TEXT = (
    {"empty_string_is_null": False}
    if "empty_string_is_null" in inspect.signature(pl.read_csv).parameters
    else {"missing_utf8_is_empty_string": True}
)


def _read_text(text: bytes, names: tuple[str, ...]) -> ParsedPage | None:
    """Every line exactly ``names`` wide: one columnar read; else ``None``.

    The columns are named ours as they are read: a renaming ``select`` a page was
    one more polars call on the reactor's thread, each a wait for the GIL again.
    """
    columns = [COLUMN_OF.get(name, name) for name in names]
    try:
        frame = pl.read_csv(
            text,
            separator=" ",
            has_header=False,
            new_columns=columns,
            schema_overrides=dict.fromkeys(columns, pl.String),
            quote_char=None,
            infer_schema=False,
            **_EMPTY_AS_TEXT,
        )
    except Exception:  # noqa: BLE001 - ragged or odd lines: the careful path
        return None
    if frame.width != len(names) or frame.height != text.count(b"\n"):
        return None
    last = frame.get_column(columns[-1])
    if (last == "").any() or last.null_count():
        return None  # a short line (a resume key, a cut line)
    ours = [name for name in columns if name in CAPTURE_COLUMNS]
    if len(ours) < len(columns):  # IA's default fields: urlkey is not ours
        frame = frame.select(ours)
    return ParsedPage(frame, frame.height, 0, Dialect.IA)


_CDXJ = re.compile(rb"^\S+ \d{1,14} \{")


def undecodable_lines(text: bytes) -> int:
    """How many lines of ``text`` hold bytes that are not UTF-8.

    Such a line is still read (a URL with one bad byte is still a URL the
    archive knows), with U+FFFD in place of the bytes, which canonical form
    turns into ``%EF%BF%BD``: rather than store them without a word,
    the source counts them and says so once (``trawl/undecodable_lines``).
    Costs one pass over an ASCII page; lines are decoded one by one only when
    the page as a whole does not decode.
    """
    if text.isascii():
        return 0
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return 0
    count = 0
    for line in text.split(b"\n"):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            count += 1
    return count


def _parse_text(text: bytes, fields: tuple[str, ...] | None) -> ParsedPage:
    """Space-separated lines, with the lines that are not UTF-8 counted (:func:`undecodable_lines`)."""
    parsed = _split_text(text, fields)
    if parsed.dialect is Dialect.IA:
        parsed.undecodable_lines = undecodable_lines(text)
    return parsed


def _split_text(text: bytes, fields: tuple[str, ...] | None) -> ParsedPage:
    """Space-separated CDX lines (IA's default output) or CDXJ (``urlkey ts {json}``).

    CDX fields never contain spaces (the index itself is space-separated), so
    a well-formed page is one polars CSV read with a space separator (0.21 s
    for 320,000 lines against 0.8-1.0 s for ``str.split``); anything
    else goes line by line. Every line ends with a newline: a last line
    without one was cut off and is not trusted.
    """
    first_line = text[: text.find(b"\n")] if b"\n" in text else text
    if _CDXJ.match(first_line):
        lines = [line for line in text.splitlines() if line.count(b" ") >= 2]
        return _parse_ndjson(b"\n".join(line.split(b" ", 2)[2] for line in lines))
    if fields and text.endswith(b"\n"):
        fast = _read_text(text, fields)
        if fast is not None:
            return fast
    decoded = text.decode("utf-8", "replace")
    bad = 0
    if not decoded.endswith("\n"):
        cut = decoded.rfind("\n") + 1
        decoded = decoded[:cut]
        bad = 1
    line_count = decoded.count("\n")
    tokens = decoded.split()
    for names in (fields, IA_DEFAULT_FIELDS):
        if names and len(tokens) == len(names) * line_count:
            width = len(names)
            columns = {}
            for index, name in enumerate(names):
                column = COLUMN_OF.get(name)
                if column is not None:
                    columns[column] = tokens[index::width]
            return ParsedPage(_frame(columns), line_count, bad, Dialect.IA)
    names = fields or IA_DEFAULT_FIELDS
    rows: list[list[str]] = []
    for line in decoded.splitlines():
        parts = line.split()
        if len(parts) == len(names):
            rows.append(parts)
        elif len(parts) == len(IA_DEFAULT_FIELDS):
            rows.append([parts[IA_DEFAULT_FIELDS.index(n)] if n in IA_DEFAULT_FIELDS else "" for n in names])
        elif len(parts) > 1:  # a lone token is a resume key, not a row
            bad += 1
    return ParsedPage(_frame(_columns_from_rows(list(names), rows)), len(rows), bad, Dialect.IA)


# --- query parameters ------------------------------------------------------------------


def _alternation(values: tuple[str, ...]) -> str:
    return "|".join(re.escape(v) for v in values)


def filter_params(config: FilterConfig, dialect: Dialect) -> list[tuple[str, str]]:
    """Server-side status/mime filters, in the dialect's syntax.

    IA: ``[!]field:regex``, the regex matching the whole field (Java
    ``matches``). pywb: ``[!]~field:regex`` with ``re.match`` (anchored at the
    start only), so the pattern is closed with ``$``. Values are escaped as
    regexes here; percent-encoding (``+`` -> ``%2B``) is the URL builder's job.
    """
    fields = FIELDS[dialect]
    params: list[tuple[str, str]] = []
    for column, (values, negate) in (
        ("status", config.server_codes),
        ("mime", config.server_mimes),
    ):
        if not values:
            continue
        if column == "mime" and negate:
            values = ("warc/revisit", *values)  # as waymore: revisits repeat a capture
        name = fields[column]
        bang = "!" if negate else ""
        if dialect is Dialect.IA:
            params.append(("filter", f"{bang}{name}:({_alternation(values)})"))
        else:
            params.append(("filter", f"{bang}~{name}:({_alternation(values)})$"))
    return params
