"""Precision and recall of the miners on the hand-written corpus, and mining speed.

1. **Corpus** (tests/data/mining/, answers written by hand): endpoints compared as
   (url, how, method, query, body, headers, source), secrets as (rule, value, line);
   precision = found and expected / found, recall = found and expected / expected,
   summed over the files. The interface's placeholder regex reader is scored on the
   same corpus for comparison. The corpus is also the readers' test, so their 1.00 is
   what the test demands, not a measurement on unseen files.
2. **Speed**: a generated mixed corpus (``--mb``, default 50: readable and minified
   JavaScript, HTML pages with forms and inline scripts, JSON, sitemaps, source maps),
   mined in this process one file after another; MB/s per core is bytes over this
   process's CPU time. Peak RSS from ``getrusage``.
3. **Pathological**: one 20 MB single-line minified file (``--big-mb``), as shipped (over
   ``PARSE_MAX_BYTES``: the regex fallback) and with the cap lifted (tree-sitter), and a
   60,000-deep nesting, each timed once. Every measure runs in a child process of its
   own, so each peak RSS is that measure's.

    python bench/bench_mining.py [--mb 50] [--big-mb 20] [--seed 18]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_mining_extract import (  # noqa: E402
    CORPUS,
    endpoint_key,
    expected_endpoints,
    placeholder,
)
from trawl.mining import extract as extract_module  # noqa: E402
from trawl.mining import extract_file  # noqa: E402

#: Files written after the readers, their answers written before the readers first saw them, never tuned on.
HOLDOUT = ROOT / "bench" / "data" / "mining_holdout"


def cases(folder: Path) -> list[str]:
    return sorted(p.name.removesuffix(".expected.json") for p in folder.glob("*.expected.json"))


def mine(folder: Path, name: str, extract) -> tuple[dict, object]:
    expected = json.loads((folder / f"{name}.expected.json").read_text(encoding="utf-8"))
    body = (folder / name).read_bytes()
    return expected, extract(body, expected["url"], expected["mime"], secrets=expected.get("secrets", False))


def score(extract, urls_only: bool = False, folder: Path = CORPUS) -> tuple[int, int, int]:
    """(true positives, found, expected) summed over the corpus, endpoints and secrets together.

    ``urls_only`` compares the sets of endpoint URLs alone (how, method and parameters
    ignored): what a URL-list tool can be judged on.
    """
    hits = found_total = expected_total = 0
    for name in cases(folder):
        expected, found = mine(folder, name, extract)
        got = {endpoint_key(e) for e in found.endpoints} | {(s.rule, s.value, s.line) for s in found.secrets}
        want = expected_endpoints(expected) | {
            (s["rule"], s["value"], s["line"]) for s in expected.get("found_secrets", ())
        }
        if urls_only:
            got = {e.url for e in found.endpoints}
            want = {e["url"] for e in expected["endpoints"]}
        hits += len(got & want)
        found_total += len(got)
        expected_total += len(want)
    return hits, found_total, expected_total


def _js_statement(rng: random.Random, n: int) -> str:
    word = rng.choice(["users", "orders", "items", "cart", "search", "profile", "invoices", "feed"])
    return rng.choice(
        [
            f'fetch("/api/v{n % 4}/{word}/" + id{n}, {{method: "POST", headers: {{"X-T{n}": t}}, '
            f"body: JSON.stringify({{a{n}: 1, b: 2}})}});",
            f'var x{n} = new XMLHttpRequest(); x{n}.open("GET", "/legacy/{word}.php?id=" + k{n}); '
            f"x{n}.send();",
            f'$.post("/{word}/update{n}", {{name: n{n}, value: v}});',
            f'location.href = "/{word}?page=" + p{n};',
            f"const tpl{n} = `/api/{word}/${{id}}/detail{n}`;",
            f'var label{n} = "text/html", date{n} = "2024/01/{n % 28 + 1}", note{n} = "{word} {n}";',
            f"function f{n}(a, b) {{ for (let i = 0; i < a.length; i++) {{ b += a[i] * {n}; }} return b; }}",
            f"var obj{n} = {{key{n}: [1, 2, 3], nested: {{deep: {{deeper: '{word}'}}}}}};",
        ]
    )


def _js(rng: random.Random, size: int, minified: bool) -> bytes:
    parts, total, n = [], 0, 0
    while total < size:
        statement = _js_statement(rng, n)
        parts.append(statement)
        total += len(statement) + 1
        n += 1
    return ("" if minified else "\n").join(parts).encode()


def _html(rng: random.Random, size: int) -> bytes:
    parts, total, n = ["<!DOCTYPE html><html><head><title>x</title></head><body>"], 0, 0
    while total < size:
        block = (
            f'<div class="c{n}"><a href="/page/{n}?ref=x">link {n}</a><img src="/img/{n}.png">'
            f'<form action="/f{n}" method="post"><input name="field{n}">'
            f'<textarea name="t{n}"></textarea></form>'
            f"<p>Some text about item {n} and more words to read.</p>"
            + (f'<script>fetch("/api/inline/{n}");</script>' if n % 10 == 0 else "")
            + "</div>\n"
        )
        parts.append(block)
        total += len(block)
        n += 1
    return ("".join(parts) + "</body></html>").encode()


def _json(rng: random.Random, size: int) -> bytes:
    items, total, n = [], 0, 0
    while total < size:
        item = {
            "id": n,
            "name": f"item {n}",
            "url": f"/api/items/{n}",
            "thumb": f"https://cdn.example.com/{n}.jpg",
            "tags": ["a", "b"],
            "meta": {"created": "2024-01-01", "owner_id": n % 50},
        }
        items.append(item)
        total += 160
        n += 1
    return json.dumps({"results": items, "next": "/api/items?page=2"}).encode()


def _sitemap(rng: random.Random, size: int) -> bytes:
    rows = [
        f"<url><loc>https://www.example.com/p/{n}</loc><lastmod>2024-01-01</lastmod></url>"
        for n in range(size // 80)
    ]
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(rows)
        + "</urlset>"
    ).encode()


def _map(rng: random.Random, size: int) -> bytes:
    sources = [f"webpack:///./src/m{n}.js" for n in range(8)]
    contents = [_js(rng, size // 8, False).decode() for _ in sources]
    return json.dumps(
        {"version": 3, "sources": sources, "sourcesContent": contents, "mappings": "AAAA"}
    ).encode()


def corpus(total_mb: float, seed: int) -> list[tuple[bytes, str, str]]:
    """(body, url, mime) files adding up to ``total_mb``.

    By bytes: 35% JavaScript, 20% minified, 20% HTML, 10% JSON, 5% sitemaps, 10% source maps.
    """
    rng = random.Random(seed)
    kinds = [
        (0.35, lambda s: _js(rng, s, False), "application/javascript", "js"),
        (0.20, lambda s: _js(rng, s, True), "application/javascript", "min.js"),
        (0.20, lambda s: _html(rng, s), "text/html", "html"),
        (0.10, lambda s: _json(rng, s), "application/json", "json"),
        (0.05, lambda s: _sitemap(rng, s), "application/xml", "xml"),
        (0.10, lambda s: _map(rng, s), "application/json", "js.map"),
    ]
    files, total, n = [], 0, 0
    target = int(total_mb * 1024 * 1024)
    while total < target:
        share = rng.random()
        index = 0
        while share > kinds[index][0] and index < len(kinds) - 1:
            share -= kinds[index][0]
            index += 1
        _, make, mime, ext = kinds[index]
        size = rng.choice([4 << 10, 32 << 10, 256 << 10, 1 << 20])
        body = make(size)
        files.append((body, f"https://app.example.com/f{n}.{ext}", mime))
        total += len(body)
        n += 1
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--big-mb", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--corpus-only", action="store_true", help="precision and recall only")
    args = parser.parse_args()

    for folder, label, extract, urls_only in (
        (CORPUS, "readers", extract_file, False),
        (CORPUS, "placeholder regex", placeholder, False),
        (CORPUS, "readers, URLs only", extract_file, True),
        (CORPUS, "placeholder regex, URLs only", placeholder, True),
        (HOLDOUT, "readers", extract_file, False),
        (HOLDOUT, "readers, URLs only", extract_file, True),
    ):
        hits, found, expected = score(extract, urls_only, folder)
        print(
            f"{folder.name} ({len(cases(folder))} files), {label}: precision {hits / max(found, 1):.3f} "
            f"({hits}/{found}), recall {hits / max(expected, 1):.3f} ({hits}/{expected})"
        )

    if args.corpus_only:
        return
    # Each measure in a child process of its own, so that each peak RSS is its own.
    context = multiprocessing.get_context("fork")
    for measure, parameters in (
        (_mixed, (args.mb, args.seed)),
        (_big, (args.big_mb, args.seed, None)),
        (_big, (args.big_mb, args.seed, 64 * 1024 * 1024)),
        (_deep, (60_000,)),
    ):
        with context.Pool(1) as pool:
            line, rss = pool.apply(measure, parameters)
        print(f"{line}; peak RSS {rss:.0f} MB")


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _mixed(mb: float, seed: int) -> tuple[str, float]:
    files = corpus(mb, seed)
    size = sum(len(body) for body, _, _ in files)
    cpu, wall = time.process_time(), time.perf_counter()
    endpoints = 0
    for body, url, mime in files:
        endpoints += len(extract_file(body, url, mime, secrets=True).endpoints)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return (
        f"mixed corpus: {len(files)} files, {size / 1e6:.1f} MB, {endpoints} endpoints, "
        f"{cpu:.1f} s CPU ({wall:.1f} s wall): {size / 1e6 / cpu:.2f} MB/s per core (secrets on)"
    ), _rss()


def _big(mb: float, seed: int, parse_cap: int | None) -> tuple[str, float]:
    """One single-line minified file: as shipped, or with the parse cap lifted to ``parse_cap``."""
    if parse_cap is not None:
        extract_module.PARSE_MAX_BYTES = parse_cap
    big = _js(random.Random(seed), int(mb * 1024 * 1024), True)
    cpu = time.process_time()
    found = extract_file(big, "https://app.example.com/big.min.js", "application/javascript", secrets=True)
    cpu = time.process_time() - cpu
    label = "as shipped" if parse_cap is None else f"parse cap lifted to {parse_cap >> 20} MiB"
    return (
        f"one {len(big) / 1e6:.1f} MB single-line minified file ({label}): {cpu:.1f} s CPU, "
        f"reader {found.reader}, {len(found.endpoints)} endpoints"
    ), _rss()


def _deep(depth: int) -> tuple[str, float]:
    deep = b"var a = " + b"[" * depth + b'fetch("/api/deep")' + b"]" * depth + b";"
    cpu = time.process_time()
    found = extract_file(deep, "https://app.example.com/deep.js", "application/javascript")
    return (
        f"{depth:,}-deep nesting: {time.process_time() - cpu:.2f} s CPU, {len(found.endpoints)} endpoint(s)",
        _rss(),
    )


if __name__ == "__main__":
    main()
