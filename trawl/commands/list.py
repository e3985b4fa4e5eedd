"""``trawl list``: the sources a crawl can name, and each one's ``-a`` arguments.

``trawl list`` prints the names alone, one a line: scrapyd reads its spiders
from exactly that output (``scrapyd.runner list``). ``trawl list wayback`` (or
``--arguments`` for every source) adds each ``-a`` argument with its one line,
read from the argument sets the sources declare (``Source.described_arguments``):
the crawl's help points here, so a user learns ``-a cc_indexes=`` without the docs.

The spider loader cannot report a bad ``TRAWL_PLUGINS`` or
``TRAWL_PLUGINS_DISABLED`` itself (Scrapy builds it before a crawl command
runs, where raising ends in a traceback), so it keeps the error and this
command prints it, exit status 2, instead of a list without trawl's sources.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy.commands.list import Command as ScrapyListCommand
from scrapy.spiderloader import get_spider_loader

from trawl.errors import EXIT_USAGE

#: What ``all`` adds to the arguments of the sources it runs (``crawl_all.SELECTION_ARGUMENTS``).
ALL_ARGUMENTS = {
    "sources": "the sources to run, comma-separated (default: every URL source)",
    "exclude": "sources not to run, comma-separated",
}


def described(name: str, spidercls: Any, loader: Any) -> dict[str, str] | None:
    """A source's ``-a`` arguments with their lines; ``None``: a spider that does not declare them.

    ``all`` takes the URL sources' common arguments, the selection, and any source's own, which
    it hands to that source alone (``-a cc_indexes=2`` reaches commoncrawl).
    """
    if name != "all":
        describe = getattr(spidercls, "described_arguments", None)
        return describe() if describe is not None else None
    from trawl.sources.base import SourceSpider

    common = SourceSpider.described_arguments()
    own: dict[str, dict[str, str]] = {}  # argument -> {source: its line}
    for source in sorted(loader.list()):
        describe = getattr(loader.load(source), "described_arguments", None)
        for arg, text in (describe() if source != "all" and describe is not None else {}).items():
            if arg not in common and arg not in ALL_ARGUMENTS:
                own.setdefault(arg, {})[source] = text
    others = {}
    for arg, by_source in own.items():
        texts = set(by_source.values())
        # One meaning: said once; several (crates' -a limit= counts crates, probe's URLs): each source's.
        text = texts.pop() if len(texts) == 1 else "its line differs by source: trawl list SOURCE"
        others[arg] = f"{', '.join(by_source)} only: {text or '(no description declared)'}"
    return dict(sorted({**common, **ALL_ARGUMENTS, **others}.items()))


def arguments_text(name: str, spidercls: Any, loader: Any) -> str:
    """``wayback`` and one ``  -a NAME=  line`` an argument."""
    arguments = described(name, spidercls, loader)
    if arguments is None:
        return f"{name}\n  (a spider of the project: its arguments are its own)\n"
    width = max(len(a) for a in arguments) + len("-a =") if arguments else 0
    lines = [
        f"  {f'-a {arg}=':<{width}}  {text or '(no description declared)'}" for arg, text in arguments.items()
    ]
    return "\n".join([name, *lines]) + "\n"


class Command(ScrapyListCommand):
    def syntax(self) -> str:
        return "[SOURCE ...] [--arguments]"

    def short_desc(self) -> str:
        return "List the sources a crawl can name (and all); with a source's name, its -a arguments"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--arguments", action="store_true", help="every source with its -a arguments, one line each"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        loader = get_spider_loader(self.settings)
        error = getattr(loader, "plugin_error", None)
        if error is not None:
            sys.stderr.write(f"trawl: error: {error}\n")
            self.exitcode = EXIT_USAGE
            return
        names = sorted(loader.list())
        unknown = [name for name in args if name not in names]
        if unknown:
            sys.stderr.write(f"trawl: error: no source named {unknown[0]!r} (known: {', '.join(names)})\n")
            self.exitcode = EXIT_USAGE
            return
        if not args and not opts.arguments:
            text = "\n".join(names) + "\n"
        else:
            text = "\n".join(arguments_text(name, loader.load(name), loader) for name in args or names)
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stdout = None  # type: ignore[assignment]  # no second error at exit
