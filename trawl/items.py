"""The batch types, where plugin authors import them from (``from trawl.items import UrlBatch``).

They are defined in :mod:`trawl.records.batches`; this module only hands them on, so
that a plugin written against trawl 0.1 keeps working after the move into ``records/``.
"""

from trawl.records.batches import URL_SCHEMA, Batch, CaptureBatch, UrlBatch, UrlRecord

__all__ = ["URL_SCHEMA", "Batch", "CaptureBatch", "UrlBatch", "UrlRecord"]
