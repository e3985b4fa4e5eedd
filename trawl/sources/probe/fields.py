"""What a search can ask of the ``probe`` records (``live:true AND ext:php``).

Kept apart from :mod:`.records` (which imports polars) so that ``trawl search``
reads the declaration without the batch type (:mod:`trawl.records.searchable`).
Joined to a URL by the record's ``url``; ``status_live`` is the column ``status``
(``status:`` is the URL record's archived statuses).
"""

from __future__ import annotations

from trawl.search.fields import Field

SEARCH_FIELDS: dict[str, Field] = {
    "live": Field("live", "bool"),
    "status_live": Field("status_live", "int", bounds=(0, 999), column="status"),
    "title": Field("title", "keyword"),
    "verdict": Field("verdict", "keyword", lower=True),
}
