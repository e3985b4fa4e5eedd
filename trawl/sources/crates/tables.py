"""One dump table's block of records to a batch frame: by header name, in whole columns.

PostgreSQL's ``\\copy ... CSV HEADER`` conventions, as polars reads them with
every column as text: an unquoted empty field is null (NULL), a quoted one an
empty string; booleans are ``t``/``f``; arrays ``{a,b}`` (an element quoted
only when it holds a comma, a brace, a quote, a backslash or a space, which
feature names never do: those rows are read element by element, the rest
split in polars); ``dependencies.kind`` is 0 normal, 1 build, 2 dev.

Columns are picked by name, never by position: crates.io has inserted columns
mid-row (crates.io#9081). A column a table lacks (an older dump) is null; a
column a record needs that is missing is a :class:`DumpError`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

import polars as pl

from trawl.records.batches import Batch
from trawl.sources.crates import records as r
from trawl.sources.crates.records import CrateBatch, DependencyBatch, VersionBatch


class DumpError(ValueError):
    """The dump cannot be read as crates.io writes it: the message says what and where."""


def read_block(header: bytes, block: bytes, table: str) -> pl.DataFrame:
    """A block of whole CSV records (:mod:`.blocks`) as text columns named by the header.

    Only the columns a record of the table's kind can use are made (a README, a
    checksum, a feature map are skipped by the parser, never made into strings);
    a column a record needs and the table lacks is still missing (``_need``). The
    columns of numbers are parsed as numbers (3 million dependencies: 0.55 s of CPU against
    0.78 s as text, and no cast after); a block where one does not parse is read again as
    text, where :func:`integer` makes it NULL."""
    names = next(csv.reader([header.decode("utf-8", "replace")]), []) if header else []
    batch_type = TABLES[table][0] if table in TABLES else None
    wanted = [n for n in names if batch_type is None or n in batch_type.SCHEMA or n in _REFERENCES]
    data = header + block
    columns = wanted if wanted and len(wanted) < len(names) else None
    if batch_type is not None:
        numbers = {n: pl.Int64 for n in wanted if n in _REFERENCES or batch_type.SCHEMA.get(n) == pl.Int64}
        try:
            typed = {"schema_overrides": numbers, "columns": columns}
            return pl.read_csv(io.BytesIO(data), infer_schema=False, **typed)
        except pl.exceptions.PolarsError:
            pass  # a number that does not parse (NULL: read as text and cast), or a malformed table
    try:
        return pl.read_csv(io.BytesIO(data), infer_schema=False, quote_char='"', columns=columns)
    except pl.exceptions.PolarsError as exc:
        raise DumpError(f"{table}.csv: malformed CSV ({str(exc).splitlines()[0][:200]})") from None


def timestamp(name: str) -> pl.Expr:
    """``2020-01-01 12:11:10.999999`` (UTC, maybe with ``+00``) as the API spells it: ``...T...Z``.

    NULL stays NULL through the concatenation itself (a ``when(is_null)`` around it cost
    0.126 s of CPU for 740,000 timestamps against 0.075 s without it)."""
    text = pl.col(name).str.strip_suffix("+00:00").str.strip_suffix("+00")
    return (text.str.replace(" ", "T", literal=True) + "Z").alias(name)


def coded(name: str, words: dict[str, str]) -> pl.Expr:
    """A column of codes (``0``, ``1``...) as the words they stand for, anything else NULL.

    One comparison per code: 12 million dependency kinds in 0.2 s of CPU against 0.3 s for
    ``replace_strict``'s lookup (three short codes compare faster than they hash)."""
    column = pl.col(name)
    chain: Any = pl
    for code, word in words.items():
        chain = chain.when(column == code).then(pl.lit(word))
    return chain.otherwise(pl.lit(None, dtype=pl.String)).alias(name)


def unknown_code(frame: pl.DataFrame, name: str, words: dict[str, str]) -> str | None:
    """The first value of ``name`` that is no code of ``words`` (None: every one is, or NULL),
    found among the column's distinct values: a few to look at, where a filter of the whole column
    built a frame of the unknown rows."""
    distinct = frame.get_column(name).unique(maintain_order=True).drop_nulls().to_list()
    return next((value for value in distinct if value not in words), None)


def boolean(name: str) -> pl.Expr:
    """``t``/``f`` as a boolean, anything else NULL (two comparisons: a tenth of ``replace_strict``)."""
    column = pl.col(name)
    return pl.when(column == "t").then(True).when(column == "f").then(False).otherwise(None).alias(name)


def integer(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Int64, strict=False)


def _array_elements(text: str) -> list[str]:
    """One PostgreSQL array literal's elements, quoting and backslashes honoured (the rare row)."""
    elements: list[str] = []
    current: list[str] = []
    quoted = escaped = was_quoted = False
    for char in text[1:-1]:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted, was_quoted = not quoted, True
        elif char == "," and not quoted:
            elements.append("".join(current))
            current, was_quoted = [], False
        else:
            current.append(char)
    if current or was_quoted or elements:
        elements.append("".join(current))
    return elements


#: What an array literal is empty once its braces are stripped.
_EMPTY_ARRAYS = ["", "{", "}", "{}"]
#: What a JSON string must escape (a quote, a backslash, a control character), or ``\\copy`` quoted.
_NEEDS_ESCAPE = ['"', "\\", *map(chr, range(32))]


def json_array(name: str, frame: pl.DataFrame) -> pl.Series:
    """A ``{a,b}`` column as JSON arrays of text (``["a","b"]``), null staying null.

    Feature lists repeat (most dependencies have none: ``{}``), so each distinct one is
    respelled once and the column mapped to its spelling: 12 million dependencies in 0.5-0.65 s
    of CPU against 1.3-1.6 s respelling every row. A column of mostly distinct lists is
    respelled row by row (mapping it would only add a lookup).
    """
    column = frame.get_column(name)
    distinct = column.unique()
    if distinct.len() * 2 > column.len():
        return _respelled(column)
    return column.replace(distinct, _respelled(distinct))


def _respelled(column: pl.Series) -> pl.Series:
    """Every row of a ``{a,b}`` column respelled as a JSON array.

    An array with no quote or backslash (every feature list crates.io writes) is
    respelled with string operations: its elements need no JSON escape (no quote,
    no backslash, no control character: ``\\copy`` would have quoted them). The
    rare other row is read element by element and encoded by polars.
    """
    name = column.name
    literal = pl.col(name)
    plain = literal.str.strip_prefix("{").str.strip_suffix("}")
    # Empty once stripped: tested on the column itself (a test on ``plain`` computed it twice:
    # the respelling took 0.44 s of CPU for 3 million rows, against 0.22 s).
    fast = (
        pl.when(literal.is_in(_EMPTY_ARRAYS))
        .then(pl.lit("[]"))
        .otherwise(pl.concat_str(pl.lit('["'), plain.str.replace_all(",", '","', literal=True), pl.lit('"]')))
    )
    encoded = column.to_frame().select(fast.alias(name)).get_column(name)
    tricky = column.str.contains_any(_NEEDS_ESCAPE).fill_null(False)
    if tricky.any():
        hard = column.filter(tricky).to_list()
        lists = pl.Series(name, [_array_elements(text) for text in hard], dtype=pl.List(pl.String))
        # JSON in polars, not per row: {"f":[...]} encoded, the wrapper cut off.
        fixed = (
            pl.DataFrame({"f": lists})
            .select(pl.struct("f").struct.json_encode().str.strip_prefix('{"f":').str.strip_suffix("}"))
            .to_series()
        )
        encoded = encoded.scatter(tricky.arg_true(), fixed)
    return encoded.alias(name)


DEPENDENCY_KINDS = {"0": "normal", "1": "build", "2": "dev"}
#: Columns read under another name than the kind's (``crate_downloads.crate_id`` is a crate's ``id``).
_REFERENCES = frozenset({"crate_id", "version_id"})


def _need(frame: pl.DataFrame, table: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DumpError(
            f"{table}.csv has no column {', '.join(missing)} (columns: {', '.join(frame.columns)})"
        )


def _with_absent(frame: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    absent = [pl.lit(None, dtype=pl.String).alias(c) for c in columns if c not in frame.columns]
    return frame.with_columns(absent) if absent else frame


def _finish(batch_type: type[Batch], frame: pl.DataFrame, table: str, key: str = "id") -> pl.DataFrame:
    """Every declared column in order and type; a row whose key does not parse is a DumpError.

    ``mode`` (the provenance of a row: which mode of the source wrote it) is ``dump``."""
    columns = [
        pl.lit("dump", dtype=t).alias(c)
        if c == "mode"
        else pl.col(c).cast(t)
        if c in frame.columns
        else pl.lit(None, dtype=t).alias(c)
        for c, t in batch_type.SCHEMA.items()
    ]
    out = frame.select(columns)
    bad = out.get_column(key).is_null().sum()
    if bad:
        raise DumpError(f"{table}.csv: {bad} rows without a readable {key}")
    return out


def crates(frame: pl.DataFrame) -> pl.DataFrame:
    _need(frame, "crates", ("id", "name"))
    frame = _with_absent(
        frame, ("created_at", "updated_at", "description", "homepage", "documentation", "repository")
    )
    frame = frame.with_columns(integer("id"), timestamp("created_at"), timestamp("updated_at"))
    return _finish(CrateBatch, frame, "crates")


def crate_downloads(frame: pl.DataFrame) -> pl.DataFrame:
    _need(frame, "crate_downloads", ("crate_id", "downloads"))
    frame = frame.select(integer("crate_id").alias("id"), integer("downloads"))
    return _finish(CrateBatch, frame, "crate_downloads")


def default_versions(frame: pl.DataFrame) -> pl.DataFrame:
    _need(frame, "default_versions", ("crate_id", "version_id"))
    frame = frame.select(integer("crate_id").alias("id"), integer("version_id").alias("default_version_id"))
    return _finish(CrateBatch, frame, "default_versions")


def versions(frame: pl.DataFrame) -> pl.DataFrame:
    _need(frame, "versions", ("id", "crate_id", "num"))
    frame = _with_absent(
        frame, ("created_at", "updated_at", "downloads", "yanked", "license", "crate_size", "rust_version")
    )
    frame = frame.with_columns(
        integer("id"),
        integer("crate_id"),
        timestamp("created_at"),
        timestamp("updated_at"),
        integer("downloads"),
        boolean("yanked"),
        integer("crate_size"),
    )
    return _finish(VersionBatch, frame, "versions")


def dependencies(frame: pl.DataFrame) -> pl.DataFrame:
    _need(frame, "dependencies", ("id", "version_id", "crate_id"))
    frame = _with_absent(
        frame, ("req", "optional", "default_features", "features", "target", "kind", "explicit_name")
    )
    unknown = unknown_code(frame, "kind", DEPENDENCY_KINDS)
    if unknown is not None:
        raise DumpError(f"dependencies.csv: kind {unknown!r} is not 0, 1 or 2")
    frame = frame.with_columns(
        integer("id"),
        integer("version_id"),
        integer("crate_id"),
        boolean("optional"),
        boolean("default_features"),
        json_array("features", frame),
        coded("kind", DEPENDENCY_KINDS),
    )
    return _finish(DependencyBatch, frame, "dependencies")


OWNER_KINDS = {"0": "user", "1": "team"}


def _plain(
    batch_type: type[Batch],
    table: str,
    need: tuple[str, ...],
    times: tuple[str, ...] = (),
    codes: tuple[str, dict[str, str]] | None = None,
) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """A table whose columns are the kind's by name: the ``need`` ones required, ``times``
    respelled, ``codes`` a column of numbers that stand for words (an unknown one is a DumpError),
    every other column cast to the kind's type (a number that does not parse is NULL)."""

    def convert(frame: pl.DataFrame) -> pl.DataFrame:
        _need(frame, table, need)
        frame = _with_absent(frame, tuple(batch_type.SCHEMA))
        if codes is not None:
            column, words = codes
            found = unknown_code(frame, column, words)
            if found is not None:
                raise DumpError(f"{table}.csv: {column} {found!r} is not one of {', '.join(words)}")
            frame = frame.with_columns(coded(column, words))
        casts = [
            timestamp(c) if c in times else integer(c) if t == pl.Int64 else pl.col(c)
            for c, t in batch_type.SCHEMA.items()
        ]
        return _finish(batch_type, frame.with_columns(casts), table, key=batch_type.KEY[0])

    return convert


#: The tables read, each with the kind its rows become and how.
TABLES: dict[str, tuple[type[Batch], Callable[[pl.DataFrame], pl.DataFrame]]] = {
    "crates": (CrateBatch, crates),
    "crate_downloads": (CrateBatch, crate_downloads),
    "default_versions": (CrateBatch, default_versions),
    "versions": (VersionBatch, versions),
    "dependencies": (DependencyBatch, dependencies),
    "version_downloads": (
        r.VersionDownloadBatch,
        _plain(r.VersionDownloadBatch, "version_downloads", ("version_id", "date", "downloads")),
    ),
    "keywords": (r.KeywordBatch, _plain(r.KeywordBatch, "keywords", ("id", "keyword"), ("created_at",))),
    "categories": (
        r.CategoryBatch,
        _plain(r.CategoryBatch, "categories", ("id", "category", "slug"), ("created_at",)),
    ),
    "crates_keywords": (
        r.CrateKeywordBatch,
        _plain(r.CrateKeywordBatch, "crates_keywords", ("crate_id", "keyword_id")),
    ),
    "crates_categories": (
        r.CrateCategoryBatch,
        _plain(r.CrateCategoryBatch, "crates_categories", ("crate_id", "category_id")),
    ),
    "crate_owners": (
        r.CrateOwnerBatch,
        _plain(
            r.CrateOwnerBatch,
            "crate_owners",
            ("crate_id", "owner_id", "owner_kind"),
            ("created_at",),
            ("owner_kind", OWNER_KINDS),
        ),
    ),  # fmt: skip
    "users": (r.UserBatch, _plain(r.UserBatch, "users", ("id", "gh_login"))),
    "teams": (r.TeamBatch, _plain(r.TeamBatch, "teams", ("id", "login"))),
    "deleted_crates": (
        r.DeletedCrateBatch,
        _plain(
            r.DeletedCrateBatch,
            "deleted_crates",
            ("id", "name"),
            ("created_at", "deleted_at", "available_at"),
        ),
    ),
}
