"""A urlscan search page decoded to the fields trawl reads, and nothing else.

A page of 10,000 results (``URLSCAN_PAGE_SIZE``) is about 20 MB of
JSON; ``orjson.loads`` made every field of every result a Python object (the
``stats``, ``task`` and ``page`` objects, ``screenshot``, ``_id``...), several
times the page's size while the page was read, and set the four-source
crawl's peak RSS (452 MB, 337 MB with 1,000-result pages). msgspec decodes
into the typed structs below and skips every other field without making an
object of it. The leaf fields stay ``Any``: the code that reads them already
checks their types (a status may come as a string or a number). A page that
does not fit the structs (a ``task`` that is not an object...) is decoded
whole with orjson, as before.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson


class _Task(msgspec.Struct):
    url: Any = None
    time: Any = None


class _Landed(msgspec.Struct):
    url: Any = None
    status: Any = None
    mimeType: Any = None  # noqa: N815 - urlscan's field name
    ptr: Any = None


class _Result(msgspec.Struct):
    task: _Task | None = None
    page: _Landed | None = None
    sort: Any = None


class _SearchPage(msgspec.Struct):
    results: list[_Result] | None = None
    total: Any = None
    has_more: Any = None


_DECODER = msgspec.json.Decoder(_SearchPage)


def decode_page(body: bytes) -> Any:
    """The page as ``orjson.loads`` would give it, with only the fields trawl reads.

    Raises ``ValueError`` when the body is not JSON (as ``orjson.loads`` does).
    """
    try:
        page = _DECODER.decode(body)
    except msgspec.ValidationError:
        return orjson.loads(body)  # valid JSON of another shape: the callers check it
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    document: dict[str, Any] = {"total": page.total} if page.total is not None else {}
    if page.has_more is not None:
        document["has_more"] = page.has_more
    if page.results is not None:
        document["results"] = [_as_dict(result) for result in page.results]
    return document


def _as_dict(result: _Result) -> dict[str, Any]:
    scan: dict[str, Any] = {"sort": result.sort}
    if result.task is not None:
        scan["task"] = {"url": result.task.url, "time": result.task.time}
    if result.page is not None:
        landed = result.page
        scan["page"] = {
            "url": landed.url,
            "status": landed.status,
            "mimeType": landed.mimeType,
            "ptr": landed.ptr,
        }
    return scan
