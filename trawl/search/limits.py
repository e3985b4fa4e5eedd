"""The limits of a query, checked by the parser so that no store ever sees a query it cannot run.

Without them a query was read as long as Python could recurse and then handed
to the store, which failed in its own words and with exit status 1:
250 nested parentheses or 1,000 ``-`` prefixes were a ``RecursionError`` with
a 3,000-line traceback; 50 ``-`` prefixes overflowed SQLite's parser stack
(``parser stack overflow``: 100 entries, about 45 ``NOT``, 15 levels of ``(a OR
b AND (...))``); 5,000 ``OR`` terms passed SQLite's expression depth (``Expression
tree is too large (maximum depth 1000)``: an ``OR`` of n terms is n deep); a 60 KB
value passed SQLite's ``LIKE`` pattern length (50,000 bytes); a number past 64 bits
was an ``OverflowError``. Elasticsearch has its own: bool queries nested at most 20
deep (7.x; 30 in 8.x), 1,024 clauses a bool (4,096 a query in 8.x), a wildcard's
automaton at most 10,000 states (``*a`` followed by n ``?`` needs 2^n).

Each number below is under every one of those with room to spare and far above what a
person types; ``tests/test_search_limits.py`` runs the deepest and widest queries they
let through on SQLite, and checks that one past each is refused in one line.
"""

from __future__ import annotations

from trawl.search.tree import And, Node, Not, Or

#: ``AND``/``OR``/``NOT`` nested inside each other (and parentheses or ``NOT`` prefixes inside each other).
MAX_DEPTH = 16
#: Values (terms) in one query: ``a OR b OR c`` has 3.
MAX_TERMS = 500
#: Characters in one value (a URL, a pattern, a bare word): twice the URL length browsers keep to.
MAX_VALUE_LENGTH = 4096
#: ``*`` and ``?`` wildcards in one value.
MAX_WILDCARDS = 10
#: Numbers (``port``, ``status``, ``captures``) are whole ASCII-digit numbers within the field's bounds.
INT64_MAX = 2**63 - 1


def depth(node: Node) -> int:
    """How many ``AND``/``OR``/``NOT`` nodes nest inside each other in ``node`` (a lone term: 0).

    Recursive, but only ever called on a tree whose parentheses and prefixes the
    parser has already kept to :data:`MAX_DEPTH`, so the recursion is shallow.
    """
    if isinstance(node, Not):
        return 1 + depth(node.node)
    if isinstance(node, (And, Or)):
        return 1 + max(depth(child) for child in node.nodes)
    return 0
