"""A third-party record kind whose fields ``trawl search`` can name: notes about URLs.

The whole plugin is a batch type: its key (``url``) and its ``SEARCH_FIELDS``. Nothing
in ``trawl/search/`` or in any store's ``query.py`` knows it: defining the class
declares its fields, and the SQLite store joins ``note_records`` by ``url``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trawl.records.batches import Batch
from trawl.search.fields import Field


class NoteBatch(Batch):
    """A label and a score someone gave a URL."""

    __slots__ = ()
    kind = "note"
    SCHEMA: dict[str, Any] = {"url": pl.String, "label": pl.String, "score": pl.Int64}
    KEY = ("url",)
    SEARCH_FIELDS = {
        "label": Field("label", "keyword", lower=True),
        "note_score": Field("note_score", "int", bounds=(0, 100), column="score"),
    }
