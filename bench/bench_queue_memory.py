"""Redis memory per queued task, per queued page request and per seen request (``MEMORY USAGE``).

    python -m bench.bench_queue_memory [N]

Starts a real redis-server (tests/servers/redis_server.py) and fills, N entries each:

- trawl's queue: N tasks (``trawl enqueue``'s JSON, one per domain and source) in
  ``trawl:queue:pending``, and their dedup entries in ``trawl:queue:queued``;
- for comparison, scrapy-redis's page-level queue: N Wayback CDX page requests
  serialized as scrapy-redis does (``request_to_dict`` + ``picklecompat``) in its
  priority queue (a sorted set), and N request fingerprints in its dupefilter (a set).

Prints bytes per entry and what a million costs. Figures: docs/distributed.md.
"""

from __future__ import annotations

import sys

import redis
import scrapy
from scrapy.utils.request import RequestFingerprinter
from scrapy_redis import picklecompat

from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import PENDING, QUEUED, WorkQueue
from trawl.distributed.tasks import Task

MILLION = 1_000_000


def per_entry(client: redis.Redis, key: str, n: int) -> float:
    return int(client.memory_usage(key, samples=0) or 0) / n


def main(n: int) -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        queue = WorkQueue(client)
        settings = {"WAYBACK_BASE_URL": "http://127.0.0.1:8080"}
        for i in range(n):
            domain = f"host{i}.example.com"
            queue.push(Task(domain, "wayback", {"domain": domain, "filters": "false"}, settings, True))
        fingerprinter = RequestFingerprinter()
        pipe = client.pipeline(transaction=False)
        for i in range(n):
            url = (
                "http://127.0.0.1:8080/cdx/search/cdx?url=example.com&matchType=domain"
                f"&fl=original,timestamp,statuscode,mimetype&collapse=urlkey&page={i}"
            )
            request = scrapy.Request(url, callback=None, meta={"page": i, "download_slot": "wayback"})
            pipe.zadd("bench:requests", {picklecompat.dumps(request.to_dict()): 0})
            pipe.sadd("bench:dupefilter", fingerprinter.fingerprint(request).hex())
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()
        rows = [
            ("trawl task, queued (pending list)", per_entry(client, PENDING, n)),
            ("trawl task dedup entry (queued hash)", per_entry(client, QUEUED, n)),
            ("page request, queued (scrapy-redis zset, pickle)", per_entry(client, "bench:requests", n)),
            ("seen request fingerprint (scrapy-redis set)", per_entry(client, "bench:dupefilter", n)),
        ]
        print(f"{n:,} entries each, redis-server {client.info('server')['redis_version']}")
        for name, size in rows:
            print(f"{name:<52} {size:8.0f} B each  {size * MILLION / 2**20:8.0f} MiB per million")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
