"""``trawl version``: trawl's version, then Scrapy's (Scrapy's own command printed only Scrapy's).

A bug report needs both: trawl's behaviour is trawl's code on Scrapy's engine.
``-v`` adds Scrapy's table (Twisted, Python, platform...), trawl first in it.
"""

from __future__ import annotations

import argparse

import scrapy
from scrapy.commands.version import Command as ScrapyVersionCommand
from scrapy.utils.versions import get_versions

import trawl


class Command(ScrapyVersionCommand):
    def short_desc(self) -> str:
        return "Print trawl's version and Scrapy's"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not opts.verbose:
            print(f"trawl {trawl.__version__} (Scrapy {scrapy.__version__})")
            return
        versions = [("trawl", trawl.__version__), *get_versions()]
        width = max(len(name) for name, _ in versions)
        for name, version in versions:
            print(f"{name:<{width}} : {version}")
