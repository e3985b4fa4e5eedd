"""The probe's counts, kept in the crawl's stats, and its table at the end of the run.

Stats (so Scrapy's stats dump, ``runs.stats`` in the store and Prometheus see
them): ``trawl/probe/live``, ``trawl/probe/soft-404``, ``trawl/probe/dead`` and
``trawl/probe/status/<code>`` (``none``: no answer). The table, logged when the
probe closes::

    probe: 14 URLs: 9 live, 3 soft-404, 2 dead
    status    URLs
    200         11
    404          1
    none         2
"""

from __future__ import annotations

import logging
from typing import Any

VERDICTS = ("live", "soft-404", "dead")
_PREFIX = "trawl/probe/"
_STATUS = _PREFIX + "status/"


def count_record(stats: Any, row: dict[str, Any]) -> None:
    stats.inc_value(_PREFIX + row["verdict"])
    status = row.get("status")
    stats.inc_value(_STATUS + ("none" if status is None else str(status)))


def counts(stats: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(URLs per verdict, URLs per status) from the stats."""
    values = stats.get_stats()
    verdicts = {v: int(values.get(_PREFIX + v, 0)) for v in VERDICTS}
    statuses = {k[len(_STATUS) :]: int(n) for k, n in values.items() if k.startswith(_STATUS)}
    return verdicts, statuses


def table(stats: Any) -> list[str]:
    """The lines of the end-of-run table."""
    verdicts, statuses = counts(stats)
    total = sum(verdicts.values())
    lines = [f"probe: {total} URLs: " + ", ".join(f"{n} {v}" for v, n in verdicts.items())]
    if statuses:
        lines.append(f"{'status':<8}{'URLs':>6}")
        order = sorted(statuses, key=lambda s: (s == "none", s))
        lines.extend(f"{status:<8}{statuses[status]:>6}" for status in order)
    return lines


def log_table(logger: logging.Logger | logging.LoggerAdapter, stats: Any) -> None:
    for line in table(stats):
        logger.info("%s", line)
