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

Redirects are never followed, to another host or the same one: a receiver
answering 3xx is a failure naming where it pointed (``answered a redirect
(HTTP 302) to other.example; not followed``). Following one is what urllib
does by default, and it is wrong for a webhook every way: a 301/302/303 turns
the POST into a bodiless GET that delivers nothing yet was logged ``notified
(HTTP 200)``, a 307/308 would re-post the summary, and the
``Authorization`` header with it, to a host the operator never named. Even a
same-host redirect (``http://`` to ``https://``, a moved path) means the URL in
``NOTIFY_URLS`` is out of date; the warning says so rather than guessing.

A URL with user info (``https://user:pw@host/hook``) is posted to without it,
the user and password sent as HTTP basic auth: urllib would take
``user:pw@host`` for the host name (``Name or service not known``). The
password is a registered secret (:mod:`trawl.notify.targets`), so no line
shows it.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import orjson

from trawl.notify.receivers import Receiver

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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 3xx answer comes back as an ``HTTPError`` (see the module)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _request(url: str, body: bytes, user_agent: str) -> urllib.request.Request:
    """The POST to ``url``, its user info (if any) taken out and sent as basic auth."""
    headers = {"Content-Type": "application/json", "User-Agent": user_agent}
    parts = urlsplit(url)
    if "@" in parts.netloc:
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return urllib.request.Request(url, data=body, method="POST", headers=headers)


def _redirect_text(exc: urllib.error.HTTPError, url: str) -> str:
    """``answered a redirect (HTTP 302) to HOST[:PORT]; not followed``: the host only, never a
    path or query, which may carry a token."""
    try:
        target = urlsplit(urljoin(url, exc.headers.get("Location", "")))
        host, port = target.hostname or "?", target.port
    except ValueError:  # a port that is not a number, a bad IPv6 literal: still one warning
        host, port = "an unusable URL", None
    shown = host if port is None else f"{host}:{port}"
    return f"answered a redirect (HTTP {exc.code}) to {shown[:100]}; not followed"


def _send(post: Post, timeout: float, user_agent: str) -> None:
    request = _request(post.receiver.url, post.body, user_agent)
    try:
        opener = urllib.request.build_opener(_NoRedirects)  # as urlopen's, with this handler
        with opener.open(request, timeout=timeout) as answer:  # http(s) only
            post.status = answer.status
            answer.read(65536)
    except urllib.error.HTTPError as exc:
        post.status = exc.code
        if 300 <= exc.code < 400 and exc.headers.get("Location"):
            post.error = _redirect_text(exc, request.full_url)
        else:
            post.error = f"HTTP {exc.code}"
        exc.close()
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
    from trawl.common.stopping import SIGNALS  # it imports Scrapy: read commands import this module too

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
        # In short steps: a SIGINT or SIGTERM (trawl.common.stopping) ends the wait at once.
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
