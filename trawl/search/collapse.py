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

# scheme://authority, path, query; the fragment is left out.
_URL_PARTS = r"^((?:[A-Za-z][A-Za-z0-9+.\-]*:)?//[^/?#]*)?([^?#]*)(?:\?([^#]*))?"
_HTTP_PORT = r"^(?i)(http://[^/]*):80$"
_HTTPS_PORT = r"^(?i)(https://[^/]*):443$"
_SEGMENT_END = r"(/|$)"
_HEX = "[0-9A-Fa-f]"
#: (regex of one ``/segment`` and the ``/`` or end after it, its placeholder), in the order they apply:
#: dates before ints (``/2023/05``), ints before hashes (sixteen digits are an int).
_ID_RULES: tuple[tuple[str, str], ...] = (
    (r"/(?:19|20)[0-9]{2}/(?:0?[1-9]|1[0-2])(?:/(?:0?[1-9]|[12][0-9]|3[01]))?" + _SEGMENT_END, "{date}"),
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
    frame = pl.DataFrame({"url": urls.cast(pl.String)}).drop_nulls()
    parts = pl.col("url").str.extract_groups(_URL_PARTS)
    origin = parts.struct.field("1").fill_null("")
    path = parts.struct.field("2").fill_null("")
    query = parts.struct.field("3")
    origin = origin.str.replace(_HTTP_PORT, "${1}").str.replace(_HTTPS_PORT, "${1}")
    if mode in ("ids", "all"):
        path = _path_ids(path)
    tail = _query_names(query) if mode in ("params", "all") else _query_verbatim(query)
    return (
        frame.lazy()
        .select(pl.col("url"), pl.concat_str(origin, path, tail).alias("pattern"))
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


def _path_ids(path: pl.Expr) -> pl.Expr:
    """Each id segment as its placeholder, a year/month[/day] run of folders as one ``{date}``.

    Each rule runs twice: a match takes the ``/`` after its segment, so in ``/1/2/3``
    the first pass rewrites 1 and 3 and the second 2. Whole-path regexes, not a list
    of segments: 1.3 CPU s instead of 8 for 1,000,000 paths (regexes over a split list).
    """
    for regex, placeholder in _ID_RULES:
        replacement = "/" + placeholder + "${1}"
        path = path.str.replace_all(regex, replacement).str.replace_all(regex, replacement)
    return path


def _query_names(query: pl.Expr) -> pl.Expr:
    """``?`` and the sorted distinct parameter names, each value ``{}``; nothing for no parameters."""
    names = (
        query.fill_null("")
        .str.split("&")
        .list.eval(pl.element().filter(pl.element() != "").str.replace(r"(?s)=.*$", "=" + VALUE))
        .list.unique()
        .list.sort()
        .list.join("&")
    )
    return pl.when(names == "").then(pl.lit("")).otherwise(pl.lit("?") + names)


def _query_verbatim(query: pl.Expr) -> pl.Expr:
    return pl.when(query.is_null()).then(pl.lit("")).otherwise(pl.lit("?") + query)
