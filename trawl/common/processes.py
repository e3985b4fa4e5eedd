"""Whether a process still runs on this host: what a leftover file's owner, a lock's holder or a
pool worker's crawl process is checked with."""

from __future__ import annotations

import os


def is_running(pid: int) -> bool:
    """Is there a process ``pid`` on this host (one of another user's counts)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
