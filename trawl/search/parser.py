"""Reading a query: text in, a :mod:`trawl.search.tree` out, or one :class:`QueryError` line.

The parser also normalizes values (lower-casing, integers, a partial date as the
whole period it names) so that every store's translation gets them ready to use.
"""

from __future__ import annotations

import calendar
import re

from trawl.errors import TrawlUsageError
from trawl.search.fields import ALIASES, FIELDS, Field, kind_fields
from trawl.search.limits import MAX_DEPTH, MAX_TERMS, MAX_VALUE_LENGTH, MAX_WILDCARDS, depth
from trawl.search.tree import And, Exists, MatchAll, Node, Not, Or, Pattern, Range, Term


class QueryError(TrawlUsageError):
    """A search query that cannot be read."""


def field_named(name: str) -> Field:
    """The field ``name`` (or an alias) names; :class:`QueryError` for an unknown one."""
    key = ALIASES.get(name.lower(), name.lower())
    if key in FIELDS:
        return FIELDS[key]
    declared = kind_fields()
    if key not in declared:
        raise QueryError(f"bad query: unknown field {name!r} (known: {', '.join([*FIELDS, *declared])})")
    return declared[key]


def kind_fields_in(node: Node) -> list[Field]:
    """The fields of other record kinds a query names (a store that cannot join them refuses the query)."""
    if isinstance(node, Not):
        return kind_fields_in(node.node)
    if isinstance(node, (And, Or)):
        return [field for child in node.nodes for field in kind_fields_in(child)]
    field = getattr(node, "field", None)
    return [field] if field is not None and field.record else []


def refuse_kind_fields(node: Node, store: str) -> None:
    """One :class:`QueryError` line if ``node`` names other kinds' fields (a store that cannot join them)."""
    fields = kind_fields_in(node)
    if fields:
        name, kind = fields[0].name, fields[0].record
        raise QueryError(
            f"bad query: {name}: is a field of the {kind} records, which {store} does not search"
            " (use a SQLite store)"
        )


_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*):")
_STOP = " \t\r\n)"
_WILD = "*?"
_NUMBER = re.compile(r"[+-]?[0-9]+")  # ASCII digits: int() also takes "１", "٣" and "1_000"
#: A query longer than this is quoted in an error around the position, not whole.
_QUOTE_AT_MOST = 120


def _excerpt(text: str, at: int) -> str:
    """The query as an error quotes it: whole if short, else the part around ``at`` (one short line)."""
    if len(text) <= _QUOTE_AT_MOST:
        return repr(text)
    half = _QUOTE_AT_MOST // 2
    start = max(0, min(at - half, len(text) - _QUOTE_AT_MOST))
    part = text[start : start + _QUOTE_AT_MOST]
    return ("..." if start else "") + repr(part) + ("..." if start + _QUOTE_AT_MOST < len(text) else "")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.nesting = 0  # parentheses and NOT prefixes open around the current position
        self.terms = 0

    # -- helpers --------------------------------------------------------------------
    def error(self, message: str, at: int | None = None) -> QueryError:
        at = self.pos if at is None else at
        return QueryError(f"bad query: {message} at position {at + 1}: {_excerpt(self.text, at)}")

    def nest(self) -> None:
        """One level deeper (a ``(`` or a ``NOT``); refused past :data:`MAX_DEPTH` before recursing."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise self.error(f"the query nests deeper than {MAX_DEPTH} levels")

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
        if depth(node) > MAX_DEPTH:  # AND inside OR inside NOT ... without parentheses for each
            raise QueryError(
                f"bad query: the query nests deeper than {MAX_DEPTH} levels"
                f" (AND, OR and NOT inside each other): {_excerpt(self.text, 0)}"
            )
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
        if self.text[self.pos] in "!-" or self.peek_keyword("NOT"):
            self.nest()
            self.pos += 1 if self.text[self.pos] in "!-" else len("NOT")
            node = Not(self.parse_unary(field))
            self.nesting -= 1
            return node
        if self.text[self.pos] == "+":
            self.pos += 1
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("a '+' needs a term after it")
        if self.peek_keyword("AND", "OR", "&&", "||", "TO"):
            raise self.error(f"{self.peek_keyword('AND', 'OR', '&&', '||', 'TO')} needs a term before it")
        return self.parse_primary(field)

    def parse_primary(self, field: Field | None) -> Node:
        self.skip()
        start = self.pos
        if self.text[self.pos] == "(":
            self.nest()
            self.pos += 1
            if self.at_end():
                raise self.error("unclosed '('", start)
            node = self.parse_or(field)
            if self.at_end() or self.text[self.pos] != ")":
                raise self.error("unclosed '('", start)
            self.pos += 1
            self.nesting -= 1
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
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise self.error(f"the query has more than {MAX_TERMS} terms")
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
        start = self.pos
        while self.pos < len(text) and text[self.pos] not in stop:
            if len(out) >= MAX_VALUE_LENGTH:
                raise self.error(f"a value is longer than {MAX_VALUE_LENGTH} characters", start)
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
                if len(wild) >= MAX_WILDCARDS:
                    raise self.error(f"a value has more than {MAX_WILDCARDS} wildcards (* and ?)", start)
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
            if char == '"':
                self.pos += 1
                return "".join(out)
            if len(out) >= MAX_VALUE_LENGTH:
                raise self.error(f"a value is longer than {MAX_VALUE_LENGTH} characters", start)
            if char == "\\" and self.pos + 1 < len(text):
                out.append(text[self.pos + 1])
                self.pos += 2
                continue
            out.append(char)
            self.pos += 1
        raise self.error("unclosed quote", start)


def parse(text: str) -> Node:
    """The syntax tree of a query; :class:`QueryError` if it cannot be read."""
    return _Parser(text).parse()


def wildcard_pattern(raw: str, wild: tuple[int, ...]) -> str:
    """A value as a :class:`~trawl.search.tree.Pattern` pattern: the wildcards at ``wild`` kept,
    a literal ``*``, ``?`` or ``\\`` escaped."""
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
    """The node of one ``field:value`` (``field`` ``None``: a bare value), ``wild`` its wildcards."""
    if field is None:  # a bare value: the URL contains it
        url = FIELDS["url"]
        inner = wildcard_pattern(raw, wild)
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
    if field.kind == "bool":
        if raw.lower() not in ("true", "false") or wild:
            raise QueryError(f"bad query: {field.name} takes true or false, not {raw!r}")
        return Term(field, raw.lower() == "true")
    if wild:
        pattern = wildcard_pattern(raw, wild)
        return Pattern(field, pattern)
    value = raw.lower() if field.lower else raw
    if field.kind == "domain":
        return Or((Term(FIELDS["host"], value), Pattern(FIELDS["host"], "*." + wildcard_pattern(value, ()))))
    return Term(field, value)


def _int(field: Field, raw: str) -> int:
    """``raw`` as a number of ``field``: ASCII digits, within the field's bounds (so no store overflows)."""
    if not _NUMBER.fullmatch(raw):
        raise QueryError(f"bad query: {field.name} takes a number, not {raw!r}")
    value = int(raw)
    low, high = field.bounds
    if not low <= value <= high:
        raise QueryError(f"bad query: {field.name} takes a number from {low} to {high}, not {raw}")
    return value


_DATE_CHARS = re.compile(r"[-:T ]")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() is true of "２" and "²" too


def date_bounds(raw: str) -> tuple[str, str]:
    """``2021`` -> ``("20210101000000", "20211231235959")``."""
    digits = _DATE_CHARS.sub("", raw)
    if not _DIGITS.fullmatch(digits) or len(digits) not in (4, 6, 8, 10, 12, 14):
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
    """A tree pattern as a case-insensitive, anchored regex (for a store that matches in Python)."""
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
