"""A run's page requests in Redis (trawl.distributed.spread), on a real redis-server.

The queue the spreading of one domain's pages over workers will use (not yet
wired into ``trawl worker``): requests go in by Scrapy's ``to_dict`` with
callbacks by name and come out bound to another process's spider; one that
cannot be serialized fails loudly; a worker that dies holding requests loses
none of them, and what is fetched twice is exactly what it held; the run's
dedup expires with the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis
import scrapy
from scrapy.utils.request import fingerprint

from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import WorkQueue
from trawl.distributed.spread import RunRequests, UnserializableRequest


class Pages(scrapy.Spider):
    name = "pages"

    def parse_page(self, response: scrapy.http.Response) -> None:
        """A callback another worker's spider has too: requests name it."""

    def on_error(self, failure: object) -> None:
        """An errback, named the same way."""


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    with RedisServer() as server:
        yield redis.Redis.from_url(server.url)


def page(spider: Pages, n: int) -> scrapy.Request:
    return scrapy.Request(
        f"http://127.0.0.1:9/cdx?url=example.com/*&page={n}", callback=spider.parse_page,
        errback=spider.on_error, meta={"endpoint": 0, "page": n, "walk": False, "fields": ("url", "status")},
    )  # fmt: skip


def push_pages(run: RunRequests, spider: Pages, count: int) -> None:
    for n in range(count):
        request = page(spider, n)
        assert run.push(request, spider, fingerprint(request).hex())


def test_a_request_comes_out_bound_to_another_workers_spider(client: redis.Redis) -> None:
    owner, joiner = Pages(), Pages()
    push_pages(RunRequests(client, "run1", "w1"), owner, 1)
    theirs = RunRequests(client, "run1", "w2")
    raw = theirs.pop()
    assert raw is not None
    request = theirs.decode(raw, joiner)
    assert request.callback == joiner.parse_page and request.errback == joiner.on_error
    assert request.meta["page"] == 0 and request.meta["fields"] == ("url", "status")
    assert client.llen("trawl:spread:run1:held:w2") == 1  # held until acknowledged
    assert not theirs.finished()
    theirs.ack(raw)
    assert theirs.finished()


@pytest.mark.parametrize(
    "make",
    [
        lambda s: scrapy.Request("http://127.0.0.1:9/a", callback=lambda response: None),
        lambda s: scrapy.Request(
            "http://127.0.0.1:9/b", callback=s.parse_page, meta={"lock": threading.Lock()}
        ),
    ],
    ids=["a lambda callback", "a lock in its meta"],
)
def test_a_request_that_cannot_be_serialized_fails_loudly_and_queues_nothing(
    client: redis.Redis, make
) -> None:
    spider = Pages()
    run = RunRequests(client, "run1", "w1")
    request = make(spider)
    with pytest.raises(
        UnserializableRequest, match=r"pages: the request for http://127\.0\.0\.1:9/. cannot be put"
    ):
        run.push(request, spider, fingerprint(request).hex())
    assert client.llen(run.requests) == 0 and not client.exists(run.seen)


def test_a_dead_workers_held_requests_come_back_and_only_those_are_fetched_twice(client: redis.Redis) -> None:
    spider = Pages()
    queue = WorkQueue(client, heartbeat=0.1)  # a worker is dead 0.3 s after its last beat
    push_pages(RunRequests(client, "run1", "owner"), spider, 20)
    victim = RunRequests(client, "run1", "victim")
    queue.beat("victim")
    fetched: list[int] = []
    for _ in range(3):  # it takes three pages, fetches them, and dies before storing any
        raw = victim.pop()
        assert raw is not None
        fetched.append(victim.decode(raw, spider).meta["page"])
    survivor = RunRequests(client, "run1", "survivor")
    queue.beat("survivor")
    deadline = time.monotonic() + 30
    while not (reaped := survivor.reap()):  # polled: the victim's heartbeat expires in 0.3 s
        assert time.monotonic() < deadline, "the dead worker's requests never came back"
        threading.Event().wait(0.05)
    assert reaped == {"victim": 3}
    while (raw := survivor.pop()) is not None:
        fetched.append(survivor.decode(raw, spider).meta["page"])
        survivor.ack(raw)
    assert sorted(set(fetched)) == list(range(20))  # recall 1.000
    assert len(fetched) - 20 == 3  # fetched twice: exactly what the dead worker held
    assert survivor.finished()


def test_the_runs_dedup_is_bounded_by_its_expiry(client: redis.Redis) -> None:
    spider = Pages()
    run = RunRequests(client, "run1", "w1", ttl=60)
    request = page(spider, 1)
    key = fingerprint(request).hex()
    assert run.push(request, spider, key)
    assert not run.push(page(spider, 1), spider, key)  # seen in this run: not queued again
    assert run.push(page(spider, 1).replace(dont_filter=True), spider, key)  # a retry is
    assert client.llen(run.requests) == 2
    assert 0 < client.pttl(run.seen) <= 60_000 and 0 < client.pttl(run.requests) <= 60_000
