"""``trawl version``: trawl's version, then Scrapy's (Scrapy's own command printed only Scrapy's).

A bug report needs both: trawl's behaviour is trawl's code on Scrapy's engine.
``-v`` adds Scrapy's table (Twisted, Python, platform...), trawl first in it.
Scrapy's version is read from its package's ``VERSION`` file, as Scrapy reads it,
without importing Scrapy (0.25 s); ``-v`` imports it, for Scrapy's table.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import trawl
from trawl.readcommand import ReadCommand


def scrapy_version() -> str:
    """``scrapy.__version__``, from the file it is read from."""
    spec = importlib.util.find_spec("scrapy")  # finds the package without importing it
    assert spec is not None and spec.origin is not None, "Scrapy is not installed"
    return (Path(spec.origin).parent / "VERSION").read_text(encoding="ascii").strip()


class Command(ReadCommand):
    requires_project = False

    def syntax(self) -> str:
        return "[-v]"

    def short_desc(self) -> str:
        return "Print trawl's version and Scrapy's"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--verbose",
            "-v",
            dest="verbose",
            action="store_true",
            help="also display twisted/python/platform info (useful for bug reports)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not opts.verbose:
            print(f"trawl {trawl.__version__} (Scrapy {scrapy_version()})")
            return
        from scrapy.utils.versions import get_versions

        versions = [("trawl", trawl.__version__), *get_versions()]
        width = max(len(name) for name, _ in versions)
        for name, version in versions:
            print(f"{name:<{width}} : {version}")
