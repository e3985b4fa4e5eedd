"""Posting notifications: all at once, each bounded by ``NOTIFY_TIMEOUT``, never raising.

The hook runs after the reactor has stopped, so the posts use the standard
library's ``urllib`` (nothing to install, no reactor to restart), one daemon
thread per receiver, all started together and waited for until one shared
deadline: a run with three receivers, one of them hanging, ends at most
``NOTIFY_TIMEOUT`` (plus thread start-up) after the crawl, never three times
that, and a thread still waiting on a receiver that never answered does not
keep the process alive. A receiver that refuses, fails, answers an error
status or does not answer in time is one WARNING line naming it by kind and
host; the crawl's exit status is unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import orjson

from trawl.notify.receivers import Receiver
from trawl.run.stopping import SIGNALS

logger = logging.getLogger("trawl.notify")
#: Seconds between two looks at the signal flag while receivers are waited for.
_STEP = 0.1


@dataclass
class Post:
    receiver: Receiver
    body: bytes
    error: str | None = None
    status: int | None = None
    done: bool = False
    #: The socket's own timeout fired: the same case as the deadline passing first.
    timed_out: bool = False


def _send(post: Post, timeout: float, user_agent: str) -> None:
    request = urllib.request.Request(
        post.receiver.url,
        data=post.body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": user_agent},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - http(s) only
            post.status = answer.status
            answer.read(65536)
    except urllib.error.HTTPError as exc:
        post.status = exc.code
        post.error = f"HTTP {exc.code}"
    except TimeoutError:
        post.timed_out = True
    except urllib.error.URLError as exc:
        post.timed_out = isinstance(exc.reason, TimeoutError)
        post.error = str(exc.reason) or type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - a timeout, a reset, anything: one warning
        post.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    finally:
        post.done = True


def post_all(bodies: list[tuple[Receiver, dict]], timeout: float, user_agent: str) -> list[Post]:
    """Post every body to its receiver at once; wait until all are done or ``timeout`` has passed."""
    posts = [Post(receiver, orjson.dumps(body)) for receiver, body in bodies]
    if SIGNALS.interrupted.is_set():  # a second signal stopped the crawl: exit now, send nothing
        for post in posts:
            label = post.receiver.label
            logger.warning("notify: %s not notified: the crawl was stopped by a second signal", label)
        return posts
    threads = [
        threading.Thread(target=_send, args=(post, timeout, user_agent), name="trawl-notify", daemon=True)
        for post in posts
    ]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        # In short steps: a SIGINT or SIGTERM (trawl.run.stopping) ends the wait at once.
        while thread.is_alive() and not SIGNALS.interrupted.is_set() and time.monotonic() < deadline:
            thread.join(min(_STEP, max(deadline - time.monotonic(), 0)))
    for post in posts:
        label = post.receiver.label
        if not post.done and SIGNALS.interrupted.is_set():
            logger.warning("notify: %s: interrupted by a signal; not waiting for it", label)
        elif not post.done or post.timed_out:
            logger.warning("notify: %s did not answer within %g s; not waiting for it", label, timeout)
        elif post.error is not None:
            logger.warning("notify: %s: %s", label, post.error)
        else:
            logger.info("notify: %s notified (HTTP %s)", label, post.status)
    return posts
