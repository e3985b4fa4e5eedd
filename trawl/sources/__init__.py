"""One spider per source. Each yields CaptureBatch items, one per upstream page."""
