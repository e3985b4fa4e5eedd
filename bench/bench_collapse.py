"""CPU seconds of trawl.search.collapse.collapse against a per-URL Python loop of the same rules.

Two sets of URLs. Archive-like: the wayback bench's generated originals (hosts, :80/:443, queries,
numeric folders) with a share given ids the collapse rules see: UUIDs, hashes,
date folders, shuffled parameters (nine in ten stay patterns of their own). Repetitive:
three shapes of an API, a few patterns. The loop (:func:`loop_collapse`) is how uro and
urless work, one ``urlsplit`` and a few regexes a URL; it must find the same
patterns with the same counts, so it is a second oracle as well as the floor to beat.

    python bench/bench_collapse.py [--urls N]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from tests.servers.ia_cdx import generate_dataset  # noqa: E402
from trawl.search.collapse import MODES, collapse  # noqa: E402

_DATE_RUN = re.compile(r"^(?:19|20)\d{2}$")
_MONTH = re.compile(r"^(?:0?[1-9]|1[0-2])$")
_DAY = re.compile(r"^(?:0?[1-9]|[12]\d|3[01])$")
_DATE = re.compile(r"^(?:19|20)\d{2}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?$")
_UUID = re.compile(r"^[({]?[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}[)}]?$")
_HEX = re.compile(r"^[0-9A-Fa-f]{16,}$")
_ORIGIN = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.\-]*:)?//[^/?#]*)?([^?#]*)(?:\?([^#]*))?")


def _segments(path: str) -> str:
    parts = path.split("/")
    out: list[str] = []
    i = 0
    while i < len(parts):
        seg = parts[i]
        if _DATE_RUN.match(seg) and i + 1 < len(parts) and _MONTH.match(parts[i + 1]):
            out.append("{date}")
            i += 2
            if i < len(parts) and _DAY.match(parts[i]) and (i + 1 < len(parts) or parts[i]):
                i += 1
            continue
        if _DATE.match(seg):
            out.append("{date}")
        elif seg.isascii() and seg.isdigit():
            out.append("{int}")
        elif _UUID.match(seg):
            out.append("{uuid}")
        elif _HEX.match(seg):
            out.append("{hash}")
        else:
            out.append(seg)
        i += 1
    return "/".join(out)


def loop_collapse(urls: list[str], mode: str) -> Counter[str]:
    """The same rules, one URL at a time."""
    counts: Counter[str] = Counter()
    for url in urls:
        match = _ORIGIN.match(url)
        assert match is not None
        origin, path, query = match.group(1) or "", match.group(2) or "", match.group(3)
        low = origin.lower()
        if low.startswith("http://") and origin.endswith(":80"):
            origin = origin[:-3]
        elif low.startswith("https://") and origin.endswith(":443"):
            origin = origin[:-4]
        if mode != "params":
            path = _segments(path)
        if mode == "ids":
            tail = "" if query is None else "?" + query
        else:
            names = sorted(
                {p.split("=", 1)[0] + ("={}" if "=" in p else "") for p in (query or "").split("&") if p}
            )
            tail = "?" + "&".join(names) if names else ""
        counts[origin + path + tail] += 1
    return counts


def urls_with_ids(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    base = [c.original for c in generate_dataset(n, n, seed=seed)]
    out = []
    for i, url in enumerate(base):
        kind = rng.randrange(6)
        if kind == 0:
            url = url.rstrip("/") + f"/{rng.getrandbits(128):032x}"
        elif kind == 1:
            h = f"{rng.getrandbits(128):032x}"
            url = url.split("?")[0].rstrip("/") + f"/{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}/edit"
        elif kind == 2:
            url = (
                url.split("?")[0].rstrip("/")
                + f"/{rng.randint(1995, 2025)}/{rng.randint(1, 12):02d}/post-{i}"
            )
        elif kind == 3:
            url = (
                url.split("?")[0] + f"?b={i}&a={rng.randrange(9)}"
                if rng.random() < 0.5
                else url + f"?a={i}&b=1"
            )
        out.append(url)
    return out


def repetitive_urls(n: int) -> list[str]:
    """What an API's archive looks like: three shapes, ids and values everywhere, a few patterns."""
    out = []
    for i in range(n):
        if i % 3 == 0:
            out.append(f"https://example.com/api/v1/users/{i}/posts?id={i}&page={i % 7}")
        elif i % 3 == 1:
            out.append(f"https://example.com/blog/20{10 + i % 14}/{i % 12 + 1:02d}/post-{i % 500}/{i}")
        else:
            out.append(f"https://cdn.example.com/assets/{i:032x}/app.js?v={i}")
    return out


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000)
    n = parser.parse_args().urls
    for name, urls in (("archive-like", urls_with_ids(n)), ("repetitive", repetitive_urls(n))):
        series = pl.Series("url", urls)
        print(f"{name}: {len(urls):,} URLs; load before: {uptime()}")
        for mode in MODES:
            start, wall = time.process_time(), time.perf_counter()
            frame = collapse(series, mode)  # type: ignore[arg-type]
            polars_cpu, polars_wall = time.process_time() - start, time.perf_counter() - wall
            start, wall = time.process_time(), time.perf_counter()
            expected = loop_collapse(urls, mode)
            loop_cpu, loop_wall = time.process_time() - start, time.perf_counter() - wall
            same = dict(zip(frame["pattern"], frame["count"], strict=True)) == dict(expected)
            print(
                f"{mode:>6}: collapse {polars_cpu:6.2f} CPU s ({polars_wall:.2f} s wall), per-URL loop"
                f" {loop_cpu:6.2f} CPU s ({loop_wall:.2f} s wall): x{loop_cpu / max(polars_cpu, 1e-9):.1f};"
                f" {frame.height:,} patterns; same patterns: {same}"
                f"; load: {uptime().split('load average: ')[-1]}"
            )
            if not same:
                raise SystemExit(f"{mode}: collapse and the per-URL loop disagree")


if __name__ == "__main__":
    main()
