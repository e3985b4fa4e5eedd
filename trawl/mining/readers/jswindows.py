"""A big script parsed a window at a time: a worker's memory bounded per file, whatever its size.

tree-sitter's tree and the nodes read from it cost about 70 MB per MB of dense code:
a worker mining the first 1 MiB of the Python documentation's ``searchindex.js``
peaked at 94 MB of RSS (63 MB at 512 KiB, 44 MB at 256 KiB), the biggest process of
a live crawl after the crawl's own. So a script over :data:`WINDOW_BYTES` is parsed
in windows of that size, one tree at a time (peak 44 MB for any size).

A window must not start inside a string, template, regular expression or comment:
the parser would take the literal's closing quote for an opening one and read code
as strings for the rest of a minified line (invented paths). So each window after
the first starts where the previous window's tree says a token outside any literal
starts, near :data:`OVERLAP_BYTES` before that window's end. Windows overlap by
about that much, and a finding counts only in the window whose interior holds its
start (``[low, high)``: half the overlap away from a cut), so each use is read with
at least 32 KiB of context on both sides and counted once. What a window cannot
see is a name declared more than that far away (``const base = "/api"`` read far
below); on the npm bundles of bench/bench_mining_vs_xnlinkfinder.py (swagger-ui
1.7 MB: 7 windows, react-dom 0.6 MB) the findings were the same as parsing whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tree_sitter import Node

#: Above this a script is parsed a window at a time (44 MB of worker peak per window, see above).
WINDOW_BYTES = 256 * 1024
#: How much consecutive windows overlap: a finding is read with half of it around it at least.
OVERLAP_BYTES = 64 * 1024
#: Nodes a window must not start inside.
_LITERALS = frozenset({"string", "template_string", "regex", "comment"})


@dataclass(frozen=True, slots=True)
class Window:
    """Which findings of a parsed slice count: those starting in ``[low, high)`` of the slice.

    ``lines`` is the number of lines before the slice (a finding's line is the file's).
    A whole file is one window that holds everything; ``slice`` is False for it.
    """

    lines: int
    low: int
    high: int
    slice: bool = False
    #: Does the file name this variable outside the slice? (None: there is no outside.)
    elsewhere: Callable[[str], bool] | None = None

    def holds(self, start: int) -> bool:
        return self.low <= start < self.high


#: Parses bytes; mines a tree into the caller's collector, returning the window's bytes under ERROR nodes.
Parse = Callable[[bytes], Node]
Mine = Callable[[Node, bytes, Window], int]


def char_start(body: bytes, at: int) -> int:
    """``at``, or the start of the UTF-8 character it falls inside."""
    while 0 < at < len(body) and body[at] & 0xC0 == 0x80:
        at -= 1
    return at


def safe_cut(root: Node, target: int) -> int:
    """A byte near ``target`` (at or a little after it) where a token outside any literal starts,
    or the start of the outermost literal around ``target``."""
    node = root.descendant_for_byte_range(target, target + 1)
    if node is None:
        return target
    if node.child_count and node.type not in _LITERALS:  # target is between children: the next one
        later = [child for child in node.children if child.start_byte >= target]
        if later:
            node = later[0]
    cut = node.start_byte
    walk: Node | None = node
    while walk is not None:
        if walk.type in _LITERALS:
            cut = walk.start_byte
        walk = walk.parent
    return cut


def named_outside(body: bytes, start: int, end: int, name: str) -> bool:
    """Does ``body`` name the variable ``name`` before ``start`` or from ``end`` on (a property
    ``.name`` aside)?"""
    pattern = re.compile(rb"(?<![\w$.])" + re.escape(name.encode("utf-8")) + rb"(?![\w$])")
    return pattern.search(body, 0, start) is not None or pattern.search(body, end) is not None


def read_windows(body: bytes, parse: Parse, mine: Mine) -> int:
    """Mine ``body`` window by window; the bytes under ERROR nodes, summed over the windows' interiors."""
    size = len(body)
    start = low = lines = broken = 0
    step = WINDOW_BYTES - OVERLAP_BYTES
    while True:
        end = size if size - start <= WINDOW_BYTES else char_start(body, start + WINDOW_BYTES)
        piece = body[start:end]
        root = parse(piece)
        if end == size:
            following = None
            high = size
        else:
            target = char_start(body, start + step)
            following = start + safe_cut(root, target - start)
            if not start + step // 2 <= following <= target + 1024:  # a literal longer than the overlap
                following = target
            high = following + OVERLAP_BYTES // 2
        elsewhere = partial(named_outside, body, start, end)
        broken += mine(root, piece, Window(lines, low - start, high - start, slice=True, elsewhere=elsewhere))
        del root
        if following is None:
            return broken
        lines += body.count(b"\n", start, following)
        start, low = following, high
