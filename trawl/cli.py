"""``trawl``: Scrapy's command line with trawl's settings and trawl's name, started from any directory.

Scrapy finds a project's settings, and with them its commands
(``COMMANDS_MODULE``: ``search``, ``plugins``, trawl's ``crawl``), through a
``scrapy.cfg`` in the current directory or above it, or through
``SCRAPY_SETTINGS_MODULE``. Run anywhere else, ``scrapy search '*'`` said
"Unknown command: search". ``trawl`` sets
``SCRAPY_SETTINGS_MODULE=trawl.settings`` (unless it is set already: a
project built on trawl names its own module) and runs Scrapy's command line,
so every command and argument is Scrapy's: ``trawl crawl wayback -a
domain=example.com`` is ``scrapy crawl wayback -a domain=example.com`` run in
the project. Relative paths (``-s STORE_URI=sqlite:///x.db``, ``-o urls.txt``)
are relative to the directory it is started in; the default store is the same
from every directory (:mod:`trawl.stores.location`).

Users type ``trawl``, so help and usage say ``trawl`` (``trawl -h`` said
``Usage: scrapy <command>``) and list trawl's commands: Scrapy's
project-scaffolding and debugging commands (:data:`HIDDEN`) are left out of
the list, since trawl's sources are not a project's spiders, though they still
run for whoever types them. Scrapy has no hook for its command line's wording,
so this console script replaces three of :mod:`scrapy.cmdline`'s helpers in
its own process; ``python -m scrapy`` in the checkout is left as Scrapy made it.

Scrapy's command line imports every command module, and its crawler machinery,
before it reads the command's name: ``trawl version`` took 1.1-1.3 s. Here a
named command's module alone is imported and run as Scrapy runs it
(:func:`execute`), so ``trawl version`` costs Scrapy's package import and trawl's
settings (about 0.3 s); ``trawl -h`` and an unknown name take Scrapy's own walk.

A read command (:class:`trawl.readcommand.ReadCommand`: ``search``, ``report``,
``endpoints``...) does not import Scrapy at all, which is half of its run
(0.25-0.3 s of CPU): its settings are read by :mod:`trawl.readsettings`, its
options parsed and its help printed as Scrapy's command line would
(:func:`_execute_read`), with the same usage, help, errors and exit statuses.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trawl.common.startup import install_startup_handlers

if __name__ == "__main__" or Path(sys.argv[0]).name == "trawl":
    # Before Scrapy is imported (a second or more): Ctrl-C from here on is one line.
    install_startup_handlers()

import trawl  # noqa: E402

if TYPE_CHECKING:
    from scrapy.commands import ScrapyCommand
    from scrapy.settings import BaseSettings, Settings

    from trawl.readcommand import ReadCommand
    from trawl.readsettings import ReadSettings

SETTINGS_MODULE = "trawl.settings"
#: Scrapy commands not listed by ``trawl -h``: they make or check a Scrapy project's own
#: spiders (``genspider``, ``startproject``, ``edit``, ``check``, ``runspider``, ``bench``)
#: or fetch one page as a spider would (``fetch``, ``view``, ``shell``, ``parse``).
HIDDEN = frozenset(
    {"bench", "check", "edit", "fetch", "genspider", "parse", "runspider", "shell", "startproject", "view"}
)


def _header(settings: BaseSettings, inproject: bool) -> str:
    import scrapy

    project = f"active project: {settings['BOT_NAME']}" if inproject else "no active project"
    return f"trawl {trawl.__version__} (Scrapy {scrapy.__version__}) - {project}\n"


def _print_commands(settings: BaseSettings, inproject: bool) -> None:
    from scrapy import cmdline

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


class _TrawlArgumentParser(argparse.ArgumentParser):
    """Scrapy's argument parser (``-o -:json`` is a value), whose usage line says ``trawl crawl ...``
    and whose error lines say ``trawl: error:`` however it was started (``python -m trawl.cli`` too)."""

    def __init__(self, *args: Any, usage: str | None = None, **kwargs: Any) -> None:
        if usage and usage.startswith("scrapy "):
            usage = "trawl " + usage[len("scrapy ") :]
        kwargs.setdefault("prog", "trawl")
        super().__init__(*args, usage=usage, **kwargs)

    def _parse_optional(self, arg_string: str) -> Any:
        if arg_string.startswith("-:"):
            return None
        return super()._parse_optional(arg_string)


def _speak_as_trawl() -> None:
    from scrapy import cmdline

    cmdline._print_commands = _print_commands
    cmdline._print_unknown_command = _print_unknown_command
    cmdline.ScrapyArgumentParser = _TrawlArgumentParser  # type: ignore[misc]


def _command_at(argv: list[str]) -> int | None:
    """Where the command's name is: the first argument that is not an option, as Scrapy picks it."""
    return next((i for i in range(1, len(argv)) if not argv[i].startswith("-")), None)


def _command_in_module(module_name: str, inproject: bool) -> ScrapyCommand | None:
    """The command class a plain module defines, as Scrapy's walk would find it; ``None`` for a package."""
    if module_name.rpartition(".")[2].startswith("__"):  # ``__init__``, ``__main__``: never a command
        return None
    from scrapy.commands import BaseRunSpiderCommand, ScrapyCommand

    found = _classes_defined_in(module_name, ScrapyCommand)
    found = [c for c in found if c not in (ScrapyCommand, BaseRunSpiderCommand)]
    found = [c for c in found if inproject or not c.requires_project]
    return found[-1]() if found else None


def _classes_defined_in(module_name: str, base: type) -> list[type]:
    """The subclasses of ``base`` a plain module (not a package) defines itself, in order; none if
    there is no such module."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.submodule_search_locations is not None:
        return []
    module = importlib.import_module(module_name)
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, base) and obj.__module__ == module.__name__
    ]


def _command_named(settings: BaseSettings, name: str, inproject: bool) -> ScrapyCommand | None:
    """The command Scrapy would run for ``name``, importing only its module.

    Scrapy imports every command module (trawl's ``worker``, ``crawl``, ``crates``: polars,
    psycopg, redis, Twisted's TLS, every source) before it reads the command's name: 1.0-1.3 s
    of a 1.1 s ``trawl version``. The precedence is Scrapy's: ``COMMANDS_MODULE``, then the
    ``scrapy.commands`` entry points, then Scrapy's own. ``None``: let Scrapy's full walk answer.
    """
    modules = settings["COMMANDS_MODULE"]
    if modules and name.isidentifier():
        command = _command_in_module(f"{modules}.{name}", inproject)
        if command is not None:
            return command
    from importlib.metadata import entry_points

    for entry_point in entry_points(group="scrapy.commands", name=name):
        obj = entry_point.load()
        return obj() if inspect.isclass(obj) else None
    if name.isidentifier():
        return _command_in_module(f"scrapy.commands.{name}", inproject)
    return None


def _run_print_help(parser: argparse.ArgumentParser, func: Any, *args: Any) -> None:
    from trawl.readcommand import usage_errors

    try:
        func(*args)
    except usage_errors() as exc:
        if str(exc):
            parser.error(str(exc))
        if exc.print_help:
            parser.print_help()
        sys.exit(2)


def _run_command(command: ScrapyCommand | ReadCommand, args: list[str], opts: argparse.Namespace) -> None:
    if not opts.profile:
        command.run(args, opts)
        return
    import cProfile

    sys.stderr.write(f"scrapy: writing cProfile stats to {opts.profile!r}\n")
    profile = cProfile.Profile()
    profile.runctx("command.run(args, opts)", globals(), {"command": command, "args": args, "opts": opts})
    profile.dump_stats(opts.profile)


def _parse_options(
    argv: list[str], at: int, settings: Any, command: Any, formatter: type[argparse.HelpFormatter]
) -> tuple[argparse.ArgumentParser, argparse.Namespace, list[str]]:
    """The command's parser, its options parsed and processed, as Scrapy's command line does."""
    name = argv[at]
    args = [arg for i, arg in enumerate(argv) if i != at]
    parser = _TrawlArgumentParser(
        formatter_class=formatter,
        usage=f"scrapy {name} {command.syntax()}",
        conflict_handler="resolve",
        description=command.long_desc(),
    )
    settings.setdict(command.default_settings, priority="command")
    command.settings = settings
    command.add_options(parser)
    opts, rest = parser.parse_known_args(args=args[1:])
    _run_print_help(parser, command.process_options, rest, opts)
    return parser, opts, rest


def _execute_one(argv: list[str], at: int, settings: Settings, command: ScrapyCommand) -> None:
    """What :func:`scrapy.cmdline.execute` does once it has found the command, step for step.

    Its crawler machinery (0.3 s of imports) is imported only by a command that runs a crawler.
    """
    from scrapy.commands import ScrapyHelpFormatter

    parser, opts, rest = _parse_options(argv, at, settings, command, ScrapyHelpFormatter)
    if command.requires_crawler_process:
        from scrapy.crawler import AsyncCrawlerProcess, CrawlerProcess
        from scrapy.utils.reactor import _asyncio_reactor_path

        if (
            settings["TWISTED_REACTOR"] == _asyncio_reactor_path
            and not settings.getbool("FORCE_CRAWLER_PROCESS")
        ) or not settings.getbool("TWISTED_REACTOR_ENABLED"):
            command.crawler_process = AsyncCrawlerProcess(settings)
        else:
            command.crawler_process = CrawlerProcess(settings)
    _run_print_help(parser, _run_command, command, rest, opts)
    sys.exit(command.exitcode)


def _commands_module() -> str:
    """``COMMANDS_MODULE`` as the project's settings module sets it (Scrapy's default: none), read
    without building the settings: a command on Scrapy's path builds Scrapy's."""
    from trawl.readsettings import add_project_to_path

    add_project_to_path()
    module = os.environ.get("SCRAPY_SETTINGS_MODULE")
    return str(getattr(importlib.import_module(module), "COMMANDS_MODULE", "") or "") if module else ""


def _read_command(modules: str, name: str) -> ReadCommand | None:
    """The read command ``COMMANDS_MODULE`` defines for ``name``; ``None``: a Scrapy command, or none.

    Scrapy's precedence holds: ``COMMANDS_MODULE``'s commands come before the entry points' and
    Scrapy's own, so a read command found there is the one Scrapy would run.
    """
    module_name = f"{modules}.{name}"
    if not modules or not name.isidentifier() or name.startswith("__"):
        return None
    from trawl.readcommand import ReadCommand

    found = _classes_defined_in(module_name, ReadCommand)
    return found[-1]() if found else None


def _execute_read(argv: list[str], at: int, settings: ReadSettings, command: ReadCommand) -> None:
    """:func:`_execute_one` for a read command, importing no Scrapy: trawl's copy of its help formatter."""
    from trawl.readcommand import HelpFormatter

    parser, opts, rest = _parse_options(argv, at, settings, command, HelpFormatter)
    _run_print_help(parser, _run_command, command, rest, opts)
    sys.exit(command.exitcode)


def _inside_project() -> bool:
    """:func:`scrapy.utils.project.inside_project` once the settings module was imported."""
    if os.environ.get("SCRAPY_SETTINGS_MODULE"):
        return True
    here = Path.cwd()
    return any((folder / "scrapy.cfg").is_file() for folder in (here, *here.parents))


def execute(argv: list[str]) -> None:
    """Scrapy's command line importing only the command asked for; help and unknown names: Scrapy's walk.

    A read command runs without Scrapy (:func:`_execute_read`).
    """
    at = _command_at(argv)
    read = None if at is None else _read_command(_commands_module(), argv[at])
    if at is not None and read is not None and (_inside_project() or not read.requires_project):
        from trawl.readsettings import project_settings

        _execute_read(argv, at, project_settings(), read)
        return
    from scrapy.utils.project import get_project_settings, inside_project

    from trawl.readcommand import register_with_scrapy

    register_with_scrapy()  # Scrapy's walk lists (and runs) the read commands too

    settings = get_project_settings()
    if "EDITOR" in os.environ:
        settings["EDITOR"] = os.environ["EDITOR"]
    inproject = inside_project()
    at = _command_at(argv)
    command = None if at is None else _command_named(settings, argv[at], inproject)
    if at is None or command is None:
        from scrapy.cmdline import execute as scrapy_execute

        _speak_as_trawl()
        scrapy_execute(argv, settings)
        return
    _execute_one(argv, at, settings, command)


def main(argv: list[str] | None = None) -> None:
    """The ``trawl`` console script (``[project.scripts]``); exits with the command's status."""
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", SETTINGS_MODULE)
    execute(["trawl", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
