"""The inflater of the db-dump: ISA-L's (python-isal) where it is installed, zlib's otherwise.

Inflating is the floor of a load (``gzip -dc``): ISA-L inflates the dump at twice
zlib's speed (0.45 s of CPU against 0.91 s for the 371 MB of a scale 0.25 dump,
``bench/bench_crates.py``; GNU gzip takes 1.5 s), with zlib's interface
(``decompressobj``, ``max_length``, ``unconsumed_tail``, ``unused_data``, ``eof``),
so the bounded steps of :class:`.dump.Gunzipped` and :mod:`.zipstream` stay as they are.
"""

from __future__ import annotations

import zlib
from typing import Any

try:
    from isal import isal_zlib as _engine
except ImportError:  # pragma: no cover - isal is a dependency; a bare install still reads dumps
    _engine = zlib  # type: ignore[assignment]

#: What a corrupt deflate stream raises (ISA-L's error is not a ``zlib.error``).
INFLATE_ERRORS: tuple[type[Exception], ...] = tuple({zlib.error, _engine.error})


def decompressobj(wbits: int) -> Any:
    """An inflater for ``wbits`` as zlib reads it (``16 + 15``: gzip; ``-15``: raw deflate)."""
    return _engine.decompressobj(wbits)
