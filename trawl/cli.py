"""``trawl``: Scrapy's command line with trawl's settings and trawl's name, started from any directory.

Scrapy finds a project's settings, and with them its commands
(``COMMANDS_MODULE``: ``search``, ``plugins``, trawl's ``crawl``), through a
``scrapy.cfg`` in the current directory or above it, or through
``SCRAPY_SETTINGS_MODULE``. Run anywhere else, ``scrapy search '*'`` said
"Unknown command: search" (issue 9). ``trawl`` sets
``SCRAPY_SETTINGS_MODULE=trawl.settings`` (unless it is set already: a
project built on trawl names its own module) and runs Scrapy's command line,
so every command and argument is Scrapy's: ``trawl crawl wayback -a
domain=example.com`` is ``scrapy crawl wayback -a domain=example.com`` run in
the project. Relative paths (``-s STORE_URI=sqlite:///x.db``, ``-o urls.txt``)
are relative to the directory it is started in; the default store is the same
from every directory (:mod:`trawl.stores.location`).

Users type ``trawl``, so help and usage say ``trawl`` (``trawl -h`` said
``Usage: scrapy <command>``, issue 13) and list trawl's commands: Scrapy's
project-scaffolding and debugging commands (:data:`HIDDEN`) are left out of
the list, since trawl's sources are not a project's spiders, though they still
run for whoever types them. Scrapy has no hook for its command line's wording,
so this console script replaces three of :mod:`scrapy.cmdline`'s helpers in
its own process; ``python -m scrapy`` in the checkout is left as Scrapy made it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from trawl.run.startup import install_startup_handlers

if __name__ == "__main__" or Path(sys.argv[0]).name == "trawl":
    # Before Scrapy is imported (a second or more): Ctrl-C from here on is one line.
    install_startup_handlers()

import scrapy  # noqa: E402
import scrapy.cmdline as cmdline  # noqa: E402
from scrapy.cmdline import execute  # noqa: E402
from scrapy.settings import BaseSettings  # noqa: E402

import trawl  # noqa: E402

SETTINGS_MODULE = "trawl.settings"
#: Scrapy commands not listed by ``trawl -h``: they make or check a Scrapy project's own
#: spiders (``genspider``, ``startproject``, ``edit``, ``check``, ``runspider``, ``bench``)
#: or fetch one page as a spider would (``fetch``, ``view``, ``shell``, ``parse``).
HIDDEN = frozenset(
    {"bench", "check", "edit", "fetch", "genspider", "parse", "runspider", "shell", "startproject", "view"}
)


def _header(settings: BaseSettings, inproject: bool) -> str:
    project = f"active project: {settings['BOT_NAME']}" if inproject else "no active project"
    return f"trawl {trawl.__version__} (Scrapy {scrapy.__version__}) - {project}\n"


def _print_commands(settings: BaseSettings, inproject: bool) -> None:
    commands = cmdline._get_commands_dict(settings, inproject)
    listed = sorted((name, command) for name, command in commands.items() if name not in HIDDEN)
    print(_header(settings, inproject))
    print("Usage:\n  trawl <command> [options] [args]\n\nAvailable commands:")
    print("\n".join(f"  {name:<13} {command.short_desc()}" for name, command in listed))
    print('\nUse "trawl <command> -h" to see more info about a command')


def _print_unknown_command(settings: BaseSettings, cmdname: str, inproject: bool) -> None:
    print(_header(settings, inproject))
    print(f"Unknown command: {cmdname}\n")
    print('Use "trawl -h" to see available commands')


class _TrawlArgumentParser(cmdline.ScrapyArgumentParser):
    """A command's usage line says ``trawl crawl ...``, not ``scrapy crawl ...``."""

    def __init__(self, *args: Any, usage: str | None = None, **kwargs: Any) -> None:
        if usage and usage.startswith("scrapy "):
            usage = "trawl " + usage[len("scrapy ") :]
        super().__init__(*args, usage=usage, **kwargs)


def _speak_as_trawl() -> None:
    cmdline._print_commands = _print_commands
    cmdline._print_unknown_command = _print_unknown_command
    cmdline.ScrapyArgumentParser = _TrawlArgumentParser  # type: ignore[misc]


def main(argv: list[str] | None = None) -> None:
    """The ``trawl`` console script (``[project.scripts]``); exits with the command's status."""
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", SETTINGS_MODULE)
    _speak_as_trawl()
    execute(["trawl", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
