"""Exports (``-o``/``-O``): feed exporters, append and safe-replace storages, exports from the store."""
