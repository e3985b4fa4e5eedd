"""The archive read ahead on a thread of its own: inflated, split into members, cut into blocks.

Reading the db-dump is two kinds of work: inflating it (zlib, which releases the
GIL) and cutting its tables into blocks of whole records (:mod:`.blocks`: a
``count`` and an ``rfind`` per block, in C); then parsing each block (polars,
multi-threaded, also without the GIL). Done one after the other on one thread,
the parse waited for the inflate and the inflate for the parse: the reader ran
at about a fifth of the speed of ``gzip -dc``. :class:`Prefetched` runs the
first kind on its own thread, a bounded number of bytes ahead of the parsing, so
on two cores the two overlap and the load runs close to the inflate's speed.

The thread walks the archive's members (``tar_members`` or ``zip_members``),
asks ``classify`` what each is (blocks of records, a small file read whole, or
nothing to read: skipped unread), and queues what it reads. Whatever it raises
(a cut archive, a corrupt member, a table ending inside a quoted field) is
raised again where the events are read, in the order it happened. At most
``max_bytes`` wait in the queue: past that the thread waits, and so does the
download behind it (its own back-pressure, :mod:`.stream`).

Stopping (:class:`StopSignal`, set from any thread: the reactor's, on Ctrl-C or
a store error): :meth:`Prefetched.close` wakes both sides at once. The thread
ends at its next event (a read it is blocked in ends when the spider closes the
stream); a reader waiting in :meth:`Prefetched.events` gets :class:`Stopped`
instead of waiting for an event that will never come.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import BinaryIO, Literal

from trawl.sources.crates.blocks import BLOCK_BYTES, MAX_RECORD_BYTES, record_blocks
from trawl.sources.crates.tables import DumpError

#: What a member is to the reader: blocks of CSV records, a small file read whole, or nothing.
Kind = Literal["blocks", "whole"] | None
#: ``("member", name, kind)``, ``("block", header, block)``, ``("whole", data)``, ``("error", exc)``.
Event = tuple
MAX_BYTES = 32 << 20


class Stopped(Exception):  # noqa: N818 - the reading was stopped, not an error
    """The reading was stopped (:class:`StopSignal`) while it waited for the archive."""


class StopSignal:
    """Set once, from any thread, to stop one dump's reading; what is attached is called then
    (at once when attached after)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._hooks: list[Callable[[], None]] = []

    def attach(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if not self._set:
                self._hooks.append(hook)
                return
        hook()

    def set(self) -> None:
        with self._lock:
            if self._set:
                return
            self._set = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        return self._set


class Prefetched:
    """The events of one archive, produced by a thread, read with :meth:`events`; :meth:`close` stops it."""

    def __init__(
        self,
        stream: BinaryIO,
        members: Callable[[BinaryIO], Iterator[tuple[str, BinaryIO]]],
        classify: Callable[[str], Kind],
        block_bytes: int = BLOCK_BYTES,
        max_bytes: int = MAX_BYTES,
        stop: StopSignal | None = None,
    ) -> None:
        self._stream = stream
        self._members = members
        self._classify = classify
        self._block_bytes = block_bytes
        self._max_bytes = max_bytes
        self._queue: deque[Event] = deque()
        self._buffered = 0
        self._condition = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._produce, name="trawl-crates-inflate", daemon=True)
        self._thread.start()
        if stop is not None:
            stop.attach(self.close)

    # --- the producing thread ----------------------------------------------------------

    def _put(self, event: Event, size: int = 0) -> bool:
        """Queue an event once there is room; False when the reader closed."""
        with self._condition:
            while self._buffered > self._max_bytes and not self._closed:
                self._condition.wait()
            if self._closed:
                return False
            self._queue.append(event)
            self._buffered += size
            self._condition.notify_all()
            return True

    def _produce(self) -> None:
        try:
            for name, handle in self._members(self._stream):
                kind = self._classify(name)
                if kind is None:
                    continue
                if not self._put(("member", name, kind)):
                    return
                if kind == "whole":
                    data = handle.read(MAX_RECORD_BYTES + 1)  # metadata.json: a few hundred bytes
                    if len(data) > MAX_RECORD_BYTES:
                        short = name.rsplit("/", 1)[-1]
                        size = MAX_RECORD_BYTES >> 20
                        raise DumpError(f"{short}: over {size} MiB: not a file of the db-dump")
                    if not self._put(("whole", data), len(data)):
                        return
                    continue
                for header, block in record_blocks(handle, self._block_bytes):
                    if not self._put(("block", header, block), len(block)):
                        return
            self._put(("end",))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, which says it
            self._put(("error", exc))

    # --- the reading side --------------------------------------------------------------

    def events(self) -> Iterator[Event]:
        """The events in order, up to ``("end",)``; an error of the thread is raised here, and
        :class:`Stopped` once closed."""
        while True:
            with self._condition:
                while not self._queue and not self._closed:
                    self._condition.wait()
                if self._closed:
                    raise Stopped("the reading of the db-dump was stopped")
                event = self._queue.popleft()
                if event[0] == "block":
                    self._buffered -= len(event[2])
                elif event[0] == "whole":
                    self._buffered -= len(event[1])
                self._condition.notify_all()
            if event[0] == "error":
                raise event[1]
            if event[0] == "end":
                return
            yield event

    def close(self) -> None:
        """The reader is done, or stopped (any thread): the thread stops at its next event (a
        blocked download read ends when the stream is closed, which the spider does), and a
        reader waiting in :meth:`events` gets :class:`Stopped`."""
        with self._condition:
            self._closed = True
            self._queue.clear()
            self._buffered = 0
            self._condition.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the thread to end; has it?"""
        self._thread.join(timeout)
        return not self._thread.is_alive()
