"""Elasticsearch store throughput against a bare ``streaming_bulk`` of the same documents.

Starts noida-db's Elasticsearch-compatible server (or uses ``--url``), makes
``--urls`` URL records in batches of ``--batch`` (a deduplicated CDX page), and
measures documents per second:

* pipeline: ``ElasticsearchStore.write_batch`` for every batch into a fresh
  index: building the documents (ECS fields, provenance), ``create`` bulks,
  the per-item results, ``new`` flags;
* bare: ``elasticsearch.helpers.streaming_bulk`` of exactly the documents the
  store wrote (read back first, so both send the same bytes' worth), with its
  defaults, into another fresh index with the same template;
* known URLs: ``--rerun`` URLs written a second time by another run (the
  409 + ``_mget`` + merge + conditional write path), against a bare
  ``streaming_bulk`` overwrite (``index`` actions) of the same documents.

Each measurement gets a fresh noida-db server (its speed falls as it holds
more documents); the first two run ``--rounds`` times, best of each kept.
Target: pipeline >= 0.8 x bare for new URLs.

    python bench/bench_elasticsearch.py [--urls N] [--batch N] [--url http://127.0.0.1:9200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from elasticsearch import Elasticsearch, helpers  # noqa: E402

from tests.servers.noida import NoidaServer, es_settings  # noqa: E402
from trawl.pipeline.context import RunContext  # noqa: E402
from trawl.records.batches import UrlBatch  # noqa: E402
from trawl.stores.elasticsearch import ElasticsearchStore  # noqa: E402
from trawl.stores.elasticsearch.templates import install_templates, names_from  # noqa: E402


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get_stats(self) -> dict[str, Any]:
        return self.values

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count


def make_batches(count: int, size: int) -> list[UrlBatch]:
    hosts = ["example.com", "www.example.com", "api.example.com", "blog.example.com", "cdn.example.com"]
    paths = ["/a/{}.js", "/api/v1/items/{}?id={}&x=1", "/docs/{}.pdf", "/p/{}", "/static/{}/main.css"]
    batches = []
    for start in range(0, count, size):
        urls, hosts_col = [], []
        for i in range(start, min(count, start + size)):
            host = hosts[i % len(hosts)]
            path = paths[(i // 5) % len(paths)].format(i, i % 97)
            urls.append(f"https://{host}{path}")
            hosts_col.append(host)
        n = len(urls)
        batches.append(
            UrlBatch.from_columns(
                "wayback",
                urls=urls,
                hosts=hosts_col,
                first_seen=[f"20{10 + i % 14:02d}0101000000" for i in range(n)],
                last_seen=["20240101000000"] * n,
                captures=[1 + i % 7 for i in range(n)],
                statuses=["200" if i % 9 else "200,404" for i in range(n)],
                mimes=["text/html"] * n,
            )
        )
    return batches


def copy(batch: UrlBatch) -> UrlBatch:
    """A batch of its own (the store replaces its frame's columns; the frame itself is immutable)."""
    return UrlBatch(batch.source, batch.frame, batch.page, batch.page_rows)


def open_store(uri: str, prefix: str, run_id: str) -> ElasticsearchStore:
    crawler = SimpleNamespace(settings=es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix), stats=_Stats())
    spider = SimpleNamespace(name="wayback")
    inputs = {"target": SimpleNamespace(domain="example.com")}
    context = RunContext(crawler=crawler, spider=spider, run_id=run_id, plugins=None, inputs=inputs)  # type: ignore[arg-type]
    store = ElasticsearchStore(uri, context)
    store.open()
    return store


def pipeline(uri: str, prefix: str, batches: list[UrlBatch], run_id: str) -> tuple[float, int]:
    store = open_store(uri, prefix, run_id)
    started = time.perf_counter()
    new = sum(store.write_batch(copy(b)) for b in batches)
    elapsed = time.perf_counter() - started
    store.close("finished")
    return elapsed, new


def bare(es: Elasticsearch, index: str, docs: list[tuple[str, dict]], op: str) -> float:
    actions = ({"_op_type": op, "_index": index, "_id": _id, "_source": src} for _id, src in docs)
    started = time.perf_counter()
    ok = sum(1 for success, _ in helpers.streaming_bulk(es, actions, raise_on_error=True) if success)
    elapsed = time.perf_counter() - started
    assert ok == len(docs)
    return elapsed


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rerun", type=int, default=10_000, help="URLs for the merge-path figure")
    parser.add_argument("--url", help="an Elasticsearch to use instead of starting noida-db")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


@contextmanager
def fresh_server(args: argparse.Namespace, tmp: Path) -> Iterator[tuple[str, Elasticsearch]]:
    """A new, empty noida-db server for each measurement (its speed falls as it holds more
    documents, which would favour whatever runs first); or ``--url``, shared."""
    if args.url:
        es = Elasticsearch(args.url, request_timeout=300)
        yield args.url, es
        es.close()
        return
    with NoidaServer(tmp / uuid.uuid4().hex) as server:
        es = Elasticsearch(server.url, request_timeout=300)
        yield server.url, es
        es.close()


def store_uri(url: str) -> str:
    return url.replace("http://", "elasticsearch://", 1).replace("https://", "elasticsearch+https://", 1)


def run(args: argparse.Namespace, tmp: Path) -> None:
    batches = make_batches(args.urls, args.batch)
    total = sum(len(b) for b in batches)
    best = {"pipeline": float("inf"), "bare": float("inf")}
    for round_number in range(1, args.rounds + 1):
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        with fresh_server(args, tmp) as (url, es):
            if round_number == 1:
                print(
                    f"server: {url} ({es.info()['version']['number']}),"
                    f" {total:,} URLs in batches of {args.batch:,}"
                )
            elapsed, new = pipeline(store_uri(url), prefix, batches, "run-1")
            assert new == total, (new, total)
            docs = read_back(es, prefix)
            assert len(docs) == total
            cleanup(es, [prefix])
        best["pipeline"] = min(best["pipeline"], elapsed)
        with fresh_server(args, tmp) as (url, es):
            bare_names = names_from({"ELASTICSEARCH_INDEX_PREFIX": f"benchbare-{uuid.uuid4().hex[:8]}"})
            install_templates(es, bare_names, es_settings())
            seconds = bare(es, bare_names.urls, docs, "create")
            cleanup(es, [bare_names.prefix])
        best["bare"] = min(best["bare"], seconds)
        print(
            f"round {round_number}: pipeline {total / elapsed:,.0f} docs/s,"
            f" bare streaming_bulk {total / seconds:,.0f} docs/s"
        )
    rates = {name: total / seconds for name, seconds in best.items()}
    print(
        f"new URLs (best of {args.rounds}): pipeline {rates['pipeline']:,.0f} docs/s;"
        f" bare streaming_bulk {rates['bare']:,.0f} docs/s;"
        f" ratio {best['bare'] / best['pipeline']:.2f} (target >= 0.80)"
    )
    # The merge path: every URL known (a rerun by another run), on a part of the data.
    part = batches[: max(1, args.rerun // args.batch)]
    count = sum(len(b) for b in part)
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    with fresh_server(args, tmp) as (url, es):
        pipeline(store_uri(url), prefix, part, "run-1")
        rerun, new = pipeline(store_uri(url), prefix, part, "run-2")
        assert new == 0
        docs = read_back(es, prefix)
        cleanup(es, [prefix])
    with fresh_server(args, tmp) as (url, es):
        bare_names = names_from({"ELASTICSEARCH_INDEX_PREFIX": f"benchbare-{uuid.uuid4().hex[:8]}"})
        install_templates(es, bare_names, es_settings())
        bare(es, bare_names.urls, docs, "create")
        overwrite = bare(es, bare_names.urls, docs, "index")
        cleanup(es, [bare_names.prefix])
    print(
        f"known URLs ({count:,}, merge path): pipeline {count / rerun:,.0f} docs/s;"
        f" bare streaming_bulk overwrite {count / overwrite:,.0f} docs/s; ratio {overwrite / rerun:.2f}"
    )


def cleanup(es: Elasticsearch, prefixes: list[str]) -> None:
    for name in prefixes:
        names = names_from({"ELASTICSEARCH_INDEX_PREFIX": name})
        es.indices.delete(index=[names.urls, names.pages, names.runs], ignore_unavailable=True)


def read_back(es: Elasticsearch, prefix: str) -> list[tuple[str, dict]]:
    index = names_from({"ELASTICSEARCH_INDEX_PREFIX": prefix}).urls
    es.indices.refresh(index=index)
    query = {"query": {"match_all": {}}}
    return [(hit["_id"], hit["_source"]) for hit in helpers.scan(es, index=index, query=query, size=5000)]


if __name__ == "__main__":
    main()
