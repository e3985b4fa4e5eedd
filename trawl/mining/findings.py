"""What mining one file finds: endpoints, parameter names, secrets, embedded sources.

These are plain values, not batches: a miner runs in a worker process (mining is
CPU) and hands back what it found for one file; the caller turns
a whole batch of files' findings into polars columns (the ``endpoint`` record kind)
on its side. Frozen dataclasses with tuples pickle small and compare by value, so
a corpus test can compare the found set with the expected set directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One use of a URL or path found in a file.

    ``url`` is absolute when the file's URL resolves it (root-relative and relative
    paths are resolved against the file's URL); a value built from unknown parts
    keeps ``EXPR`` where the unknown part was (jsluice's placeholder). ``method`` is
    ``None`` when the file does not say (a plain link is not a GET: it is unknown).
    ``how`` names the use: ``fetch``, ``xhr``, ``jquery``, ``axios``, ``location``,
    ``open``, ``import``, ``importmap``, ``href``, ``src``, ``form``, ``link``, ``script``,
    ``meta-refresh``, ``json``, ``xml``, ``sitemap``, ``sourcemap``, ``string`` (an
    API-looking literal) or ``regex`` (the fallback for files the parser cannot read).
    """

    url: str
    how: str
    method: str | None = None
    query: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    line: int = 0
    #: The original file a source map's ``sourcesContent`` held this in (resolved path); ``None`` otherwise.
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Secret:
    """A string that matches a documented secret pattern (``rule``), with its line.

    ``value`` is the match itself: it is stored (the user asked for secrets with
    ``-a secrets=true``) and masked in every log line by the caller.
    """

    rule: str
    value: str
    line: int
    #: As :attr:`Endpoint.source`: the source map's original file the line is counted in.
    source: str | None = None


@dataclass(slots=True)
class FileFindings:
    """Everything found in one file."""

    endpoints: list[Endpoint] = field(default_factory=list)
    #: Parameter names that are not tied to one endpoint (JSON keys, input names, meta names).
    params: set[str] = field(default_factory=set)
    secrets: list[Secret] = field(default_factory=list)
    #: A source map's original files: (path, content or None when the map holds no content).
    sources: list[tuple[str, str | None]] = field(default_factory=list)
    #: Which reader produced the findings: ``javascript``, ``html``, ``json``, ``xml``,
    #: ``sourcemap``, ``regex`` (the fallback) or ``skipped`` (an image, font, audio or video type).
    reader: str = "regex"
    #: True when the file was longer than :data:`trawl.mining.extract.MAX_BYTES` and only its head was read.
    truncated: bool = False
