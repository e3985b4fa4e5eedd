"""``trawl crates QUESTION``: questions of the crates.io data, and the alerts' watch rules.

    trawl crates top --by downloads|recent|growth [--days 7] [--limit 20]
    trawl crates deps serde [--version 1.0.200]
    trawl crates rdeps serde [--transitive] [--kind normal,build,dev]
    trawl crates updated --since 2026-09-01
    trawl crates trends [--growth 3.0] [--window 7] [--min-downloads 1]
    trawl crates watch list | add NAME... [--on version,yanked,dependency] | remove NAME...
    trawl crates watch growth FACTOR [--window 7] | watch growth off | watch check

Answers come from :mod:`trawl.commands._crates_questions` (polars over whole
columns), read from the Parquet raw layer when ``CRATES_PARQUET_DIR`` holds a
dump, else from the store (``--layer`` chooses); printed as ``trawl search``
prints (:mod:`trawl.commands._output`): a table on a terminal, the first column
in a pipe, ``--format jsonl|csv``. Options are taken as text and checked here,
so a bad one is one ``trawl: error:`` line (exit 2), as is an option that
belongs to another question.
"""

from __future__ import annotations

import argparse
import sys

import polars as pl

from trawl.commands._crates_questions import downloads, graph
from trawl.commands._crates_questions.layers import StoreLayer, choose_layer
from trawl.commands._output import FORMATS, default_format, write_csv, write_jsonl, write_table
from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.builtins.crates_alerts import check_alerts
from trawl.pipeline.builtins.crates_alerts.rules import (
    MAX_WINDOW,
    check_growth,
    load_rules,
    read_events,
    save_rules,
    watch_path,
)
from trawl.readcommand import StoreReadingCommand, add_store_option, open_readable
from trawl.sources.crates.records import CrateBatch

#: Question -> (positional arguments it takes, options of its own).
QUESTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "top": ("", ("by", "days", "limit")),
    "deps": ("NAME", ("version",)),
    "rdeps": ("NAME", ("transitive", "kind", "limit")),
    "updated": ("", ("since", "limit")),
    "trends": ("", ("growth", "window", "min_downloads", "limit")),
    "watch": ("ACTION", ("on", "window")),
}
_OPTIONS = (
    "by",
    "days",
    "limit",
    "version",
    "transitive",
    "kind",
    "since",
    "growth",
    "window",
    "min_downloads",
    "on",
)


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "top|deps|rdeps|updated|trends|watch [ARGS] [options]"

    def short_desc(self) -> str:
        return "Ask the crates.io data (top, deps, rdeps, updated, trends) and set its alerts (watch)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        text = {"default": None}
        parser.add_argument("--by", metavar="downloads|recent|growth", help="top: what to rank by", **text)
        parser.add_argument("--days", metavar="N", help="top: the download window (default 7)", **text)
        parser.add_argument("--limit", metavar="N", help="at most N rows (top: default 20)", **text)
        parser.add_argument(
            "--version", metavar="NUM", help="deps: this version, not the current one", **text
        )
        parser.add_argument(
            "--transitive", action="store_true", default=None, help="rdeps: the whole closure"
        )
        parser.add_argument("--kind", metavar="KINDS", help="rdeps: normal,build,dev (default: all)", **text)
        parser.add_argument(
            "--since", metavar="DATE", help="updated: crates updated at or after DATE", **text
        )
        parser.add_argument("--growth", metavar="F", help="trends: last window >= F x the one before", **text)
        parser.add_argument("--window", metavar="DAYS", help="trends, watch growth: days (default 7)", **text)
        parser.add_argument(
            "--min-downloads", metavar="N", help="trends: at least N in the last window", **text
        )
        parser.add_argument(
            "--on", metavar="EVENTS", help="watch add: version,yanked,dependency (default all)", **text
        )
        parser.add_argument("--format", choices=FORMATS, default=None, help="table, txt, jsonl or csv")
        add_store_option(parser)
        parser.add_argument("--layer", metavar="auto|store|parquet", default="auto", help="where to read")

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in QUESTIONS:
            given = f", not {args[0]!r}" if args else ""
            raise TrawlUsageError(
                f"ask one of {', '.join(QUESTIONS)} (trawl crates top --by downloads){given}"
            )
        question, rest = args[0], args[1:]
        wanted, own = QUESTIONS[question]
        stray = [name for name in _OPTIONS if getattr(opts, name) is not None and name not in own]
        if stray:
            raise TrawlUsageError(f"--{stray[0].replace('_', '-')} is not an option of {question}")
        if question == "watch":
            self._watch(rest, opts)
            return
        if wanted and len(rest) != 1:
            raise TrawlUsageError(f"{question} takes one crate name: trawl crates {question} NAME")
        if not wanted and rest:
            raise TrawlUsageError(f"{question} takes no argument, got {rest[0]!r}")
        answer = self._answer(question, rest[0] if rest else "", opts)
        self._print(
            answer, opts, noun=("crate", "crates") if question != "deps" else ("dependency", "dependencies")
        )

    def _answer(self, question: str, name: str, opts: argparse.Namespace) -> pl.DataFrame:
        limit = _whole(opts.limit, "--limit", 0) if opts.limit is not None else None
        if question == "top":
            by = (opts.by or "downloads").strip().lower()
            days = _whole(opts.days or "7", "--days", 1, MAX_WINDOW)
            layer = self._layer(opts)
            return downloads.top(layer, by, days, 20 if limit is None else limit)
        if question == "updated":
            if opts.since is None:
                raise TrawlUsageError("updated takes --since DATE (2026-09-01)")
            since = downloads.parse_since(opts.since)
            return _limited(downloads.updated(self._layer(opts), since), limit)
        if question == "trends":
            factor, window = check_growth(opts.growth or "3.0", opts.window or "7")
            least = _whole(opts.min_downloads or "1", "--min-downloads", 1)
            return _limited(downloads.trends(self._layer(opts), factor, window, least), limit)
        if question == "deps":
            return graph.deps(self._layer(opts), name, opts.version)
        kinds = graph.DEPENDENCY_KINDS
        if opts.kind is not None:
            kinds = tuple(k.strip().lower() for k in opts.kind.split(",") if k.strip())
            if not kinds or any(k not in graph.DEPENDENCY_KINDS for k in kinds):
                raise TrawlUsageError(
                    f"--kind takes some of {', '.join(graph.DEPENDENCY_KINDS)}, not {opts.kind!r}"
                )
        return _limited(graph.rdeps(self._layer(opts), name, bool(opts.transitive), kinds), limit)

    def _uri(self, opts: argparse.Namespace) -> str:
        assert self.settings is not None
        return str(opts.store or self.settings.get("STORE_URI") or "").strip()

    def _store(self, uri: str) -> StoreLayer:
        assert self.settings is not None
        return StoreLayer(open_readable(self.settings, uri, ("read_kinds",)), uri, self.settings)

    def _layer(self, opts: argparse.Namespace):  # type: ignore[no-untyped-def]
        assert self.settings is not None
        uri = self._uri(opts)
        layer = str(opts.layer).strip().lower()
        store = self._store(uri) if uri and layer != "parquet" else None
        chosen = choose_layer(layer, str(self.settings.get("CRATES_PARQUET_DIR") or "").strip(), store)
        if chosen is store and store is not None and not store.read(CrateBatch, ["id"]).height:
            raise TrawlError(f"the store {uri} holds no crates.io data (load it: trawl crawl crates)")
        return chosen

    def _watch(self, rest: list[str], opts: argparse.Namespace) -> None:
        """``watch list|add|remove|growth|check``: the rules in ``CRATES_WATCH_FILE``."""
        assert self.settings is not None
        path = watch_path(self.settings.get("CRATES_WATCH_FILE"))
        action, names = (rest[0], rest[1:]) if rest else ("list", [])
        if opts.on is not None and action != "add":
            raise TrawlUsageError("--on is an option of watch add")
        if opts.window is not None and action != "growth":
            raise TrawlUsageError("--window is an option of watch growth")
        rules = load_rules(path)
        if action == "list":
            rows = [{"rule": name, "on": ",".join(events)} for name, events in sorted(rules.crates.items())]
            if rules.growth is not None:
                rows.append({"rule": "(growth)", "on": f"x{rules.growth[0]:g} in {rules.growth[1]} days"})
            self._print(
                pl.DataFrame(rows, schema={"rule": pl.String, "on": pl.String}), opts, ("rule", "rules")
            )
            return
        if action == "check":
            uri = self._uri(opts)
            if not uri:
                raise TrawlUsageError("watch check reads the store: set STORE_URI (or --store URI)")
            events = check_alerts(self.settings, uri)
            rows = [e.as_dict() for e in events]
            frame = pl.DataFrame(rows, schema={k: pl.String for k in ("kind", "crate", "detail", "text")})
            self._print(frame.select("crate", "kind", "detail"), opts, ("alert", "alerts"))
            return
        if action in ("add", "remove"):
            if not names:
                raise TrawlUsageError(f"watch {action} takes crate names: trawl crates watch {action} serde")
            for name in names:
                if action == "add":
                    rules.crates[name] = read_events(opts.on or "version,yanked,dependency")
                else:
                    rules.crates.pop(name, None)
        elif action == "growth":
            if len(names) != 1:
                raise TrawlUsageError("watch growth takes a factor (3.0) or off")
            rules.growth = None if names[0].lower() == "off" else check_growth(names[0], opts.window or "7")
        else:
            raise TrawlUsageError(f"watch takes list, add, remove, growth or check, not {action!r}")
        save_rules(path, rules)
        print(f"saved the watch rules in {path}")

    def _print(self, frame: pl.DataFrame, opts: argparse.Namespace, noun: tuple[str, str]) -> None:
        out = sys.stdout
        fmt = default_format(out, opts.format)
        if fmt == "jsonl":
            write_jsonl(out, frame.iter_rows(named=True))
        elif fmt == "csv":
            write_csv(out, frame.columns, frame.iter_rows())
        elif fmt == "txt":
            out.writelines(f"{value}\n" for value in frame.get_column(frame.columns[0]))
        else:
            rows = [tuple(_cell(v) for v in row) for row in frame.iter_rows()]
            write_table(
                out, [c.upper() for c in frame.columns], rows, flexible=len(frame.columns) - 1,
                noun=noun, empty=f"no {noun[1]}",
            )  # fmt: skip
        out.flush()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _whole(text: str, option: str, minimum: int, maximum: int | None = None) -> int:
    """A whole-number option, in bounds; one usage line otherwise."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or value < minimum or (maximum is not None and value > maximum):
        bounds = f"{minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise TrawlUsageError(f"{option} takes a whole number {bounds}, not {text!r}")
    return value


def _limited(frame: pl.DataFrame, limit: int | None) -> pl.DataFrame:
    return frame if limit is None else frame.head(limit)
