"""Collapse URLs into patterns: a million URLs read as the few thousand endpoints they are.

:func:`collapse` groups URLs that differ only in query values (``params``), in
ids in the path (``ids``), or in both (``all``), and gives each pattern its
count and one real URL of the group. The baseline is the rule set of uro
(github.com/s0md3v/uro, ``uro/uro.py``: ``params_to_dict``, ``compare_params``,
``create_pattern``) and urless (github.com/xnl-h4ck3r/urless, ``urless.py``:
``REGEX_INTEGER``, ``REGEX_GUID``, ``REGEX_YYYYMM``, ``paramsToDict``, the port
80/443 rule):

* query values do not count, parameter names do, in any order (uro and urless key
  a path's URLs by their parameter names). A URL whose set of names differs is
  its own pattern; uro and urless keep it only when it adds a name never seen on
  that path, an order-dependent rule that a count per pattern cannot follow. A
  name without ``=`` stays apart from ``name=`` (urless's ``{EMPTY}``);
* a path segment of digits is ``{int}`` (uro's ``isdigit``, urless's ``^\\d+$``);
  a GUID, hyphenated and optionally braced, is ``{uuid}`` (urless's ``REGEX_GUID``);
  a year folder followed by a month folder (and a day folder) is one ``{date}``
  (urless's ``REGEX_YYYYMM``, which drops such URLs as blog posts), as is a
  ``2023-05-01`` or ``2023-05`` segment; a segment of 16 or more hex digits (not all
  decimal: that is ``{int}``) is ``{hash}`` (neither tool has it: 16 is the shortest
  common digest, a 64-bit one, and no English word is 16 letters of a-f). Slugs and words
  stay: uro and urless drop a segment with more than three ``-`` as human-written
  content, which is filtering, not collapsing;
* in every mode ``:80`` on ``http`` and ``:443`` on ``https`` are dropped (urless)
  and the fragment too (uro's ``urlparse`` leaves it out).

Everything runs as polars expressions over the whole column (a store may hold
5,000,000 URLs: a Python loop per URL would take minutes; ``bench/`` measures it).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Literal, get_args

import polars as pl

Mode = Literal["params", "ids", "all"]
#: What ``--collapse`` takes, in the order its help lists them.
MODES: tuple[str, ...] = get_args(Mode)

#: URLs :func:`url_column` puts in one chunk: a Python list of 5,000,000 URLs would take 400 MB.
URL_CHUNK = 100_000
#: The placeholder of a query value in a pattern.
VALUE = "{}"

# scheme://authority of a URL without its query and fragment.
_ORIGIN = r"^((?:[A-Za-z][A-Za-z0-9+.\-]*:)?//[^/]*)"
_SEGMENT_END = r"(/|$)"
_HEX = "[0-9A-Fa-f]"
#: (regex of one ``/segment`` and the ``/`` or end after it, its placeholder), in the order they apply:
#: dates before ints (``/2023/05``), ints before hashes (sixteen digits are an int). They run on
#: paths whose ``/`` are doubled (:func:`_path_ids`): a folder run is ``/2023//05``.
_ID_RULES: tuple[tuple[str, str], ...] = (
    (r"/(?:19|20)[0-9]{2}//(?:0?[1-9]|1[0-2])(?://(?:0?[1-9]|[12][0-9]|3[01]))?" + _SEGMENT_END, "{date}"),
    (r"/(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12][0-9]|3[01]))?" + _SEGMENT_END, "{date}"),
    (rf"/[({{]?{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}[)}}]?" + _SEGMENT_END, "{uuid}"),
    (r"/[0-9]+" + _SEGMENT_END, "{int}"),
    (rf"/{_HEX}{{16,}}" + _SEGMENT_END, "{hash}"),
)


def collapse(urls: pl.Series, mode: Mode) -> pl.DataFrame:
    """Patterns of ``urls`` under ``mode``: columns ``pattern``, ``count``, ``example``.

    ``example`` is the smallest URL of the group (the same on every run); rows
    are sorted by count, largest first, then by pattern. Nulls are left out.
    """
    if mode not in MODES:
        raise ValueError(f"mode takes one of {', '.join(MODES)}, not {mode!r}")
    # Literal splits and one short regex: 0.14 CPU s for 300,000 URLs, a regex with three groups 0.26.
    bare = pl.col("url").str.splitn("#", 2).struct.field("field_0").str.splitn("?", 2)
    frame = (
        pl.DataFrame({"url": urls.cast(pl.String)})
        .drop_nulls()
        .lazy()
        .with_columns(base=bare.struct.field("field_0"), query=bare.struct.field("field_1"))
        .with_columns(origin=pl.col("base").str.extract(_ORIGIN, 1).fill_null(""))
        .with_columns(path=pl.col("base").str.slice(pl.col("origin").str.len_chars()))
    )
    origin = _without_default_port(pl.col("origin"))
    path = _path_ids(pl.col("path")) if mode in ("ids", "all") else pl.col("path")
    if mode == "ids":
        frame = frame.with_columns(tail=(pl.lit("?") + pl.col("query")).fill_null(""))
    else:
        frame = _with_query_names(frame)
    return (
        frame.select(pl.col("url"), pl.concat_str(origin, path, pl.col("tail")).alias("pattern"))
        .group_by("pattern")
        .agg(pl.len().cast(pl.Int64).alias("count"), pl.col("url").min().alias("example"))
        .sort(["count", "pattern"], descending=[True, False])
        .collect()
    )


def url_column(urls: Iterable[str]) -> pl.Series:
    """``urls`` as one column for :func:`collapse`, read a chunk at a time."""
    chunks = []
    stream = iter(urls)
    while chunk := list(islice(stream, URL_CHUNK)):
        chunks.append(pl.Series("url", chunk, dtype=pl.String))
    return pl.concat(chunks) if chunks else pl.Series("url", [], dtype=pl.String)


def _without_default_port(origin: pl.Expr) -> pl.Expr:
    """``:80`` off ``http://``, ``:443`` off ``https://``: literal tests (regexes: 0.23 CPU s a million)."""
    scheme = origin.str.slice(0, 8).str.to_lowercase()
    return (
        pl.when(scheme.str.starts_with("http://") & origin.str.ends_with(":80"))
        .then(origin.str.head(-3))
        .when(scheme.str.starts_with("https://") & origin.str.ends_with(":443"))
        .then(origin.str.head(-4))
        .otherwise(origin)
    )


def _path_ids(path: pl.Expr) -> pl.Expr:
    """Each id segment as its placeholder, a year/month[/day] run of folders as one ``{date}``.

    A match takes the ``/`` after its segment, which the next segment starts with:
    with each ``/`` doubled, every segment has its own (``//1//2//3``) and one pass
    of each rule is enough, then ``//`` is ``/`` again (placeholders have none).
    Whole-path regexes, not a list of segments: 1.3 CPU s instead of 8 for
    1,000,000 paths; one pass of each on doubled paths, 0.27 CPU s for 300,000
    paths instead of 0.45 for two passes on plain ones (load 10 on 2 cores).
    """
    path = path.str.replace_all("/", "//", literal=True)
    for regex, placeholder in _ID_RULES:
        path = path.str.replace_all(regex, "/" + placeholder + "${1}")
    return path.str.replace_all("//", "/", literal=True)


def _with_query_names(frame: pl.LazyFrame) -> pl.LazyFrame:
    """A ``tail`` column: ``?`` and the sorted distinct parameter names, each value ``{}``; or nothing.

    Values are wiped in place (``=[^&]*`` is ``={}``). One parameter needs nothing
    more, two are put in order by one comparison; only three or more go through
    lists, which cost 0.9 CPU s for 333,000 queries of two parameters against 0.1 s
    for the comparison.
    """
    ampersands = pl.col("query").str.count_matches("&", literal=True).fill_null(0)
    wiped = pl.col("query").str.replace_all(r"=[^&]*", "=" + VALUE).fill_null("")
    pair = wiped.str.splitn("&", 2)
    first, second = pair.struct.field("field_0"), pair.struct.field("field_1")
    two = (
        pl.when(first == "")
        .then(second)
        .when((second == "") | (first == second))
        .then(first)
        .when(first < second)
        .then(pl.concat_str(first, pl.lit("&"), second))
        .otherwise(pl.concat_str(second, pl.lit("&"), first))
    )
    many = (
        wiped.str.replace_all("&&+", "&")
        .str.strip_chars("&")
        .str.split("&")
        .list.unique()
        .list.sort()
        .list.join("&")
    )
    parts = [
        frame.filter(ampersands == 0).with_columns(names=wiped),
        frame.filter(ampersands == 1).with_columns(names=two),
        frame.filter(ampersands > 1).with_columns(names=many),
    ]
    names = pl.col("names")
    return pl.concat(parts).with_columns(
        tail=pl.when(names == "").then(pl.lit("")).otherwise(pl.lit("?") + names)
    )
