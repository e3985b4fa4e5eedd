"""What every command that reads the store shares: the store it reads, and one line for each failure.

``trawl endpoints``, ``params``, ``responses list`` and ``crates`` read a store
and print an answer. Each said its failures its own way, and a path with a typo
gave an empty answer and exit 0 in a pipe; here it is one ``trawl: error:`` line
naming the path, exit 1, as ``trawl search`` says it. Outside ``trawl.commands``: Scrapy takes
every command class it finds there for a command, a base class too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy.commands import ScrapyCommand

from trawl.errors import EXIT_FAILED, EXIT_USAGE, TrawlError, TrawlUsageError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.stores.registry import readable_store


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


class StoreReadingCommand(ScrapyCommand):
    """A command that reads the store: :meth:`answer` does the work; failures become one line."""

    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

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
            self.fail(
                f"reading the store failed: {type(exc).__name__}: {exc}".splitlines()[0][:300], EXIT_FAILED
            )

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        raise NotImplementedError

    def fail(self, message: str, status: int) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = status
