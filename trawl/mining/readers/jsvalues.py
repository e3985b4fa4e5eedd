"""What a JavaScript expression evaluates to, as far as a file alone can tell.

String literals, template literals and ``+`` concatenations become one string with
``EXPR`` for every unknown part (jsluice's placeholder): ``"/api/" + id + "/x"`` is
``/api/EXPR/x``. A name declared once in the file with such a value (``const u =
"/api/x"``) stands for it. Everything walks iteratively: a minified file can chain
thousands of ``+`` and Python's recursion limit is 1,000.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from trawl.mining.resolve import EXPR, collapse, form_names

#: Nodes that name a variable: `x`, and `x` in the shorthand object `{ x }`.
_NAMES = frozenset({"identifier", "shorthand_property_identifier"})
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\r\n|.)", re.DOTALL)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0", "\n": "", "\r\n": ""}


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "ux" and len(code) > 1:
        try:
            return chr(int(code[1:].strip("{}"), 16))
        except (ValueError, OverflowError):
            return code
    return _SIMPLE.get(code, code)


def unescape(text: str) -> str:
    """A literal's characters as the program sees them (``\\/`` is ``/``, ``\\u002f`` is ``/``)."""
    return _ESCAPE.sub(_unescape_one, text) if "\\" in text else text


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def literal(node: Node | None) -> str | None:
    """A plain string literal's value (no substitutions); ``None`` for anything else."""
    if node is None:
        return None
    if node.type == "string":
        return unescape(text(node)[1:-1])
    if node.type == "template_string" and not any(c.type == "template_substitution" for c in node.children):
        return unescape(text(node)[1:-1])
    return None


def _template(node: Node) -> str:
    parts = []
    for child in node.children:
        if child.type == "string_fragment":
            parts.append(text(child))
        elif child.type == "escape_sequence":
            parts.append(unescape(text(child)))
        elif child.type == "template_substitution":
            parts.append(EXPR)
    return "".join(parts)


class Values:
    """Evaluates expressions of one file; knows its once-declared names."""

    def __init__(self, declared: dict[str, Node]) -> None:
        #: name -> the value node of its only declaration in the file
        self.declared = declared

    def value(
        self, node: Node | None, used: list[Node] | None = None, chained: set[tuple[int, int]] | None = None
    ) -> str | None:
        """The string ``node`` evaluates to with ``EXPR`` for unknown parts; ``None`` when no part is known.

        The literal nodes that made the value are appended to ``used`` (so that they are
        not reported again as bare strings), the ``+`` nodes read to ``chained`` (so that a
        part of a chain is not read again on its own: ``node.parent`` costs the node's depth
        in tree-sitter, so the caller cannot ask whether a ``+`` is inside another).
        """
        if node is None:
            return None
        parts: list[str] = []
        known = False
        budget = 16
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "parenthesized_expression" and current.named_child_count == 1:
                stack.append(current.named_children[0])
            elif kind == "binary_expression" and _operator(current) == "+":
                if chained is not None:
                    chained.add((current.start_byte, current.end_byte))
                left, right = current.child_by_field_name("left"), current.child_by_field_name("right")
                stack.extend(n for n in (right, left) if n is not None)
            elif kind == "string":
                parts.append(unescape(text(current)[1:-1]))
                known = True
                if used is not None:
                    used.append(current)
            elif kind == "template_string":
                parts.append(_template(current))
                known = True
                if used is not None:
                    used.append(current)
            elif kind in _NAMES and budget > 0 and text(current) in self.declared:
                budget -= 1  # `var a = "/x" + a` must not loop
                declared = self.declared[text(current)]
                if declared.type in ("string", "template_string", "binary_expression"):
                    stack.append(declared)
                else:
                    parts.append(EXPR)
            else:
                parts.append(EXPR)
        return collapse("".join(parts)) if known else None

    def resolve_name(self, node: Node | None) -> Node | None:
        """An identifier's declared value node (one hop); any other node as it is."""
        if node is not None and node.type in _NAMES:
            return self.declared.get(text(node), node)
        return node

    def pairs(self, node: Node | None) -> dict[str, Node | None]:
        """An object literal's keys and value nodes (for shorthand ``{a}``, the name ``a`` itself)."""
        node = self.resolve_name(node)
        found: dict[str, Node | None] = {}
        if node is None or node.type != "object":
            return found
        for child in node.named_children:
            if child.type == "pair":
                key = child.child_by_field_name("key")
                name = literal(key) if key is not None and key.type == "string" else None
                if key is not None and key.type in ("property_identifier", "number"):
                    name = text(key)
                if name:
                    found[name] = child.child_by_field_name("value")
            elif child.type == "shorthand_property_identifier":
                found[text(child)] = child  # `{ body }`: the value is the name `body`
        return found

    def names(self, node: Node | None, appended: set[str] | None = None) -> set[str]:
        """Parameter names a body, ``data`` or ``headers`` value carries.

        An object literal's keys; ``JSON.stringify({...})``; ``new URLSearchParams({...})``,
        ``new FormData()``/``new Headers()`` with what ``appended`` says was appended to the
        name; an ``a=1&b=2`` string; an array of ``[name, value]`` pairs.
        """
        node = self.resolve_name(node)
        found: set[str] = set(appended or ())
        if node is None:
            return found
        if node.type == "object":
            return found | set(self.pairs(node))
        if node.type == "call_expression" and text(node.child_by_field_name("function") or node) in (
            "JSON.stringify",
            "$.param",
            "jQuery.param",
            "qs.stringify",
        ):
            args = _arguments(node)
            return found | (self.names(args[0]) if args else set())
        if node.type == "new_expression":
            args = _arguments(node)
            return found | (self.names(args[0]) if args else set())
        if node.type == "array":
            for item in node.named_children:
                if item.type == "array" and item.named_child_count:
                    name = literal(item.named_children[0])
                    if name:
                        found.add(name)
            return found
        value = self.value(node)
        if value and "=" in value and not value.startswith(("/", "http")):
            found |= set(form_names(value.lstrip("?")))
        return found


def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return operator.type if operator is not None else ""


def _arguments(node: Node) -> list[Node]:
    args = node.child_by_field_name("arguments")
    if args is None:
        return []
    return [a for a in args.named_children if a.type != "comment"]


arguments = _arguments
