"""``trawl queue``: the shared queue's work per domain and source; ``retry`` and ``purge`` for dead letters.

    trawl queue           pending, in-flight and dead-lettered tasks, the workers, the reasons
    trawl queue --json    the same as one JSON object
    trawl queue retry     every dead-lettered task queued again
    trawl queue purge     every dead letter dropped

It reads counts and reasons only: a task's settings (API keys travel in them)
are never printed.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from trawl.distributed.commandline import fail, open_queue
from trawl.distributed.queue import Status
from trawl.errors import EXIT_USAGE, TrawlError
from trawl.readcommand import ReadCommand

ACTIONS = ("retry", "purge")
USAGE = "queue [retry|purge] [--json]"


class Command(ReadCommand):
    def syntax(self) -> str:
        return "[retry|purge] [--json]"

    def short_desc(self) -> str:
        return "Show the shared queue (pending, in-flight, dead-lettered work); retry or purge dead letters"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print the status as one JSON object")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if len(args) > 1 or (args and args[0] not in ACTIONS):
            given = " ".join(args)
            sys.stderr.write(
                f"trawl: error: unknown subcommand {given!r} (trawl queue [retry|purge] [--json])\n"
            )
            self.exitcode = EXIT_USAGE
            return
        try:
            queue = open_queue(self.settings)
            if args and args[0] == "retry":
                queued, skipped = queue.retry_dead()
                also = f" ({skipped} already queued or held: not queued twice)" if skipped else ""
                print(f"{queued} dead-lettered task(s) queued again{also}")
                return
            if args and args[0] == "purge":
                print(f"{queue.purge_dead()} dead-lettered task(s) dropped")
                return
            status = queue.status()
        except TrawlError as exc:
            self.exitcode = fail(self.settings, exc)
            return
        if opts.json:
            print(orjson.dumps(as_json(status)).decode())
        else:
            print_table(status)


def as_json(status: Status) -> dict[str, object]:
    """The status as ``--json`` prints it: per (domain, source) counts, totals, workers, dead letters."""
    keys = sorted(set(status.pending) | set(status.in_flight) | set(status.dead))
    return {
        "tasks": [
            {"domain": d, "source": s, "pending": status.pending[d, s], "in_flight": status.in_flight[d, s],
             "dead": status.dead[d, s]}
            for d, s in keys
        ],
        "total": {"pending": sum(status.pending.values()), "in_flight": sum(status.in_flight.values()),
                  "dead": sum(status.dead.values())},
        "workers": [{"id": w, "alive": live, "held": held} for w, (live, held) in status.workers.items()],
        "dead_letters": [{"domain": d, "source": s, "reason": r} for d, s, r in status.reasons],
        "unreadable": status.unreadable,
    }  # fmt: skip


def print_table(status: Status) -> None:
    keys = sorted(set(status.pending) | set(status.in_flight) | set(status.dead))
    header = ("domain", "source", "pending", "in flight", "dead")
    rows = [
        (d, s, str(status.pending[d, s]), str(status.in_flight[d, s]), str(status.dead[d, s]))
        for d, s in keys
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    totals = (sum(status.pending.values()), sum(status.in_flight.values()), sum(status.dead.values()))
    print(f"total: {totals[0]} pending, {totals[1]} in flight, {totals[2]} dead-lettered")
    alive = [w for w, (live, _) in status.workers.items() if live]
    dead = [w for w, (live, _) in status.workers.items() if not live]
    print(
        f"workers: {len(alive)} alive"
        + (f", {len(dead)} dead (the reaper returns their work)" if dead else "")
    )
    for domain, source, reason in status.reasons:
        print(f"dead-lettered: {domain} {source}: {reason}")
    if status.unreadable:
        print(f"unreadable entries: {status.unreadable} (not trawl tasks)")
