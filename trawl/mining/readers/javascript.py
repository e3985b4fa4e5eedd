"""JavaScript through tree-sitter: each URL with how it is used, then API-looking literals.

tree-sitter always returns a tree; a file that is not JavaScript (TypeScript with
types, a JSON-P error page, PHP) comes back with ERROR nodes. When those cover more
than :data:`MAX_ERROR_RATIO` of the bytes the tree says little, and the file goes to
the regex fallback instead (:func:`read` returns ``None``). Below that, tree-sitter's
error recovery keeps the rest of the file readable.

One tree-sitter query finds every node of interest in C (string literals only when
they hold a ``/``, a ``.`` or ``graphql``: the precision policy needs one of them); Python only visits those
(calls, assignments, declarations, literals), never the whole tree, so a 20 MB
minified bundle and a 100,000-deep nesting cost no Python recursion.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser, Query, QueryCursor

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.policy import api_like
from trawl.mining.readers.jsroutes import joined, placeholders, route
from trawl.mining.readers.jsuses import Scopes, Uses
from trawl.mining.readers.jsvalues import Values, literal, text
from trawl.mining.readers.jswindows import WINDOW_BYTES, Window, read_windows
from trawl.mining.resolve import EXPR

#: Above this share of bytes under ERROR nodes, the file is read by the regex fallback.
MAX_ERROR_RATIO = 0.25
#: Pages of ``//# sourceMappingURL=`` (and the old ``//@``) comments.
SOURCE_MAPPING_URL = re.compile(rb"//[#@][ \t]*sourceMappingURL=([^\s'\"*]+)")

#: Module specifiers that are URLs (relative to the module's own URL, by the ES spec).
_URL_SPECIFIERS = ("./", "../", "/", "http://", "https://")
_PAGE_ORIGIN = EXPR + "//" + EXPR + "/"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
#: Object keys whose values are a package's licence and copyright notes.
_LICENCE_KEYS = frozenset({"license", "licence", "licenses", "copyright"})
_LANGUAGE = Language(tree_sitter_javascript.language())
_QUERY = Query(
    _LANGUAGE,
    """
    (call_expression) @call
    (new_expression) @new
    (assignment_expression) @assign
    (variable_declarator name: (identifier) @name value: (_) @value)
    (binary_expression) @concat
    (template_string) @template
    ((string) @string (#match? @string "[./]|[gG][rR][aA][pP][hH][qQ][lL]"))
    (ERROR) @error
    (import_statement source: (string) @import)
    (export_statement source: (string) @import)
    (call_expression function: (import) arguments: (arguments . (_) @import))
    [(function_declaration) (function_expression) (arrow_function) (method_definition)
     (generator_function_declaration) (generator_function)] @function
    """,
)
_local = threading.local()


def _parse(body: bytes) -> Node:
    """One parser per thread (a tree-sitter parser is not thread-safe; the pool's workers each get theirs)."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(_LANGUAGE)
    return parser.parse(body).root_node


def error_bytes(errors: list[Node], low: int, high: int) -> int:
    """The bytes of ``[low, high)`` under ERROR nodes (nested errors counted once)."""
    covered = 0
    end = low
    for node in sorted(errors, key=lambda n: n.start_byte):
        start = max(node.start_byte, end)
        stop = min(node.end_byte, high)
        if stop > start:
            covered += stop - start
            end = stop
    return covered


def stray_bytes(root: Node, low: int, high: int) -> int:
    """The bytes of ``[low, high)`` that no valid node explains: tokens directly under an ERROR node,
    and ERROR or MISSING leaves.

    For a window of a bigger file: its tree is one ERROR wherever the window cuts an enclosing
    function off (every window of a bundle but the last), though the code inside parses into valid
    nodes. A window of swagger-ui (256 KiB) is all ERROR by :func:`error_bytes`, 388 bytes by this.
    """
    stray = 0
    todo = [root]
    while todo:
        node = todo.pop()
        for child in node.children:
            if child.end_byte <= low or child.start_byte >= high:
                continue
            if child.type == "ERROR" or child.has_error or child.is_missing:
                if child.child_count:
                    todo.append(child)
                else:
                    stray += min(child.end_byte, high) - max(child.start_byte, low)
            elif node.type == "ERROR" and not child.is_named:
                stray += min(child.end_byte, high) - max(child.start_byte, low)
    return stray


def _gather(root: Node) -> tuple[dict[str, list[Node]], dict[str, Node]]:
    """Nodes by capture name, in document order, and the names declared exactly once with their values.

    ``matches`` (not ``captures``) keeps each declarator's name and value together: the
    flat capture lists are not in document order.
    """
    nodes: dict[str, list[Node]] = {}
    counts: dict[str, int] = {}
    declared: dict[str, Node] = {}
    for _, match in QueryCursor(_QUERY).matches(root):
        if "name" in match:
            key = text(match["name"][0])
            counts[key] = counts.get(key, 0) + 1
            declared[key] = match["value"][0]
            continue
        for capture, found in match.items():
            nodes.setdefault(capture, []).extend(found)
    for found in nodes.values():
        found.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return nodes, {key: value for key, value in declared.items() if counts[key] == 1}


def read(body: bytes, url: str, *, source: str | None = None) -> FileFindings | None:
    """The file's findings; ``None`` when it is too broken for the tree to be trusted.

    A file over :data:`WINDOW_BYTES` is parsed a window at a time (:mod:`trawl.mining.readers.jswindows`),
    so a worker's memory is bounded per file whatever its size.
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:  # the query's #match? reads node text as strict UTF-8
        body = body.decode("utf-8", "replace").encode("utf-8")
    collector = Collector(url, source)
    if len(body) > WINDOW_BYTES:
        broken = read_windows(body, _parse, lambda root, piece, window: mine(root, piece, collector, window))
    else:
        broken = mine(_parse(body), body, collector, Window(0, 0, len(body)))
    if broken > MAX_ERROR_RATIO * len(body):
        return None
    return collector.findings("javascript")


class Sink:
    """The collector, taking only what the window holds, at the file's line."""

    def __init__(self, collector: Collector, window: Window) -> None:
        self.collector = collector
        self.window = window

    def add(self, start: int, value: str, how: str, line: int, **parts: Any) -> None:
        if self.window.holds(start):
            self.collector.add(value, how, line + self.window.lines, **parts)

    def params(self, start: int, names: set[str]) -> None:
        if self.window.holds(start):
            self.collector.params |= names

    def used_elsewhere(self, node: Node, values: Values) -> bool:
        """Is ``node`` the value of a name the window declares once (``const u = "..."``), a name the
        file names outside the window? A use there may consume it (``new URL(path, u)``), which the
        window cannot see: a constant of swagger-ui declared 0.5 MB before its use was counted as a
        bare literal. A name declared more than once is no constant: its literals stay."""
        parent = node.parent
        if self.window.elsewhere is None or parent is None or parent.type != "variable_declarator":
            return False
        name = parent.child_by_field_name("name")
        if name is None or parent.child_by_field_name("value") != node or text(name) not in values.declared:
            return False
        return self.window.elsewhere(text(name))


def mine(root: Node, body: bytes, collector: Collector, window: Window) -> int:
    """Add the findings of ``body``'s tree that ``window`` holds to ``collector``; the bytes under
    ERROR nodes in the window (the caller compares them with :data:`MAX_ERROR_RATIO`)."""
    captures, declared = _gather(root)
    if window.slice:
        broken = stray_bytes(root, window.low, window.high)
    else:
        broken = error_bytes(captures.get("error", []), window.low, window.high)
    values = Values(declared)
    used: set[tuple[int, int]] = set()
    sink = Sink(collector, window)
    add = sink.add

    def emit(node: Node, how: str, line: int, base: Node | None = None, **parts: object) -> None:
        literals: list[Node] = []
        value = values.value(node, literals)
        if how == "url" and base is not None:  # new URL(path, base): the base the file gives, else unknown
            known = values.value(base, literals)  # a base is consumed even when the path is unknown
            used.update((n.start_byte, n.end_byte) for n in literals)
            value = joined(value, known) if value is not None else None
        if value is None:
            return
        if node.type in ("identifier", "shorthand_property_identifier") and text(node) in values.declared:
            declared = values.declared[text(node)]
            used.add((declared.start_byte, declared.end_byte))
        used.update((n.start_byte, n.end_byte) for n in literals)
        add(node.start_byte, value, how, line, **parts)

    uses = Uses(values, emit, Scopes(captures.get("function", [])), _url_like)
    calls = captures.get("call", [])
    for call in calls:
        uses.remember(call)
    for call in calls:
        uses.call(call)
    for construct in captures.get("new", []):
        uses.construct(construct)
    for assignment in captures.get("assign", []):
        uses.assignment(assignment)
    for specifier in captures.get("import", []):
        value = values.value(specifier)
        if value and value.startswith(_URL_SPECIFIERS):  # not a bare `react`: that is a package name
            emit(specifier, "import", specifier.start_point.row + 1)
    _bare_literals(captures, values, sink, used)
    for match in SOURCE_MAPPING_URL.finditer(body):
        add(match.start(), match.group(1).decode("utf-8", "replace"), "sourcemap",
            body.count(b"\n", 0, match.start()) + 1)  # fmt: skip
    return broken


def _bare_literals(
    captures: dict[str, list[Node]], values: Values, sink: Sink, used: set[tuple[int, int]]
) -> None:
    """API-looking strings that no use above consumed: route strings (``"GET /user/repos"``) with their
    method; the rest through the precision policy, placeholders read as ``EXPR`` and parameters."""
    chained: set[tuple[int, int]] = set()
    for concat in captures.get("concat", []):  # outer chains first: sorted by start, then longest
        if (concat.start_byte, concat.end_byte) in chained:
            continue  # a part of a longer concatenation, read with it
        operator = concat.child_by_field_name("operator")
        if operator is None or operator.type != "+":
            continue  # the query does not say `operator: "+"`: that field test is quadratic in depth
        literals: list[Node] = []
        value = values.value(concat, literals, chained)
        fresh = [n for n in literals if (n.start_byte, n.end_byte) not in used]
        used.update((n.start_byte, n.end_byte) for n in literals)
        if value and fresh and api_like(value):
            sink.add(concat.start_byte, value, "string", concat.start_point.row + 1)
    for node in captures.get("template", []) + captures.get("string", []):
        if (node.start_byte, node.end_byte) in used or metadata(node) or sink.used_elsewhere(node, values):
            continue
        value = literal(node) if node.type == "string" else values.value(node)
        if value:
            _bare(value, node, sink)


def _key(pair: Node) -> str:
    key = pair.child_by_field_name("key")
    return text(key).strip("\"'").lower() if key is not None else ""


def metadata(node: Node) -> bool:
    """Is the literal a package's metadata (``license: "https://..."``), not something it asks?

    core-js writes ``{version, mode, copyright, license: URL, source: URL}`` into every
    bundle that includes it (2 of swagger-ui's 16 findings): a ``license`` or ``licence``
    value, and a ``source`` or ``url`` value beside a ``license``/``copyright`` key.
    """
    pair = node.parent
    if pair is None or pair.type != "pair" or pair.child_by_field_name("value") != node:
        return False
    key = _key(pair)
    if key in _LICENCE_KEYS:
        return True
    holder = pair.parent
    return (
        key in ("source", "url")
        and holder is not None
        and any(_key(p) in _LICENCE_KEYS for p in holder.named_children if p.type == "pair")
    )


def _url_like(value: str) -> bool:
    """The precision policy on a value, placeholders read as ``EXPR``."""
    path = placeholders(value)[0]
    if path.startswith(_PAGE_ORIGIN):
        path = EXPR + "/" + path[len(_PAGE_ORIGIN) :]
    return api_like(path)


def _bare(value: str, node: Node, sink: Sink) -> None:
    """One bare literal: a route string, else a value the policy keeps (placeholders as ``EXPR``).

    A relative API path (``rest/v1``) is kept with an unknown base (``EXPR/rest/v1``): a script's
    relative requests resolve against its page or its client's base URL, never the script's folder.
    """
    found = route(value)
    if found is not None:
        method, path, names, query = found
        sink.params(node.start_byte, names | query)
        # A route table's paths are relative to its client's API base, not to the bundle's host.
        url = path if path.startswith(EXPR) else EXPR + path
        sink.add(node.start_byte, url, "route", node.start_point.row + 1, method=method, query=query)
        return
    path, names, query = placeholders(value)
    if path.startswith(_PAGE_ORIGIN):  # `${location.protocol}//${location.host}/x`: the page's own origin
        path = EXPR + "/" + path[len(_PAGE_ORIGIN) :]
    if not api_like(path):
        return
    sink.params(node.start_byte, names | query)
    if not path.startswith(("/", "./", "../", EXPR)) and not _SCHEME.match(path):
        path = EXPR + "/" + path
    sink.add(node.start_byte, path, "string", node.start_point.row + 1, query=query)
