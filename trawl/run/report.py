"""What is new since the last crawl: the window of runs, its first-seen URLs, the files.

Every store records the run that first stored each URL. ``trawl report new``
(:mod:`trawl.commands.report`) and the end-of-run summary
(:mod:`trawl.run.summary`) ask a :class:`~trawl.stores.contract.ReportingStore`
for the runs of a domain (one small frame), pick a window here, and read the
URLs those runs stored first, in frames:

* ``last`` (the default): the runs of the most recent *job* for the domain. A
  job is one invocation: ``crawl all`` records one run per source, all under
  one job id; a single-source crawl is a job of its own. The most recent job
  is the one whose latest run started last. A resumed run counts for the job
  that resumed it.
* a run id, or a job id: those runs.
* an ISO date or date-time (``2026-12-01``, ``2026-12-01T08:00``, ``...Z`` or
  an offset; naive means UTC): the runs of the domain started at or after it.

The selection is one definition for every store, so SQLite and Elasticsearch
cannot disagree about what "last" means.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import polars as pl

from trawl.errors import TrawlError, TrawlUsageError
from trawl.records.runs import FIRST_SEEN_SCHEMA

#: A report's record: ``source`` and ``run_id`` say which run stored the URL first.
REPORT_COLUMNS = (
    "url", "host", "source", "run_id", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes",
)  # fmt: skip
FORMATS = ("txt", "jsonl", "csv")

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?")
_RUN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


class ReportError(TrawlError):
    """A report that cannot be given (no run for the domain): exit status 1."""


@dataclass(frozen=True)
class Since:
    """``--since``: ``last``, a run or job id, or a date (``at``, epoch seconds)."""

    kind: str
    value: str = ""
    at: float | None = None


def parse_since(text: str | None) -> Since:
    raw = (text or "last").strip()
    if raw.lower() == "last":
        return Since("last")
    if _ISO_DATE.fullmatch(raw):
        iso = raw[:-1] + "+00:00" if raw.endswith("Z") else raw
        try:
            moment = datetime.fromisoformat(iso)
        except ValueError:
            raise TrawlUsageError(f"--since {raw!r} is not a real date or time") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return Since("date", raw, moment.timestamp())
    if not _RUN_ID.fullmatch(raw):
        raise TrawlUsageError(
            f"--since takes last, a run id or an ISO date (2026-12-01, 2026-12-01T08:00Z), not {raw!r}"
        )
    return Since("run", raw)


@dataclass(frozen=True)
class Window:
    """The runs whose first-seen URLs a report lists."""

    domain: str
    since: Since
    runs: pl.DataFrame

    @property
    def run_ids(self) -> list[str]:
        return self.runs.get_column("run_id").to_list()

    def describe(self) -> str:
        """``the last crawl (job 3f2a...: otx, wayback; started 2026-12-01 12:00 UTC)``."""
        since = self.since
        if since.kind == "date":
            head = f"since {since.value}"
        elif since.kind == "run":
            head = f"in run {since.value}"
        else:
            head = "in the last crawl"
        if not self.runs.height:
            return f"{head} (no run started since)"
        sources = ", ".join(sorted(set(self.runs.get_column("source").to_list())))
        started = _utc(float(self.runs.get_column("started_at").min()))  # type: ignore[arg-type]
        jobs = sorted(set(self.runs.get_column("job").to_list()))
        job = f"job {jobs[0]}: " if len(jobs) == 1 and since.kind != "date" else ""
        runs = f"{self.runs.height} runs: " if len(jobs) > 1 else ""
        return f"{head} ({job}{runs}{sources}; started {started})"


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def select_window(runs: pl.DataFrame, domain: str, since: Since) -> Window:
    """The runs of ``since`` among ``runs`` (a domain's, from the store); see the module docstring."""
    if not runs.height:
        raise ReportError(
            f"the store has no run for {domain} (crawl it first, or check --domain and the store)"
        )
    runs = runs.with_columns(pl.col("job").fill_null(pl.col("run_id")))
    if since.kind == "last":
        latest = runs.sort("started_at", nulls_last=False).get_column("job")[-1]
        chosen = runs.filter(pl.col("job") == latest)
    elif since.kind == "run":
        chosen = runs.filter((pl.col("run_id") == since.value) | (pl.col("job") == since.value))
        if not chosen.height:
            raise TrawlUsageError(
                f"--since {since.value}: no run or job of that id for {domain} in the store"
            )
    else:
        chosen = runs.filter(pl.col("started_at") >= since.at)
    return Window(domain, since, chosen.sort("started_at", "source"))


def report_frames(
    reader: Any, uri: str, window: Window, settings: Any, limit: int | None = None
) -> Iterator[pl.DataFrame]:
    """The window's first-seen URLs as report records (:data:`REPORT_COLUMNS`), in URL order."""
    if not window.runs.height:
        return
    sources = window.runs.select("run_id", "source")
    for frame in reader.read_first_seen(uri, window.run_ids, window.domain, settings, limit=limit):
        if frame.height:
            yield frame.join(sources, on="run_id", how="left", maintain_order="left").select(REPORT_COLUMNS)


# --- writing ------------------------------------------------------------------------------


def format_of(path: str, given: str | None = None) -> str:
    fmt = (given or Path(path).suffix.lstrip(".") or "txt").lower()
    fmt = "jsonl" if fmt in ("jsonlines", "ndjson") else fmt
    if fmt not in FORMATS:
        raise TrawlUsageError(
            f"{path}: a report is written as {', '.join(FORMATS)} (by its extension), not {fmt!r}"
        )
    return fmt


def encode(frame: pl.DataFrame, fmt: str, header: bool) -> bytes:
    """Report records in ``fmt``, by polars' writers (set-valued fields ``|``-joined in CSV)."""
    buffer = io.BytesIO()
    if fmt == "txt":
        if frame.height:
            return ("\n".join(frame.get_column("url").to_list()) + "\n").encode()
        return b""
    if fmt == "jsonl":
        frame.write_ndjson(buffer)
    else:
        flat = frame.with_columns(pl.col("sources", "statuses", "mimes").list.join("|"))
        flat.write_csv(buffer, include_header=header, line_terminator="\r\n")
    return buffer.getvalue()


def write_report(frames: Iterable[pl.DataFrame], out: IO[bytes], fmt: str) -> int:
    """Write every frame to ``out``; the number of URLs. A CSV always has its header row."""
    count = 0
    header = fmt == "csv"
    for frame in frames:
        out.write(encode(frame, fmt, header))
        header = False
        count += frame.height
    if header:  # nothing new: the header alone
        out.write(encode(pl.DataFrame(schema=_report_schema()), fmt, True))
    return count


def _report_schema() -> dict[str, Any]:
    schema = {name: FIRST_SEEN_SCHEMA.get(name, pl.String) for name in REPORT_COLUMNS}
    return schema


class ReportFile:
    """A report file, written beside its target and renamed over it when complete.

    Unlike a crawl's ``-O`` (which keeps the old file when a run exported
    nothing), a report with no new URL replaces the file with an empty one: the
    report is the store's answer for the window, and yesterday's new URLs are
    not new today.
    """

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        target = Path(os.path.realpath(self.path))
        self.partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")

    def __enter__(self) -> IO[bytes]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.partial.open("xb")
        return self.file

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.file.close()
        if exc_type is not None:
            self.partial.unlink(missing_ok=True)
            return
        target = os.path.realpath(self.path)
        if os.path.exists(target):  # an existing report keeps its mode (trawl.common.files)
            shutil.copymode(target, self.partial)
        os.replace(self.partial, target)
