"""A mining worker process: ``python -m trawl.mining.worker CRAWL_PID``, speaking frames on its pipes.

Each frame is an 8-byte big-endian length and a pickle. The first frame from the
pool is its ``sys.path`` (a job may name a function of a module only the crawl's
path finds, such as ``MINING_EXTRACTOR``); every later one is a call
``(function, args)``, answered by ``(True, result)`` or ``(False, exception)``.
End of file on the requests is the pool closing: the worker exits. The worker
ignores Ctrl-C (the crawl handles it and then closes the pool) and dies with the
crawl even on ``kill -9`` (:func:`trawl.mining.work.exit_with`).

Standard output is the answers' pipe: anything a reader prints goes to standard
error instead, never into a frame.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct(">Q")


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next frame's object, or None at end of file."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # noqa: S301 - the frames come from the crawl that started this process


def write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def answer(function: Any, args: tuple[Any, ...]) -> tuple[bool, Any]:
    """``function(*args)`` as ``(True, result)``, or ``(False, exception)`` when it raised."""
    try:
        return True, function(*args)
    except Exception as exc:  # noqa: BLE001 - the pool's caller decides what a failure means
        return False, exc


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to standard error, not into an answer
    from trawl.mining.work import exit_with, release_memory

    exit_with(int(sys.argv[1]))
    path = read_frame(requests)
    if path is None:
        return
    sys.path[:] = path
    while (call := read_frame(requests)) is not None:
        function, args = call
        ok, value = answer(function, args)
        release_memory()
        try:
            write_frame(replies, (ok, value))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an exception that does not pickle
            write_frame(replies, (False, RuntimeError(f"{type(value).__name__}: {value}"[:500] or str(exc))))


if __name__ == "__main__":
    main()
