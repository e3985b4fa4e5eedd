"""trawl's search language: one parser, one syntax tree, SQL and Elasticsearch out.

A Lucene-like syntax, the same on every store::

    host:api.example.com AND ext:js
    status:200 source:otx                 (juxtaposed clauses are ANDed)
    url:*admin* OR path:/login*
    NOT mime:text/html      -mime:text/html      !mime:text/html
    first_seen:[2020 TO 2022]   last_seen:>=2023-06   captures:{1 TO *]
    host:(api.example.com OR www.example.com)
    "login.php"                            (a bare word or phrase: the URL contains it)

Rules, the same on SQLite and Elasticsearch:

* ``*`` (any characters) and ``?`` (one character) make a value a pattern;
  patterns ignore case. A value without them is compared as it is (hosts,
  schemes, extensions, sources and mime types ignore case too). ``\\`` escapes
  the next character; a quoted value has no wildcards. ``field:*`` means the
  field has a value.
* A bare value (no ``field:``) matches URLs that contain it, ignoring case.
* Sets (``source``, ``status``, ``mime``, ``param``) match when one of their
  members does.
* Dates are capture timestamps: ``YYYY[MM[DD[hh[mm[ss]]]]]``, with or without
  ``-``/``:``/``T``; a partial date is the whole period (``first_seen:2021`` is
  all of 2021, ``[2020 TO 2022]`` ends on 2022-12-31 23:59:59).
* ``AND`` binds tighter than ``OR``; ``AND``, ``OR``, ``NOT``, ``TO`` are
  upper-case (``&&``, ``||``, ``!`` and a leading ``-`` work too).

:func:`parse` raises :class:`QueryError` with one line that says what is wrong.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Any

from trawl.errors import TrawlUsageError


class QueryError(TrawlUsageError):
    """A search query that cannot be read."""


# --------------------------------------------------------------------------------------
# Fields
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # url, keyword, set, intset, int, date, domain
    es: str  # Elasticsearch field
    sql: str  # SQL expression (a column, or a derived part computed by trawl_url())
    lower: bool = False  # values are compared lower-cased
    derived: bool = False  # computed from the URL on SQLite


FIELDS: dict[str, Field] = {
    f.name: f
    for f in (
        Field("url", "url", "url.full", "url"),
        Field("host", "keyword", "url.domain", "host", lower=True),
        Field("domain", "domain", "url.domain", "host", lower=True),
        Field("scheme", "keyword", "url.scheme", "trawl_url(url, 'scheme')", lower=True, derived=True),
        Field("port", "int", "url.port", "trawl_url(url, 'port')", derived=True),
        Field("path", "keyword", "url.path", "trawl_url(url, 'path')", derived=True),
        Field("query", "keyword", "url.query", "trawl_url(url, 'query')", derived=True),
        Field("ext", "keyword", "url.extension", "trawl_url(url, 'extension')", lower=True, derived=True),
        Field(
            "tld",
            "keyword",
            "url.top_level_domain",
            "trawl_url(url, 'top_level_domain')",
            lower=True,
            derived=True,
        ),
        Field(
            "registered_domain",
            "keyword",
            "url.registered_domain",
            "trawl_url(url, 'registered_domain')",
            lower=True,
            derived=True,
        ),
        Field(
            "subdomain", "keyword", "url.subdomain", "trawl_url(url, 'subdomain')", lower=True, derived=True
        ),
        Field("param", "set", "trawl.params", "trawl_url(url, 'params')", derived=True),
        Field("source", "set", "trawl.sources", "sources", lower=True),
        Field("status", "intset", "trawl.status_codes", "statuses"),
        Field("mime", "set", "trawl.mime_types", "mimes", lower=True),
        Field("first_seen", "date", "trawl.first_seen", "first_seen"),
        Field("last_seen", "date", "trawl.last_seen", "last_seen"),
        Field("captures", "int", "trawl.captures", "captures"),
    )
}
ALIASES = {
    "extension": "ext",
    "sources": "source",
    "statuses": "status",
    "status_code": "status",
    "mimes": "mime",
    "mime_type": "mime",
    "params": "param",
    "parameter": "param",
}
#: Fields ``--facet`` can count.
FACETS = ("host", "source", "status", "mime", "ext", "scheme", "tld", "registered_domain", "port")


# Elasticsearch's names work too (``url.domain:``, ``trawl.sources:``).
ALIASES.update({f.es: f.name for f in reversed(list(FIELDS.values()))})


def field_named(name: str) -> Field:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in FIELDS:
        raise QueryError(f"bad query: unknown field {name!r} (known: {', '.join(FIELDS)})")
    return FIELDS[key]


# --------------------------------------------------------------------------------------
# Syntax tree
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """``field`` equals ``value`` (already normalized: lower-cased, int, date bound)."""

    field: Field
    value: Any


@dataclass(frozen=True)
class Pattern:
    """``field`` matches a wildcard pattern; ``pattern`` uses Elasticsearch's syntax."""

    field: Field
    pattern: str


@dataclass(frozen=True)
class Range:
    field: Field
    low: Any = None
    high: Any = None
    include_low: bool = True
    include_high: bool = True


@dataclass(frozen=True)
class Exists:
    field: Field


@dataclass(frozen=True)
class Not:
    node: Node


@dataclass(frozen=True)
class And:
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class MatchAll:
    pass


Node = Term | Pattern | Range | Exists | Not | And | Or | MatchAll


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------

_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*):")
_STOP = " \t\r\n)"
_WILD = "*?"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- helpers --------------------------------------------------------------------
    def error(self, message: str, at: int | None = None) -> QueryError:
        at = self.pos if at is None else at
        return QueryError(f"bad query: {message} at position {at + 1}: {self.text!r}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek_keyword(self, *words: str) -> str | None:
        self.skip()
        for word in words:
            end = self.pos + len(word)
            if self.text.startswith(word, self.pos):
                if word in ("&&", "||") or end >= len(self.text) or self.text[end] in " \t\r\n()":
                    return word
        return None

    def take_keyword(self, *words: str) -> str | None:
        word = self.peek_keyword(*words)
        if word is not None:
            self.pos += len(word)
        return word

    # -- grammar --------------------------------------------------------------------
    def parse(self) -> Node:
        if self.at_end():
            raise QueryError("bad query: the query is empty (use * for every URL)")
        if self.text.strip() == "*":
            return MatchAll()
        node = self.parse_or(None)
        if not self.at_end():
            if self.text[self.pos] == ")":
                raise self.error("unmatched ')'")
            raise self.error("unexpected text")
        return node

    def parse_or(self, field: Field | None) -> Node:
        nodes = [self.parse_and(field)]
        while self.take_keyword("OR", "||"):
            nodes.append(self.parse_and(field))
        return nodes[0] if len(nodes) == 1 else Or(tuple(nodes))

    def parse_and(self, field: Field | None) -> Node:
        nodes = [self.parse_unary(field)]
        while True:
            if self.take_keyword("AND", "&&"):
                nodes.append(self.parse_unary(field))
                continue
            if self.at_end() or self.text[self.pos] == ")" or self.peek_keyword("OR", "||"):
                break
            nodes.append(self.parse_unary(field))  # juxtaposition: AND
        return nodes[0] if len(nodes) == 1 else And(tuple(nodes))

    def parse_unary(self, field: Field | None) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.error("expected a search term at the end")
        if self.take_keyword("NOT"):
            return Not(self.parse_unary(field))
        if self.text[self.pos] in "!-":
            self.pos += 1
            return Not(self.parse_unary(field))
        if self.text[self.pos] == "+":
            self.pos += 1
        if self.peek_keyword("AND", "OR", "&&", "||", "TO"):
            raise self.error(f"{self.peek_keyword('AND', 'OR', '&&', '||', 'TO')} needs a term before it")
        return self.parse_primary(field)

    def parse_primary(self, field: Field | None) -> Node:
        self.skip()
        start = self.pos
        if self.text[self.pos] == "(":
            self.pos += 1
            if self.at_end():
                raise self.error("unclosed '('", start)
            node = self.parse_or(field)
            if self.at_end() or self.text[self.pos] != ")":
                raise self.error("unclosed '('", start)
            self.pos += 1
            return node
        match = _FIELD.match(self.text, self.pos)
        if field is None and match and not self.text.startswith("//", match.end()):
            self.pos = match.end()
            named = field_named(match.group(1))
            if self.pos >= len(self.text) or self.text[self.pos].isspace():
                raise self.error(f"{match.group(1)}: needs a value")
            if self.text[self.pos] == "(":
                return self.parse_primary(named)
            return self.parse_value(named)
        return self.parse_value(field)

    def parse_value(self, field: Field | None) -> Node:
        char = self.text[self.pos]
        if char in "[{":
            return self.parse_range(field)
        if char in "<>":
            op = (
                ">="
                if self.text.startswith(">=", self.pos)
                else "<="
                if self.text.startswith("<=", self.pos)
                else char
            )
            self.pos += len(op)
            raw, wild = self.read_word()
            if not raw or wild:
                raise self.error(f"{op} needs a value")
            target = self.require_field(field, op)
            if op[0] == ">":
                return range_node(target, raw, None, op == ">=", True)
            return range_node(target, None, raw, True, op == "<=")
        if char == '"':
            text = self.read_quoted()
            return leaf(field, text, ())
        raw, wild = self.read_word()
        if not raw:
            raise self.error("expected a value")
        return leaf(field, raw, wild)

    def require_field(self, field: Field | None, what: str) -> Field:
        if field is None:
            raise self.error(f"{what} needs a field before it (e.g. captures:[1 TO 5], captures:>10)")
        return field

    def parse_range(self, field: Field | None) -> Node:
        start = self.pos
        include_low = self.text[self.pos] == "["
        self.pos += 1
        target = self.require_field(field, "a range")
        low, low_wild = self.read_word(stop=_STOP + "]}")
        if not self.take_keyword("TO"):
            raise self.error("a range is [low TO high]", start)
        high, high_wild = self.read_word(stop=_STOP + "]}")
        self.skip()
        if self.pos >= len(self.text) or self.text[self.pos] not in "]}":
            raise self.error("unclosed range", start)
        include_high = self.text[self.pos] == "]"
        self.pos += 1
        if not low or not high:
            raise self.error("a range is [low TO high]", start)
        low_value = None if low == "*" and low_wild else low
        high_value = None if high == "*" and high_wild else high
        if (low_wild and low_value is not None) or (high_wild and high_value is not None):
            raise self.error("a range bound cannot be a pattern", start)
        return range_node(target, low_value, high_value, include_low, include_high)

    def read_word(self, stop: str = _STOP) -> tuple[str, tuple[int, ...]]:
        """A value up to white space or ``)``; returns it unescaped and where its wildcards are."""
        self.skip()
        out: list[str] = []
        wild: list[int] = []
        text = self.text
        while self.pos < len(text) and text[self.pos] not in stop:
            char = text[self.pos]
            if char == "\\":
                if self.pos + 1 >= len(text):
                    raise self.error("a '\\' at the end escapes nothing")
                out.append(text[self.pos + 1])
                self.pos += 2
                continue
            if char == '"':
                raise self.error("a quote inside a value (quote the whole value)")
            if char in _WILD:
                wild.append(len(out))
            out.append(char)
            self.pos += 1
        return "".join(out), tuple(wild)

    def read_quoted(self) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\" and self.pos + 1 < len(text):
                out.append(text[self.pos + 1])
                self.pos += 2
                continue
            if char == '"':
                self.pos += 1
                return "".join(out)
            out.append(char)
            self.pos += 1
        raise self.error("unclosed quote", start)


def parse(text: str) -> Node:
    """The syntax tree of a query; :class:`QueryError` if it cannot be read."""
    return _Parser(text).parse()


# --------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------


def es_pattern(raw: str, wild: tuple[int, ...]) -> str:
    """A pattern in Elasticsearch's wildcard syntax: literal ``*``, ``?``, ``\\`` escaped."""
    wild_at = set(wild)
    out = []
    for i, char in enumerate(raw):
        if i in wild_at:
            out.append(char)
        elif char in "*?\\":
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def leaf(field: Field | None, raw: str, wild: tuple[int, ...]) -> Node:
    if field is None:  # a bare value: the URL contains it
        url = FIELDS["url"]
        inner = es_pattern(raw, wild)
        return Pattern(url, f"*{inner}*" if inner else "*")
    if wild and raw == "*":
        return Exists(field)
    if field.kind in ("date",):
        if wild:
            raise QueryError(f"bad query: {field.name} takes a date or a range, not a pattern: {raw!r}")
        return range_node(field, raw, raw, True, True)
    if field.kind in ("int", "intset"):
        if wild:
            raise QueryError(f"bad query: {field.name} takes a number or a range, not a pattern: {raw!r}")
        return Term(field, _int(field, raw))
    if wild:
        pattern = es_pattern(raw, wild)
        return Pattern(field, pattern)
    value = raw.lower() if field.lower else raw
    if field.kind == "domain":
        return Or((Term(FIELDS["host"], value), Pattern(FIELDS["host"], "*." + es_pattern(value, ()))))
    return Term(field, value)


def _int(field: Field, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise QueryError(f"bad query: {field.name} takes a number, not {raw!r}") from None


_DATE_CHARS = re.compile(r"[-:T ]")


def date_bounds(raw: str) -> tuple[str, str]:
    """``2021`` -> ``("20210101000000", "20211231235959")``."""
    digits = _DATE_CHARS.sub("", raw)
    if not digits.isdigit() or len(digits) not in (4, 6, 8, 10, 12, 14):
        raise QueryError(f"bad query: {raw!r} is not a date (YYYY, YYYYMM, YYYY-MM-DD, ... YYYYMMDDhhmmss)")
    low = digits + "0101000000"[len(digits) - 4 :]
    year, month = int(low[:4]), int(low[4:6])
    if not 1 <= month <= 12:
        raise QueryError(f"bad query: {raw!r} is not a date (month {month})")
    last_day = calendar.monthrange(year, month)[1]
    high = digits + "1231235959"[len(digits) - 4 :]
    if len(digits) == 6:
        high = digits + f"{last_day:02d}235959"
    for value in (low, high):
        day, hour, minute, second = int(value[6:8]), int(value[8:10]), int(value[10:12]), int(value[12:14])
        if not (1 <= day <= last_day and hour < 24 and minute < 60 and second < 60):
            raise QueryError(f"bad query: {raw!r} is not a date")
    return low, high


def range_node(
    field: Field, low: str | None, high: str | None, include_low: bool, include_high: bool
) -> Node:
    if field.kind == "date":
        lo = hi = None
        if low is not None:
            first, last = date_bounds(low)
            lo = first if include_low else last
        if high is not None:
            first, last = date_bounds(high)
            hi = last if include_high else first
        return Range(field, lo, hi, include_low, include_high)
    if field.kind in ("int", "intset"):
        return Range(
            field,
            None if low is None else _int(field, low),
            None if high is None else _int(field, high),
            include_low,
            include_high,
        )
    if field.kind in ("keyword", "url"):
        return Range(field, low, high, include_low, include_high)
    raise QueryError(f"bad query: {field.name} does not take a range")


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """An Elasticsearch wildcard pattern as a case-insensitive, anchored regex."""
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def like_pattern(pattern: str) -> str:
    """An Elasticsearch wildcard pattern as a SQL ``LIKE`` pattern (``ESCAPE '\\'``)."""
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            char = pattern[i + 1]
            out.append("\\" + char if char in "%_\\" else char)
            i += 2
            continue
        if char == "*":
            out.append("%")
        elif char == "?":
            out.append("_")
        elif char in "%_\\":
            out.append("\\" + char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _is_ascii(text: str) -> bool:
    return text.isascii()


# --------------------------------------------------------------------------------------
# Elasticsearch
# --------------------------------------------------------------------------------------


def to_es(node: Node) -> dict[str, Any]:
    """The Elasticsearch query DSL for a syntax tree (filter context, no scoring)."""
    if isinstance(node, MatchAll):
        return {"match_all": {}}
    if isinstance(node, And):
        return {"bool": {"filter": [to_es(n) for n in node.nodes]}}
    if isinstance(node, Or):
        return {"bool": {"should": [to_es(n) for n in node.nodes], "minimum_should_match": 1}}
    if isinstance(node, Not):
        return {"bool": {"must_not": [to_es(node.node)]}}
    if isinstance(node, Exists):
        return {"exists": {"field": node.field.es}}
    if isinstance(node, Pattern):
        return {"wildcard": {node.field.es: {"value": node.pattern, "case_insensitive": True}}}
    if isinstance(node, Term):
        body: dict[str, Any] = {"value": node.value}
        if node.field.lower:
            body["case_insensitive"] = True
        return {"term": {node.field.es: body}}
    if isinstance(node, Range):
        body = {}
        if node.low is not None:
            body["gte" if node.include_low else "gt"] = node.low
        if node.high is not None:
            body["lte" if node.include_high else "lt"] = node.high
        if node.field.kind == "date":
            body["format"] = "yyyyMMddHHmmss"
        if not body:
            return {"exists": {"field": node.field.es}}
        return {"range": {node.field.es: body}}
    raise TypeError(node)


# --------------------------------------------------------------------------------------
# SQL (SQLite, table ``urls`` of the SQLite store)
# --------------------------------------------------------------------------------------


@dataclass
class SqlQuery:
    where: str
    params: list[Any]
    #: Indexes (column names) that make this query fast: the search creates them.
    indexes: set[str]


def to_sql(node: Node) -> SqlQuery:
    """A ``WHERE`` clause over the SQLite store's ``urls`` table.

    Needs the functions of :func:`register_sql_functions` on the connection.
    Every leaf is made a strict 0/1 (``NULL`` counts as no match), so that
    ``NOT`` means what ``must_not`` means in Elasticsearch.
    """
    params: list[Any] = []
    indexes: set[str] = set()
    where = _sql(node, params, indexes)
    return SqlQuery(where, params, indexes)


#: Columns of the ``urls`` table that are never NULL.
_NOT_NULL = frozenset({"url", "host", "sources", "statuses", "mimes", "captures"})


def _strict(field: Field, condition: str) -> str:
    """``condition`` as 0/1, never NULL (so that NOT of it is what must_not means)."""
    if field.sql in _NOT_NULL:
        return f"({condition})"
    return f"(coalesce({condition}, 0) = 1)"


def _set_expr(column: str) -> str:
    return f"(',' || {column} || ',')"


def _sql(node: Node, params: list[Any], indexes: set[str]) -> str:
    if isinstance(node, MatchAll):
        return "1"
    if isinstance(node, And):
        return "(" + " AND ".join(_sql(n, params, indexes) for n in node.nodes) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(_sql(n, params, indexes) for n in node.nodes) + ")"
    if isinstance(node, Not):
        return f"(NOT {_sql(node.node, params, indexes)})"
    prefilter = _prefilter(node, params)
    leaf = _leaf(node, params, indexes)
    return f"({prefilter} AND {leaf})" if prefilter else leaf


_SAFE_NAME = re.compile(r"[A-Za-z0-9._~-]+")


def _prefilter(node: Node, params: list[Any]) -> str | None:
    """A cheap test in C that every URL a derived-field condition can match passes.

    ``trawl_url()`` parses the URL in Python for each row it sees; this keeps it
    to the rows that can match (``ext:js`` needs ``.js`` in the URL).
    """
    field = getattr(node, "field", None)
    if field is None or not field.derived:
        return None
    if field.name == "ext" and isinstance(node, Term):
        params.append("%." + like_pattern(es_pattern(str(node.value), ())) + "%")
        return "url LIKE ? ESCAPE '\\'"
    if field.name in ("param", "query") and isinstance(node, (Term, Pattern, Exists)):
        if field.name == "param" and isinstance(node, Term) and _SAFE_NAME.fullmatch(str(node.value)):
            params.append(node.value)
            return "instr(url, '?') > 0 AND instr(url, ?) > 0"
        return "instr(url, '?') > 0"
    return None


def _leaf(node: Node, params: list[Any], indexes: set[str]) -> str:
    field = node.field  # type: ignore[union-attr]
    column = field.sql
    if isinstance(node, Exists):
        if field.kind in ("set", "intset"):
            if field.kind == "intset":
                return f"(trawl_set_range({column}, NULL, NULL, 1, 1) = 1)"
            return f"(coalesce({column}, '') != '')"
        return f"({column} IS NOT NULL)"
    if isinstance(node, Pattern):
        like = like_pattern(node.pattern)
        if field.kind == "set":
            params.append(node.pattern)
            return f"(coalesce(trawl_set_match({column}, ?), 0) = 1)"
        if _is_ascii(node.pattern):
            params.append(like)
            return _strict(field, f"{column} LIKE ? ESCAPE '\\'")
        params.append(node.pattern)
        return f"(coalesce(trawl_match({column}, ?), 0) = 1)"
    if isinstance(node, Term):
        if field.kind == "set":
            params.append("," + str(node.value) + ",")
            expr = _set_expr(column)
            if field.lower:
                expr = f"lower({expr})"
            return f"(instr({expr}, ?) > 0)"
        if field.kind == "intset":
            params.append(f",{node.value},")
            return f"(instr({_set_expr(column)}, ?) > 0)"
        if field.sql in ("host", "url"):
            indexes.add(field.sql)
            params.append(node.value)
            return f"({column} = ?)"
        params.append(node.value)
        if field.lower:
            return _strict(field, f"lower({column}) = ?")
        return _strict(field, f"{column} = ?")
    if isinstance(node, Range):
        if field.kind == "intset":
            params.extend([node.low, node.high, int(node.include_low), int(node.include_high)])
            return f"(trawl_set_range({column}, ?, ?, ?, ?) = 1)"
        if field.sql in ("first_seen", "last_seen", "captures", "host", "url"):
            indexes.add(field.sql)
        parts = [f"{column} IS NOT NULL"]
        if node.low is not None:
            parts.append(f"{column} {'>=' if node.include_low else '>'} ?")
            params.append(node.low)
        if node.high is not None:
            parts.append(f"{column} {'<=' if node.include_high else '<'} ?")
            params.append(node.high)
        # "x IS NOT NULL AND ..." is 0, not NULL, for a NULL x, and keeps indexes usable.
        return "(" + " AND ".join(parts) + ")"
    raise TypeError(node)


def _set_range(
    text: str | None, low: int | None, high: int | None, include_low: int, include_high: int
) -> int:
    """1 if a member of the comma-joined ``text`` is an integer within the bounds."""
    if not text:
        return 0
    for member in text.split(","):
        try:
            value = int(member)
        except ValueError:
            continue
        if low is not None and (value < low or (value == low and not include_low)):
            continue
        if high is not None and (value > high or (value == high and not include_high)):
            continue
        return 1
    return 0


def _set_match(text: str | None, pattern: str) -> int:
    if not text:
        return 0
    regex = _regex(pattern)
    return int(any(regex.fullmatch(member) for member in text.split(",")))


def _match(text: str | None, pattern: str) -> int | None:
    if text is None:
        return None
    return int(_regex(pattern).fullmatch(str(text)) is not None)


_regex_cache: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    regex = _regex_cache.get(pattern)
    if regex is None:
        regex = _regex_cache[pattern] = pattern_regex(pattern)
    return regex


def register_sql_functions(con: Any) -> None:
    """Add the functions :func:`to_sql` uses to a ``sqlite3`` connection (this connection only)."""
    from trawl.records.ecs import url_part

    con.create_function("trawl_url", 2, url_part, deterministic=True)
    con.create_function("trawl_match", 2, _match, deterministic=True)
    con.create_function("trawl_set_match", 2, _set_match, deterministic=True)
    con.create_function("trawl_set_range", 5, _set_range, deterministic=True)
