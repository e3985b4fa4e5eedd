"""What every read command shares: Scrapy's command interface without Scrapy, the store it reads,
and one line for each failure.

A read command's whole run is its start-up, and importing Scrapy (any of it
imports the package: its HTTP classes, its spiders, Twisted's reactor and TLS)
was 0.25-0.3 s of CPU of the 0.5-0.7 s ``trawl search`` or ``trawl report``
took. :class:`ReadCommand` is :class:`scrapy.commands.ScrapyCommand`'s
interface (its global options, ``-s``, ``process_options``) in trawl's own
code, so that ``trawl`` runs a read command with :mod:`trawl.readsettings`
and imports no Scrapy (:mod:`trawl.cli`); Scrapy's own command line still
finds these commands (``scrapyd``, ``python -m scrapy``, ``trawl -h``'s list):
:func:`register_with_scrapy` makes :class:`ReadCommand` a virtual subclass of
``ScrapyCommand`` once Scrapy is imported.

``trawl endpoints``, ``params``, ``responses list``, ``search``, ``report`` and
``crates`` read a store and print an answer (:class:`StoreReadingCommand`): a
store path with a typo is one ``trawl: error:`` line naming the path, exit 1.
Outside ``trawl.commands``: Scrapy takes every command class it finds there
for a command, a base class too.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from trawl.errors import EXIT_FAILED, EXIT_USAGE, TrawlError, TrawlUsageError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.readsettings import arglist_to_dict
from trawl.stores.registry import readable_store


class UsageError(Exception):
    """A usage error (``scrapy.exceptions.UsageError`` without Scrapy): the usage, then the line."""

    def __init__(self, *args: Any, print_help: bool = True) -> None:
        self.print_help = print_help
        super().__init__(*args)


def usage_error(message: str, print_help: bool = True) -> Exception:
    """The usage error the command line running the command catches: Scrapy's once Scrapy is imported
    (Scrapy's own command line runs the command, or a process that has Scrapy already)."""
    scrapy_exceptions = sys.modules.get("scrapy.exceptions")
    if scrapy_exceptions is not None:
        return scrapy_exceptions.UsageError(message, print_help=print_help)  # type: ignore[no-any-return]
    return UsageError(message, print_help=print_help)


def usage_errors() -> tuple[type[Exception], ...]:
    """The classes :func:`usage_error` may raise, for the command line that catches them."""
    scrapy_exceptions = sys.modules.get("scrapy.exceptions")
    return (UsageError,) if scrapy_exceptions is None else (UsageError, scrapy_exceptions.UsageError)


class HelpFormatter(argparse.HelpFormatter):
    """``scrapy.commands.ScrapyHelpFormatter``: ``Usage`` and each heading underlined, title case."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment=indent_increment, max_help_position=max_help_position, width=width
        )

    def _join_parts(self, part_strings: Iterable[str]) -> str:
        return super()._join_parts(self.format_part_strings(list(part_strings)))

    def format_part_strings(self, part_strings: list[str]) -> list[str]:
        if part_strings and part_strings[0].startswith("usage: "):
            part_strings[0] = "Usage\n=====\n  " + part_strings[0].removeprefix("usage: ")
        headings = [i for i in range(len(part_strings)) if part_strings[i].endswith(":\n")]
        for index in reversed(headings):
            char = "-" if "Global Options" in part_strings[index] else "="
            part_strings[index] = part_strings[index].removesuffix(":\n").title()
            part_strings.insert(index + 1, "".join(["\n", (char * len(part_strings[index])), "\n"]))
        return part_strings


class _PdbHandler(logging.Handler):
    """``--pdb``: a post-mortem session on every logged record with a traceback (as Scrapy's)."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[2]:
            import pdb  # noqa: T100

            pdb.post_mortem(record.exc_info[2])


class ReadCommand:
    """:class:`scrapy.commands.ScrapyCommand`'s interface, its global options and ``-s`` included,
    importing no Scrapy: a command that reads and prints, run by :mod:`trawl.cli` without Scrapy."""

    requires_project: bool = True
    requires_crawler_process: bool = False
    crawler_process: Any = None
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}
    exitcode: int = 0

    def __init__(self) -> None:
        self.settings: Any = None  # set by the command line that runs it

    def syntax(self) -> str:
        return ""

    def short_desc(self) -> str:
        return ""

    def long_desc(self) -> str:
        return self.short_desc()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Scrapy's global options, word for word (``trawl CMD -h`` lists them)."""
        assert self.settings is not None
        group = parser.add_argument_group(title="Global Options")
        group.add_argument("--logfile", metavar="FILE", help="log file. if omitted stderr will be used")
        group.add_argument(
            "-L", "--loglevel", metavar="LEVEL", default=None,
            help=f"log level (default: {self.settings['LOG_LEVEL']})",
        )  # fmt: skip
        group.add_argument("--nolog", action="store_true", help="disable logging completely")
        group.add_argument(
            "--profile", metavar="FILE", default=None, help="write python cProfile stats to FILE"
        )
        group.add_argument("--pidfile", metavar="FILE", help="write process ID to FILE")
        group.add_argument(
            "-s", "--set", action="append", default=[], metavar="NAME=VALUE",
            help="set/override setting (may be repeated)",
        )  # fmt: skip
        group.add_argument(
            "--pdb", action="store_true", help="enable pdb on failure (uses ipdb if installed)"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """``-s`` and the logging options into the settings, as Scrapy's ``process_options``."""
        assert self.settings is not None
        try:
            self.settings.setdict(arglist_to_dict(opts.set), priority="cmdline")
        except ValueError:
            raise usage_error("Invalid -s value, use -s NAME=VALUE", print_help=False) from None
        if opts.logfile:
            self.settings.set("LOG_ENABLED", True, priority="cmdline")
            self.settings.set("LOG_FILE", opts.logfile, priority="cmdline")
        if opts.loglevel:
            self.settings.set("LOG_ENABLED", True, priority="cmdline")
            self.settings.set("LOG_LEVEL", opts.loglevel, priority="cmdline")
        if opts.nolog:
            self.settings.set("LOG_ENABLED", False, priority="cmdline")
        if opts.pidfile:
            Path(opts.pidfile).write_text(str(os.getpid()) + os.linesep, encoding="utf-8")
        if opts.pdb:
            try:
                import ipdb  # type: ignore[import-not-found]  # noqa: T100
            except ImportError:
                pass
            else:
                sys.modules["pdb"] = ipdb
            logging.root.addHandler(_PdbHandler(level=logging.ERROR))

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        raise NotImplementedError


def register_with_scrapy() -> None:
    """Let Scrapy's command line (its walk of ``COMMANDS_MODULE``) take read commands for its own:
    ``issubclass(Command, ScrapyCommand)``, which it checks, holds for a registered ABC's subclasses."""
    from scrapy.commands import ScrapyCommand

    ScrapyCommand.register(ReadCommand)


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URI", help="store to read (default: the STORE_URI setting)")


def store_uri(settings: Any, given: str | None, task: str = "read") -> str:
    """``--store`` or ``STORE_URI``; none is a usage line (``no store to {task}``)."""
    uri = str(given or settings.get("STORE_URI") or "").strip()
    if not uri:
        raise TrawlUsageError(f"no store to {task}: set STORE_URI (or --store URI)")
    return uri


def open_readable(settings: Any, uri: str, needs: tuple[str, ...]) -> Any:
    """The class of the existing store ``uri`` names, able to do ``needs``; one line otherwise."""
    return readable_store(uri, plugin_manager_from_settings(settings), needs)


class StoreReadingCommand(ReadCommand):
    """A command that reads the store: :meth:`answer` does the work; failures become one line."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            self.answer(args, opts)
            if sys.stdout is not None:
                sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stdout = None  # type: ignore[assignment]  # no second error at exit
        except TrawlUsageError as exc:
            self.fail(str(exc), EXIT_USAGE)
        except TrawlError as exc:
            self.fail(str(exc), EXIT_FAILED)
        except Exception as exc:  # noqa: BLE001 - a store or file that failed mid-read: one line
            if isinstance(exc, usage_errors()):
                raise  # the command line prints the usage, then the line (exit 2)
            self.fail(
                f"reading the store failed: {type(exc).__name__}: {exc}".splitlines()[0][:300], EXIT_FAILED
            )

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        raise NotImplementedError

    def fail(self, message: str, status: int) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = status
