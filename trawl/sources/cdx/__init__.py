"""The CDX protocol (Wayback, pywb, OutbackCDX, Common Crawl): parsing, paging, and its sources."""
