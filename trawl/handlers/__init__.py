"""Download handlers (DOWNLOAD_HANDLERS)."""
