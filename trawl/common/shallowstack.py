"""Importing Scrapy modules that build deprecated aliases, without walking the whole stack.

Scrapy's ``create_deprecated_class`` calls ``inspect.stack()`` to name the alias's
module. ``inspect.stack()`` reads every frame's source line and resolves every
frame's module by scanning ``sys.modules`` (CPython gh-92041); at a crawl's start
the stack is deep and 1,100 modules are loaded, and Scrapy's TLS context modules
(three aliases) took 0.15 s of CPU to import instead of 0.01. Only the caller's frame
is used, so for the length of such an import ``inspect.stack`` gives the two frames
Scrapy reads and nothing else.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterator
from typing import Any


def _caller_frames(context: int = 1) -> list[tuple[Any, ...]]:
    """``inspect.stack()``'s first two entries, each holding only its frame (index 0)."""
    return [(sys._getframe(1),), (sys._getframe(2),)]


@contextlib.contextmanager
def shallow_stack() -> Iterator[None]:
    """``inspect.stack`` as :func:`_caller_frames` inside the block (one thread imports at a time)."""
    original = inspect.stack
    inspect.stack = _caller_frames  # type: ignore[assignment]
    try:
        yield
    finally:
        inspect.stack = original
