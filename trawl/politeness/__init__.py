"""Politeness: one gate per source (budgets, concurrency, AIMD, bans, pauses), retries, proxies.

The core (gate, aimd, rates, retryhints, retryrule, bans, inflight) is plain objects with an
injected clock; the Scrapy-facing parts (ratelimit, retry, proxies, throttle, handler,
downloader) are thin adapters. See docs/politeness.md.
"""
