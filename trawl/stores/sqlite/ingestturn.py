"""Turns at the store file's write lock between a dump load's process and its ingest process.

SQLite's write lock is no queue: a writer that finds it taken sleeps (1 ms, growing
to 100 ms) and tries again. The ingest process (:mod:`.ingest_worker`) commits batch
after batch, 1-3 ms apart once it reads ahead, so the store's own writer (claiming a
batch's pages in the ledger, writing a batch too small to hand over, making a staged
table) found the lock taken for seconds at a time while the reading thread waited for
it: at full scale the ingest process then sat idle 16 s of a 49 s load for want of
batches. Here the store's writer raises a flag in a byte of memory both processes map
(a ``memfd`` the ingest process inherits) before it asks for the lock, and the ingest
process starts no transaction while the flag is up: the store's writer waits at most
for the batch being written (50 ms). A process that dies with the flag up holds
nothing: the ingest process also stops waiting once its loader's pipe has ended.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from collections.abc import Iterator

#: How often a waiting ingest process looks at the flag (the store's claim takes about 1 ms).
POLL_SECONDS = 0.0005


class Turn:
    """The loading process's side: :meth:`taken` around each of its transactions on the store."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("trawl-ingest-turn")  # handed to the ingest process (``pass_fds``)
        os.ftruncate(self.fd, 1)
        self._flag = mmap.mmap(self.fd, 1)
        self._depth = 0

    @classmethod
    def made(cls) -> Turn | None:
        """A turn, or None where memory cannot be shared so (no ``memfd``: the lock's own turns)."""
        if not hasattr(os, "memfd_create"):
            return None
        try:
            return cls()
        except OSError:
            return None

    @contextlib.contextmanager
    def taken(self) -> Iterator[None]:
        self._depth += 1
        self._flag[0] = 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth:
                self._flag[0] = 0

    def close(self) -> None:
        """The descriptor closed; the mapping stays for a writer still inside :meth:`taken`."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class TurnWaiter:
    """The ingest process's side: :meth:`wait` before each transaction."""

    def __init__(self, fd: int) -> None:
        self._flag = mmap.mmap(fd, 1)

    def wait(self, gone: threading.Event) -> None:
        """Until the loading process's writer is done with the lock (or the loader is gone)."""
        while self._flag[0] and not gone.is_set():
            time.sleep(POLL_SECONDS)
