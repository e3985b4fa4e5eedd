"""The syntax tree a query parses into, the one form every store translates.

Values in the tree are already normalized by the parser (lower-cased where the
field ignores case, integers, date bounds as ``YYYYMMDDhhmmss``), so a store's
translation only maps fields and operators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trawl.search.fields import Field


@dataclass(frozen=True)
class Term:
    """``field`` equals ``value`` (already normalized: lower-cased, int, date bound)."""

    field: Field
    value: Any


@dataclass(frozen=True)
class Pattern:
    """``field`` matches a wildcard pattern, ignoring case.

    ``pattern``: ``*`` any characters, ``?`` one, ``\\`` escapes the next one
    (:func:`trawl.search.parser.wildcard_pattern`); Elasticsearch's ``wildcard``
    query takes this syntax as it is.
    """

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
