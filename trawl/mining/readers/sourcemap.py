"""Source maps: the original files' paths, and each original file mined in its own right.

``sources`` are resolved as the Source Map v3 spec says: ``sourceRoot`` (when there is
one) is put before each path, then the result is resolved against the map's URL. A path
that lands on ``http(s)`` is an endpoint (``sourcemap``: servers often still answer
``/src/...``); ``webpack://`` and other schemes are kept only in ``FileFindings.sources``.
Each ``sourcesContent`` entry is read by the reader its own extension picks (``.ts``
and ``.js`` by the JavaScript reader, ``.vue`` and ``.html`` by the HTML reader), with
every finding's ``source`` set to that original file, and its lines counted in it.
Index maps (``sections``) are not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin

import orjson

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.resolve import WEB_SCHEMES

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
#: read(body, url, source) -> findings of one original file
ReadSource = Callable[[bytes, str, str], FileFindings]


def is_source_map(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("sources"), list) and "mappings" in data


def source_path(source: str, root: str, map_url: str) -> str:
    """Where an original file is, by the spec: ``sourceRoot`` + ``/`` + path, against the map's URL."""
    if root and not _SCHEME.match(source):
        source = (root if root.endswith("/") else root + "/") + source
    scheme = _SCHEME.match(source)
    if scheme and scheme.group(1).lower() not in WEB_SCHEMES:
        return source  # webpack:///src/x.js names a file in the bundler, not on a server
    try:
        return urljoin(map_url, source)
    except ValueError:
        return source


def read(body: bytes, url: str, read_source: ReadSource, *, source: str | None = None) -> FileFindings | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not is_source_map(data):
        return None
    collector = Collector(url, source)
    root = data.get("sourceRoot") if isinstance(data.get("sourceRoot"), str) else ""
    contents = data.get("sourcesContent") if isinstance(data.get("sourcesContent"), list) else []
    found = FileFindings(reader="sourcemap")
    for index, original in enumerate(data["sources"]):
        if not isinstance(original, str):
            continue
        path = source_path(original, root, url)
        content = contents[index] if index < len(contents) and isinstance(contents[index], str) else None
        found.sources.append((path, content))
        if path.split(":", 1)[0].lower() in WEB_SCHEMES:
            collector.add(path, "sourcemap", 0)
        if content:
            mined = read_source(content.encode("utf-8"), url, path)
            collector.merge(mined)
            found.secrets.extend(mined.secrets)
    merged = collector.findings("sourcemap")
    found.endpoints, found.params = merged.endpoints, merged.params
    return found
