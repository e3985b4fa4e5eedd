"""Scrapy extensions: progress lines and the end-of-run summary."""
