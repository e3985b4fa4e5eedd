"""Microseconds per distinct URL of trawl.records.canonical.canonicalize_many.

The URLs are the wayback bench's generated originals (http/https, :80/:443,
sub-domains, queries), with a share made messy the way archive records are:
fragments, upper-case hosts, escapes, non-ASCII paths, userinfo, no scheme,
dot segments, trailing host dots. All distinct, so every one is parsed.

``--against REV`` also times the ``trawl/records/canonical.py`` of a git revision (as
a temporary module), e.g. the w3lib implementation before ada:

    python bench/bench_canonical.py [--urls N] [--messy F] [--against b47c51d]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.ia_cdx import generate_dataset  # noqa: E402
from trawl.records.canonical import canonicalize_many  # noqa: E402


def _messy(url: str, kind: int, i: int) -> str:
    if kind == 0:
        return url + "#top"
    if kind == 1:
        return url.replace("example.com", "EXAMPLE.com", 1)
    if kind == 2:
        return url + ("&" if "?" in url else "?") + f"q=caf%c3%a9+{i}&r=%7euser"
    if kind == 3:
        head, _, path = url.partition("://")
        return f"{head}://{path.replace('/', '/ü/', 2)}é"
    if kind == 4:
        return url.split("://", 1)[1]
    if kind == 5:
        return url.replace("://", "://user:pw@", 1)
    if kind == 6:
        return url.replace(".com/", ".com/a/../", 1)
    return url.replace(".com", ".com.", 1)


def archive_like_urls(n: int, messy: float, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    urls = [c.original for c in generate_dataset(n, n, seed=seed)]
    urls = [_messy(u, rng.randrange(8), i) if rng.random() < messy else u for i, u in enumerate(urls)]
    return list(dict.fromkeys(urls))


def _old_many(rev: str) -> Callable[[list[str]], object]:
    source = subprocess.run(
        ["git", "show", f"{rev}:trawl/records/canonical.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_canonical.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_canonical", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    one = module.canonicalize_with_host

    def many(urls: list[str]) -> object:  # what the old normalizer did with it
        table = {url: one(url) or (None, "") for url in set(urls)}
        canonical, hosts = zip(*map(table.__getitem__, urls), strict=True)
        return list(canonical), list(hosts)

    return many


def best_us(function: Callable[[list[str]], object], urls: list[str], repeat: int = 5) -> float:
    """Best of ``repeat`` runs, in CPU time: the machine is shared, wall time is not ours."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function(urls)
        best = min(best, time.process_time() - start)
    return best / len(urls) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--messy", type=float, default=0.1, help="share of messy URLs")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", metavar="REV", help="also time trawl/records/canonical.py at REV")
    args = parser.parse_args()
    urls = archive_like_urls(args.urls, args.messy)
    print(f"{len(urls):,} distinct URLs, {args.messy:.0%} messy")
    old = _old_many(args.against) if args.against else None
    for _ in range(args.rounds):  # interleaved, so both see the same load
        print(f"canonicalize_many: {best_us(canonicalize_many, urls):.2f} us/URL")
        if old is not None:
            print(f"{args.against} canonical.py: {best_us(old, urls):.2f} us/URL")


if __name__ == "__main__":
    main()
