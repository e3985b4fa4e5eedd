"""``python -m tests.servers``: every system's fake upstream on 127.0.0.1, for one generated domain.

Serves one dataset (:mod:`tests.servers.devdata`) from the fake servers the
tests use (:mod:`tests.servers.devserver`), and the other systems around it
(:mod:`tests.servers.devsystems`: the Wayback replay, the live site behind a
proxy, crates.io); prints one command per system, in an order that works top to
bottom (the ``trawl crawl all`` that crawls every URL source first), then
``ready: N servers for DOMAIN`` once every server is listening, and runs until
Ctrl-C (or SIGTERM): one line, exit status 0. A bad option is one line,
``dev-server: error: ...``, exit status 2. See docs/dev-server.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NoReturn

from tests.servers.devdata import SOURCES, Dataset, build_dataset, expected_urls
from tests.servers.devserver import (
    crawl_command,
    crawl_settings,
    settings_module,
    settings_module_usage,
    start_upstreams,
)
from tests.servers.devsystems import SERVERS, SYSTEMS, start_systems, system_commands
from trawl.errors import TrawlUsageError
from trawl.sources.target import parse_target


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str) -> NoReturn:
    print(f"dev-server: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m tests.servers", description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="example.com", help="the domain (default example.com)")
    parser.add_argument("--urls", type=int, default=5_000, help="distinct URLs (default 5,000)")
    parser.add_argument("--overlap", type=float, default=0.4, help="share of URLs in 2+ sources (0.4)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the dataset (default 0)")
    parser.add_argument(
        "--sources",
        default=",".join(SOURCES + SYSTEMS),
        help="comma-separated URL sources and systems (responses, probe, live, crates); default all",
    )
    parser.add_argument(
        "--port-base",
        type=int,
        default=None,
        metavar="PORT",
        help="wayback on PORT, the next source on PORT+1..., then the systems' servers",
    )
    parser.add_argument(
        "--expected", type=Path, metavar="FILE", help="write the expected canonical URLs there"
    )
    parser.add_argument(
        "--settings-file",
        type=Path,
        metavar="FILE.py",
        help="write the crawl's settings as a settings module",
    )
    args = parser.parse_args(argv)
    try:
        args.domain = parse_target(args.domain).domain
    except TrawlUsageError as exc:
        fail(f"--domain: {exc}")
    if args.urls < 1:
        fail("--urls must be at least 1")
    if not 0 <= args.overlap <= 1:
        fail("--overlap must be between 0 and 1")
    args.sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = [s for s in args.sources if s not in SOURCES + SYSTEMS]
    if unknown or not args.sources:
        fail(f"--sources: unknown source {unknown[0]!r}" if unknown else "--sources: none given")
    if "responses" in args.sources and "wayback" not in args.sources:
        fail("--sources: responses replays the wayback fake's captures: add wayback")
    top = 65535 - len(SOURCES) - len(SERVERS)
    if args.port_base is not None and not 1024 <= args.port_base <= top:
        fail(f"--port-base must be between 1024 and {top}")
    module = args.settings_file
    if module is not None and (module.suffix != ".py" or not module.stem.isidentifier()):
        fail(f"--settings-file must name a Python module (like dev_settings.py), got {str(module)!r}")
    for path in (args.expected, module):
        if path is not None and not path.resolve().parent.is_dir():
            fail(f"no such directory: {str(path.parent)!r}")
    return args


def serve(args: argparse.Namespace, stack: ExitStack) -> None:
    sources = [s for s in SOURCES if s in args.sources]
    systems = [s for s in SYSTEMS if s in args.sources]
    servers: dict[str, Any] = {}
    domain, pages = args.domain, []
    if sources or "probe" in systems or "live" in systems:
        # Without a URL source the site still needs pages: the dataset of all seven, not served.
        data = build_dataset(
            args.urls, args.overlap, seed=args.seed, sources=sources or SOURCES, domain=args.domain
        )
        domain, pages = data.domain, sorted(data.sources_of)
    if sources:
        describe(data, args)
        try:
            servers = start_upstreams(data, stack, args.port_base)
        except OSError as exc:
            fail(f"cannot listen: {exc.strerror or exc}")
    ports = {}
    if args.port_base is not None:
        ports = {name: args.port_base + len(SOURCES) + i for i, name in enumerate(SERVERS)}
    try:
        servers.update(start_systems(domain, pages, systems, stack, ports))
    except OSError as exc:
        fail(f"cannot listen: {exc.strerror or exc}")
    for name, server in servers.items():
        print(f"  {name:<13} {server.base_url}", flush=True)
    print("\nRun these in order, from one folder (each reads what the ones before stored).", flush=True)
    if sources:
        settings = crawl_settings({s: servers[s] for s in sources})
        what = f"Crawl the URL sources (politeness and filters off, into {settings['STORE_URI']})"
        print(f"\n{what}:\n\n{crawl_command(data, settings)}", flush=True)
        if args.settings_file is not None:
            path = args.settings_file.resolve()
            path.write_text(settings_module(data, settings, path.stem, str(path.parent)), encoding="utf-8")
            usage = settings_module_usage(data, path.stem, str(path.parent))
            print(f"\nor, with the settings module written to {path}:\n\n{usage}", flush=True)
    wayback = servers["wayback"].base_url if "wayback" in servers else None
    for what, command in system_commands(domain, systems, servers, wayback):
        print(f"\n{what}:\n\n{command}", flush=True)
    print(f"\nready: {len(servers)} servers for {domain} (Ctrl-C stops them)", flush=True)


def describe(data: Dataset, args: argparse.Namespace) -> None:
    """The dataset line, and the expected URLs written where ``--expected`` says."""
    expected = expected_urls(data)
    several = sum(1 for found in data.sources_of.values() if len(found) > 1)
    counts = ", ".join(f"{name} {count:,}" for name, count in data.per_source().items())
    print(
        f"dataset: {len(expected):,} URLs for {data.domain} (seed {args.seed}), "
        f"{several / len(expected):.0%} in 2+ sources: {counts}",
        flush=True,
    )
    if args.expected is not None:
        args.expected.write_text("".join(url + "\n" for url in sorted(expected)), encoding="utf-8")
        print(f"expected URLs: {args.expected}", flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Explicitly: a shell starts background jobs with SIGINT ignored, and Python then leaves it so.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with ExitStack() as stack:
            serve(args, stack)
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    print("dev-server: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
