"""Soft-404 hosts: a host that answers 200 (or redirects home) for every path is marked, not counted alive.

Before the first URL of an origin (scheme, host, port) is asked, the probe asks
that origin for a path that cannot exist (:func:`random_path`: ``/`` and 24 random
hex digits) and keeps its answer: its final status and its body's simhash
(:mod:`.fingerprint`). An answer to a real URL is then:

* ``dead``: no answer, or a final status of 400 or more;
* ``soft-404``: the random path's answer was a success too (below 400), with the
  same final status, and the two bodies' simhashes differ in at most
  ``PROBE_SOFT404_DISTANCE`` bits (default 12 of 64): the page is the host's
  "not found" page served as a success, or the page every unknown path
  redirects to;
* ``live``: anything else.

The threshold: two unrelated bodies differ in 32 bits on average (each bit of
a simhash is a coin toss across unrelated texts: 12 or fewer, about 2 pairs in
10 million), while a host's
error page that quotes the path it was asked differs from its answer for the
random path by 9 to 12 bits on a 40-word page (measured on the test site's
pages, tests/servers/website.py) and by fewer on longer pages, where one quoted
path is a smaller part of the words. Short pages of one template are the hard
case: pages of the test site's template with different 15-word texts differed
by 24 to 27 bits.

Answers wait (per origin, :class:`Origin.pending`) until the random path's answer
and the favicon have come, so every record is decided once, when it is stored.
Each origin keeps a few numbers and at most its answers in flight.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from trawl.sources.probe.fingerprint import hamming

#: Default bits in which an answer may differ from the random path's and still be the same page.
SOFT404_DISTANCE = 12


def random_path() -> str:
    """A path no site has (24 random hex digits), asked once per origin."""
    return "/" + secrets.token_hex(12)


@dataclass
class Origin:
    """What the probe knows of one origin: its answer to the random path, its favicon, answers waiting."""

    baseline_status: int | None = None
    baseline_simhash: int | None = None
    baseline_done: bool = False
    favicon: int | None = None
    favicon_done: bool = False
    pending: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return self.baseline_done and self.favicon_done

    @property
    def answers_everything(self) -> bool:
        """The random path answered a success: the host may serve its error page as one."""
        return self.baseline_status is not None and self.baseline_status < 400


def verdict(row: dict[str, Any], origin: Origin, simhash: int | None, distance: int) -> str:
    """``live``, ``soft-404`` or ``dead`` for an answer (the rule of the module docstring)."""
    status = row.get("status")
    if status is None or status >= 400:
        return "dead"
    if (
        origin.answers_everything
        and status == origin.baseline_status
        and simhash is not None
        and origin.baseline_simhash is not None
        and hamming(simhash, origin.baseline_simhash) <= distance
    ):
        return "soft-404"
    return "live"
