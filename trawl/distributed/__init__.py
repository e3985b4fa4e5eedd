"""Distributed runs: work on a shared Redis queue, one rate limit per source across workers.

``TRAWL_REDIS_URL`` names the Redis every part shares (:mod:`.connection`); see
docs/distributed.md for the whole picture.
"""
