"""Runs as every store records them: the frames a ``ReportingStore`` answers with.

The store contract (:mod:`trawl.stores.contract`) promises these columns, and
the report (:mod:`trawl.run.report`) and the run summary read them; they live
with the record types so that a store depends on records, not on the report
command's module.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trawl.records.batches import URL_SCHEMA

#: Columns of :meth:`ReportingStore.list_runs` (times: epoch seconds, UTC).
RUNS_SCHEMA: dict[str, Any] = {
    "run_id": pl.String,
    "job": pl.String,
    "source": pl.String,
    "domain": pl.String,
    "started_at": pl.Float64,
    "finished_at": pl.Float64,
    "finish_reason": pl.String,
}
#: Columns of :meth:`ReportingStore.read_first_seen`.
FIRST_SEEN_SCHEMA: dict[str, Any] = {
    **{name: kind for name, kind in URL_SCHEMA.items() if name not in ("new", "repeat")},
    "run_id": pl.String,
}


def covering_domains(domain: str) -> list[str]:
    """``sub.example.com`` -> itself and its parents: the domains whose runs may have found its URLs.

    A store lists the runs of these and of the domain's subdomains.
    """
    labels = domain.split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]


def empty_runs() -> pl.DataFrame:
    """No run: a frame of :data:`RUNS_SCHEMA` without rows."""
    return pl.DataFrame(schema=RUNS_SCHEMA)
