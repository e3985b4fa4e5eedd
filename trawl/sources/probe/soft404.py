"""Soft-404 hosts: a host that answers 200 (or redirects home) for every path is marked, not counted alive.

Before the first URL of an origin (scheme, host, port) is asked, the probe asks
that origin for a path that cannot exist (:func:`random_path`: ``/`` and 24 random
hex digits) and keeps its answer: its final status and its body's echo-free
simhashes (:func:`echo_free_simhashes`). An answer to a real URL is then:

* ``dead``: no answer, or a final status of 400 or more;
* ``soft-404``: the random path's answer was a success too (below 400), with the
  same final status, and the two bodies' echo-free simhashes differ in at most
  ``PROBE_SOFT404_DISTANCE`` bits (default 12 of 64; the closest pair counts):
  the page is the host's "not found" page served as a success, or the page
  every unknown path redirects to;
* ``live``: anything else.

**Echoes.** An error page usually quotes what it was asked ("the page
/docs/how-to-install does not exist", the full URL, the decoded path, or only
the last segment as a title), and those words are the only ones in which the
host's answers for the random path and for a real path differ. Hashed as they
are, they moved the simhash past the threshold: on the test site's 40-word page
(tests/servers/website.py) ``/gone`` differed from a random path's page by 5 to
18 bits and was missed 27 times in 100 (2,000 random paths), ``/gone-page`` 8
in 100, ``/docs/how-to-install-the-thing-on-linux`` 88 in 100; 6 of 20 runs of
the live crawl's tests failed; and of 1,200 echoing error pages (six ways of
echoing, 200 seeded paths of 1 to 40 words: tests/test_probe.py) 467 were
recognised. So both pages are hashed with their own URLs' echo taken out first
(:func:`echo_free_simhashes`), in up to three readings, from the surest to the
widest: the path as text (``/a/b-c``, raw and percent-decoded, with or without
the query; a quoted full URL contains it), then also the last segment's words,
then also every segment's and query value's words. A wider reading also removes
a page's own word that happens to be a segment ("named" in ``/named``), so each
reading is a hash of its own and the closest pair decides. With it: those
three paths 2,000 in 2,000 at 0 bits, 1,200 of the 1,200 pages (the worst at
10 bits: a one-word segment that is also a word of the page), none of 2,400
real pages of the same template (some quoting their own path) taken for the
error page, and 20 runs in 20 of the probe's and the live crawl's soft-404
tests passed. Asking a second random path would not help: it differs from the
first only in random words, and says nothing of which words of a real path's
answer are its echo.

The threshold: two unrelated bodies differ in 32 bits on average (each bit of
a simhash is a coin toss across unrelated texts: 12 or fewer, about 2 pairs in
10 million; with at most three readings a side, nine pairs are compared), while
one template with its echo removed differs by 0 bits, or by what else the host
varies (a date, a request id). Short pages of one template are the hard case:
pages of the test site's template with different 15-word texts differed by 24
to 27 bits.

Answers wait (per origin, :class:`Origin.pending`) until the random path's answer
and the favicon have come, so every record is decided once, when it is stored.
Each origin keeps a few numbers and at most its answers in flight.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from trawl.sources.probe.fingerprint import hamming, visible_text, words_simhash

#: Default bits in which an answer may differ from the random path's and still be the same page.
SOFT404_DISTANCE = 12


def random_path() -> str:
    """A path no site has (24 random hex digits), asked once per origin."""
    return "/" + secrets.token_hex(12)


_WORD = re.compile(r"\w+")
_SLUG_WORD = re.compile(r"[^\W_]+")
Words = tuple[str, ...]


@dataclass(frozen=True)
class Echoes:
    """How a page may quote the URLs it was asked, lower-cased (:func:`echoes_of`)."""

    #: The paths as text (raw and decoded, with and without the query), longest first.
    texts: tuple[str, ...] = ()
    #: The last segment's words (raw, decoded, without its extension).
    last: frozenset[Words] = frozenset()
    #: Every segment's and query value's words (the last segment's too).
    segments: frozenset[Words] = frozenset()


def echoes_of(urls: Iterable[str]) -> Echoes:
    """The ways a page may quote ``urls`` (the URL asked, each redirect, the final one)."""
    texts: set[str] = set()
    last: set[Words] = set()
    segments: set[Words] = set()
    for url in urls:
        parts = urlsplit(url)
        asked = (parts.path, f"{parts.path}?{parts.query}") if parts.query else (parts.path,)
        for raw in asked:
            texts.update(
                form.lower() for form in (raw, unquote(raw), unquote_plus(raw)) if _WORD.search(form)
            )
        names = [name for name in parts.path.split("/") if name]
        for i, name in enumerate(names):
            stem = name.rsplit(".", 1)[0]
            runs = _runs({name, unquote(name), stem, unquote(stem)})
            segments.update(runs)
            if i == len(names) - 1:
                last.update(runs)
        segments.update(_runs({value for _, value in parse_qsl(parts.query)}))
    return Echoes(tuple(sorted(texts, key=len, reverse=True)), frozenset(last), frozenset(segments))


def _runs(forms: Iterable[str]) -> set[Words]:
    """Each form's words as a page's are read, and with ``_`` a space too (a slug shown as words)."""
    runs: set[Words] = set()
    for form in forms:
        for pattern in (_WORD, _SLUG_WORD):
            if words := tuple(pattern.findall(form.lower())):
                runs.add(words)
    return runs


def without_runs(words: list[str], runs: Iterable[Words]) -> list[str]:
    """``words`` without each place where one of ``runs`` occurs whole (the longest run first)."""
    by_first: dict[str, list[Words]] = {}
    for run in sorted(runs, key=len, reverse=True):
        by_first.setdefault(run[0], []).append(run)
    kept: list[str] = []
    i = 0
    while i < len(words):
        for run in by_first.get(words[i], ()):
            if tuple(words[i : i + len(run)]) == run:
                i += len(run)
                break
        else:
            kept.append(words[i])
            i += 1
    return kept


def echo_free_simhashes(
    text: str, urls: Iterable[str], known: tuple[list[str], int] | None = None
) -> tuple[int, ...]:
    """The simhashes of a page with its echo of ``urls`` taken out, one per reading (module docstring).

    Entities are decoded first (a query's ``&`` is quoted as ``&amp;``); a path
    as text is removed where it is not followed by more of a word (``/gone`` is
    not ``/gone-page``); a segment's words only where they all occur in a row.
    ``known``: the page's :func:`~.fingerprint.visible_words` and their simhash,
    reused for a reading that removed nothing (most pages quote nothing).
    """
    found = echoes_of(urls)
    shown = html.unescape(visible_text(text)).lower()
    if found.texts:
        pattern = "|".join(re.escape(form) for form in found.texts)
        shown = re.sub(rf"(?:{pattern})(?!\w)", " ", shown)
    words = _WORD.findall(shown)
    readings = [words]
    for runs in (found.last, found.segments):
        fewer = without_runs(words, runs)
        if fewer not in readings:
            readings.append(fewer)
    plain, hashed = known if known is not None else (None, 0)
    return tuple(hashed if reading == plain else words_simhash(reading) for reading in readings)


def closest(simhashes: tuple[int, ...], others: tuple[int, ...]) -> int | None:
    """The fewest bits in which one of ``simhashes`` differs from one of ``others``; ``None``: no pair."""
    return min((hamming(a, b) for a in simhashes for b in others), default=None)


@dataclass
class Origin:
    """What the probe knows of one origin: its answer to the random path, its favicon, answers waiting."""

    baseline_status: int | None = None
    #: The random path's answer's echo-free simhashes (empty: no success, or no text).
    baseline_simhashes: tuple[int, ...] = ()
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


def verdict(row: dict[str, Any], origin: Origin, simhashes: tuple[int, ...], distance: int) -> str:
    """``live``, ``soft-404`` or ``dead`` for an answer (the rule of the module docstring).

    ``simhashes``: the answer's echo-free simhashes (:func:`echo_free_simhashes`; empty: no text).
    """
    status = row.get("status")
    if status is None or status >= 400:
        return "dead"
    if origin.answers_everything and status == origin.baseline_status:
        bits = closest(simhashes, origin.baseline_simhashes)
        if bits is not None and bits <= distance:
            return "soft-404"
    return "live"
