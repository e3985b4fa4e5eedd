"""``trawl queue``: the shared queue's work per domain and source: pending, in flight, dead-lettered.

It reads counts and reasons only: a task's settings (API keys travel in them)
are never printed.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand

from trawl.distributed.commandline import fail, open_queue
from trawl.errors import TrawlError


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Show the shared queue: pending, in-flight and dead-lettered work per domain and source"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            status = open_queue(self.settings).status()
        except TrawlError as exc:
            self.exitcode = fail(self.settings, exc)
            return
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
