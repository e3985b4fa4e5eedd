"""Mining archived (and live) responses for endpoints, parameters and secrets.

The one entry point is :func:`extract_file`: bytes, the file's URL and MIME type
in; a :class:`~trawl.mining.findings.FileFindings` out. Callers (the responses
source's mining stage, the live crawl's JS files) never pick a reader themselves.

Modules: ``extract`` (picks the reader, caps sizes, runs secrets), ``findings`` (the
values handed back), ``collect`` (resolution and de-duplication every reader shares),
``resolve`` (what is dropped, what a value resolves to), ``policy`` (which bare strings
count), ``secrets`` (the patterns), ``readers/`` (one per file type). docs/mining.md is
the reference.

Names are imported on first use (:func:`__getattr__`): ``trawl endpoints`` reads only
``trawl.mining.records`` and ``history``, and the readers (tree-sitter, lxml, the secret
patterns) cost 68 ms of its start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trawl.mining.extract import extract_file
    from trawl.mining.findings import Endpoint, FileFindings, Secret

__all__ = ["Endpoint", "FileFindings", "Secret", "extract_file"]


def __getattr__(name: str) -> Any:
    if name == "extract_file":
        from trawl.mining.extract import extract_file

        return extract_file
    if name in ("Endpoint", "FileFindings", "Secret"):
        from trawl.mining import findings

        return getattr(findings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
