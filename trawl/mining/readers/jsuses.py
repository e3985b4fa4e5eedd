"""The uses of a URL jsluice reports, read from call and assignment nodes.

- ``fetch(url, {method, headers, body})`` (also ``window.fetch``): method ``GET`` unless
  the options say otherwise.
- ``xhr.open(method, url)`` with ``xhr.setRequestHeader(name, ...)`` and ``xhr.send(body)``
  on the same receiver in the same function.
- jQuery ``$.get``/``$.getJSON`` (``GET``, data keys are query parameters), ``$.post``
  (``POST``, data keys are body parameters), ``$.ajax(url?, {url, type|method, data,
  headers})`` (``GET`` unless ``type``/``method`` says otherwise).
- axios ``axios.get/post/...`` and ``axios({url, method, params, data, headers})``.
- ``location = url``, ``location.href = url``, ``location.assign/replace(url)``: ``location``;
  ``el.href = url``/``el.src = url``/``form.action = url`` and ``setAttribute`` of the
  same: ``href``/``src``/``form``; ``window.open(url)``: ``open``. These have no method:
  the file does not say one.
- ``import ... from "./x.js"``, ``export ... from``, ``import("./x.js")``: ``import``, when the
  specifier is a URL (``./``, ``../``, ``/``, ``http(s)://``), not a package name.
- Any other call with an upper-case method literal followed by a URL the precision policy
  keeps (an SDK's helper, ``request(fetch, "POST", `${url}/signup`)``): ``call`` with that method.
- Body parameter names come from object literals, ``JSON.stringify({...})``,
  ``URLSearchParams``/``FormData`` (their ``append``/``set`` calls in the same function),
  ``a=1&b=2`` strings; header names from object literals, ``new Headers({...})`` and
  ``append``/``set`` calls.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable

from tree_sitter import Node

from trawl.mining.readers.jsvalues import Values, arguments, literal, text

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
_GLOBALS = frozenset({"window", "self", "globalThis", "top", "parent", "this"})
_JQUERY = frozenset({"$", "jQuery"})
#: A bare word: a key, not a URL (jQuery's URLs hold a `/`, a `.` or a `?`; minified code binds `$` freely).
_WORD = re.compile(r"^[A-Za-z_$][\w$-]*$")
_ELEMENT_PROPERTIES = {"href": "href", "src": "src", "action": "form"}

#: emit(url node, how, line, method, query, body, headers)
Emit = Callable[..., None]


class Scopes:
    """Which function a byte is in, from the functions' ranges (receivers and appends match within one).

    Walking ``node.parent`` instead costs the node's depth per step in tree-sitter: a
    60,000-deep file took minutes. Here: the ranges sorted once, each one's enclosing
    function found with a stack, a lookup by bisection then up the enclosing chain.
    """

    def __init__(self, functions: list[Node]) -> None:
        ranges = sorted({(f.start_byte, f.end_byte) for f in functions}, key=lambda r: (r[0], -r[1]))
        self._starts = [start for start, _ in ranges]
        self._ends = [end for _, end in ranges]
        self._outer: list[int] = []
        open_: list[int] = []
        for index, (start, _) in enumerate(ranges):
            while open_ and self._ends[open_[-1]] <= start:
                open_.pop()
            self._outer.append(open_[-1] if open_ else -1)
            open_.append(index)

    def of(self, node: Node) -> int:
        """The start of the innermost function around ``node`` (0: the top level)."""
        at = node.start_byte
        index = bisect_right(self._starts, at) - 1
        while index >= 0 and not (self._starts[index] < at < self._ends[index]):
            index = self._outer[index]
        return self._starts[index] if index >= 0 else 0


def _callee(node: Node) -> tuple[str | None, str]:
    """(receiver text or None, called name) of a call: ``$.ajax`` is ("$", "ajax")."""
    function = node.child_by_field_name("function")
    if function is None:
        return None, ""
    if function.type == "identifier":
        return None, text(function)
    if function.type == "member_expression":
        receiver = function.child_by_field_name("object")
        prop = function.child_by_field_name("property")
        return (text(receiver) if receiver is not None else None), (text(prop) if prop is not None else "")
    return None, ""


def _is_location(node: Node) -> bool:
    """``location``, ``window.location``, ``document.location`` and their ``.href``."""
    if node.type == "identifier":
        return text(node) == "location"
    if node.type != "member_expression":
        return False
    prop = node.child_by_field_name("property")
    obj = node.child_by_field_name("object")
    name = text(prop) if prop is not None else ""
    if name == "location":
        return True
    return name == "href" and obj is not None and _is_location(obj)


class Uses:
    """Reads the uses in one file's calls and assignments."""

    def __init__(self, values: Values, emit: Emit, scopes: Scopes, url_like: Callable[[str], bool]) -> None:
        self.values = values
        #: the precision policy, for uses that are only likely (an SDK's request helper)
        self.url_like = url_like
        self.emit = emit
        self.scopes = scopes
        self.appended: dict[tuple[int, str], set[str]] = defaultdict(set)
        self.xhr_headers: dict[tuple[int, str], set[str]] = defaultdict(set)
        self.xhr_body: dict[tuple[int, str], Node] = {}

    def remember(self, call: Node) -> None:
        """First pass: what a later use needs (appends, XHR headers and bodies)."""
        receiver, name = _callee(call)
        if receiver is None or name not in ("append", "set", "setRequestHeader", "send"):
            return
        args = arguments(call)
        key = (self.scopes.of(call), receiver)
        if name == "send":
            if args:
                self.xhr_body[key] = args[0]
            return
        first = literal(args[0]) if args else None
        if first:
            (self.xhr_headers if name == "setRequestHeader" else self.appended)[key].add(first)

    def _names(self, node: Node | None, scope: int) -> set[str]:
        appended = self.appended.get((scope, text(node)), set()) if node is not None else set()
        return self.values.names(node, appended)

    def call(self, call: Node) -> None:
        """Second pass: one call's use of a URL, if it is one jsluice knows."""
        receiver, name = _callee(call)
        args = arguments(call)
        if not args:
            return
        line = call.start_point.row + 1
        scope = self.scopes.of(call)
        if name == "fetch" and (receiver is None or receiver in _GLOBALS):
            options = self.values.pairs(args[1]) if len(args) > 1 else {}
            method = (literal(options.get("method")) or "GET").upper()
            self.emit(
                args[0],
                "fetch",
                line,
                method=method,
                body=self._names(options.get("body"), scope),
                headers=self._names(options.get("headers"), scope),
            )
        elif receiver in _JQUERY and name in ("get", "getJSON", "post", "ajax"):
            self._jquery(name, args, line, scope)
        elif receiver == "axios" or (receiver is None and name == "axios"):
            self._axios(name if receiver else "request", args, line, scope)
        elif name == "open":
            method = literal(args[0])
            if len(args) > 1 and method and method.upper() in METHODS and receiver is not None:
                key = (scope, receiver)
                self.emit(
                    args[1],
                    "xhr",
                    line,
                    method=method.upper(),
                    body=self._names(self.xhr_body.get(key), scope),
                    headers=self.xhr_headers.get(key, ()),
                )
            elif (receiver is None or receiver in _GLOBALS) and not (method and method.upper() in METHODS):
                self.emit(args[0], "open", line)  # not a local open("GET", url): that is no window
        elif name in ("assign", "replace") and receiver is not None and receiver.endswith("location"):
            self.emit(args[0], "location", line)
        elif name == "setAttribute" and len(args) > 1 and literal(args[0]) in _ELEMENT_PROPERTIES:
            self.emit(args[1], _ELEMENT_PROPERTIES[literal(args[0]) or ""], line)
        else:
            self._method_then_url(args, line)

    def _method_then_url(self, args: list[Node], line: int) -> None:
        """An SDK's own request helper, ``request(fetch, "POST", `${base}/signup`, ...)``: an upper-case
        method literal followed by a URL-looking value (the precision policy decides) is that request."""
        for at in range(len(args) - 1):
            method = literal(args[at])
            if method not in METHODS:
                continue
            value = self.values.value(args[at + 1])
            if value and self.url_like(value):
                self.emit(args[at + 1], "call", line, method=method)
            return

    def construct(self, node: Node) -> None:
        """``new URL(path, base)``: ``url``, resolved against the base when the file says it."""
        constructor = node.child_by_field_name("constructor")
        if constructor is None or text(constructor) not in ("URL", "window.URL", "globalThis.URL"):
            return
        args = arguments(node)
        if args:
            self.emit(args[0], "url", node.start_point.row + 1, base=args[1] if len(args) > 1 else None)

    def _jquery(self, name: str, args: list[Node], line: int, scope: int) -> None:
        settings = self.values.pairs(args[0])
        if settings and "url" in settings:  # $.ajax({url: ...}) and jQuery 3's $.get({url: ...})
            url, data = settings["url"], settings.get("data")
        else:
            url = args[0]
            if name == "ajax":
                settings = self.values.pairs(args[1]) if len(args) > 1 else {}
                data = settings.get("data")
            else:
                settings, data = {}, (args[1] if len(args) > 1 else None)
        word = literal(url)
        if word is not None and _WORD.match(word):
            return  # `$.get("summary")`: a minified name `$` bound to a map, not jQuery asking a URL
        default = "POST" if name == "post" else "GET"
        method = (literal(settings.get("type")) or literal(settings.get("method")) or default).upper()
        names = self._names(data, scope) if data is not None and "function" not in data.type else set()
        query, body = (names, set()) if method == "GET" else (set(), names)
        headers = self._names(settings.get("headers"), scope)
        self.emit(url, "jquery", line, method=method, query=query, body=body, headers=headers)

    def _axios(self, name: str, args: list[Node], line: int, scope: int) -> None:
        if name == "request":
            config = self.values.pairs(args[0])
            url, data = config.get("url"), config.get("data")
            if not config:
                url = args[0]
                config = self.values.pairs(args[1]) if len(args) > 1 else {}
                data = config.get("data")
            method = (literal(config.get("method")) or "GET").upper()
        elif name.upper() in METHODS:
            url, method = args[0], name.upper()
            has_data = method in ("POST", "PUT", "PATCH")
            data = args[1] if has_data and len(args) > 1 else None
            at = 2 if has_data else 1
            config = self.values.pairs(args[at]) if len(args) > at else {}
        else:
            return
        if url is None:
            return
        self.emit(
            url,
            "axios",
            line,
            method=method,
            query=self._names(config.get("params"), scope),
            body=self._names(data, scope),
            headers=self._names(config.get("headers"), scope),
        )

    def assignment(self, node: Node) -> None:
        """``location = url``, ``location.href = url``, ``el.href/src/action = url``."""
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return
        line = node.start_point.row + 1
        if _is_location(left):
            self.emit(right, "location", line)
        elif left.type == "member_expression":
            prop = left.child_by_field_name("property")
            how = _ELEMENT_PROPERTIES.get(text(prop)) if prop is not None else None
            if how:
                self.emit(right, how, line)
