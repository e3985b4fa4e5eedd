"""trawl's search language: one parser, one syntax tree; each store translates the tree.

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
* A record kind may declare fields of its own (``SEARCH_FIELDS`` on its batch type,
  :func:`kind_fields`): a URL without a record of that kind has none of them (stores
  that keep the kind join them; others refuse them in one line).
* ``AND`` binds tighter than ``OR``; ``AND``, ``OR``, ``NOT``, ``TO`` are
  upper-case (``&&``, ``||``, ``!`` and a leading ``-`` work too).

:func:`parse` raises :class:`QueryError` with one line that says what is wrong.

* :mod:`.fields`: the field names, their kinds and aliases, the facets;
* :mod:`.tree`: the syntax tree;
* :mod:`.parser`: text to tree, values normalized (dates as whole periods);
* :mod:`.limits`: how deep, wide and long a query may be, checked by the parser so that
  no store sees a query it cannot run (``docs/search.md``, "Limits").

The translations live with their stores: :mod:`trawl.stores.sqlite.query`
(SQL) and :mod:`trawl.stores.elasticsearch.query` (the query DSL).
"""

from __future__ import annotations

from trawl.search.fields import (
    ALIASES,
    FACETS,
    FIELDS,
    Field,
    declare_kind_fields,
    kind_fields,
    searched_kinds,
)
from trawl.search.parser import (
    QueryError,
    date_bounds,
    field_named,
    kind_fields_in,
    leaf,
    parse,
    pattern_regex,
    range_node,
    refuse_kind_fields,
    wildcard_pattern,
)
from trawl.search.tree import And, Exists, MatchAll, Node, Not, Or, Pattern, Range, Term

__all__ = [
    "ALIASES",
    "FACETS",
    "FIELDS",
    "And",
    "Exists",
    "Field",
    "MatchAll",
    "Node",
    "Not",
    "Or",
    "Pattern",
    "QueryError",
    "Range",
    "Term",
    "date_bounds",
    "declare_kind_fields",
    "field_named",
    "kind_fields",
    "kind_fields_in",
    "leaf",
    "parse",
    "pattern_regex",
    "range_node",
    "refuse_kind_fields",
    "searched_kinds",
    "wildcard_pattern",
]
