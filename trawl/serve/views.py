"""The canned queries ``trawl serve`` adds to the store's page: named for what users ask.

Each is plain SQL over the store's tables, shown by datasette with its own CSV
and JSON links; a view appears only when the tables it reads exist (a store
that never ran ``trawl crawl probe`` has no probe results to show). They are
queries, not ``CREATE VIEW``: the store file is served read-only and its schema
stays the crawls'. Dates are shown as ``YYYY-MM-DD hh:mm:ss``, sets as
``a, b``, times of runs in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass


def _date(column: str) -> str:
    """A capture timestamp (``20220223040759``) as ``2022-02-23 04:07:59``."""
    return (
        f"CASE WHEN {column} IS NULL THEN NULL ELSE substr({column}, 1, 4) || '-' || substr({column}, 5, 2)"
        f" || '-' || substr({column}, 7, 2) || ' ' || substr({column}, 9, 2) || ':'"
        f" || substr({column}, 11, 2) || ':' || substr({column}, 13, 2) END"
    )


def _set(column: str) -> str:
    return f"replace({column}, ',', ', ')"


def _epoch(column: str) -> str:
    return f"datetime({column}, 'unixepoch')"


_URL_COLUMNS = (
    f"u.url, u.host, {_set('u.sources')} AS sources, {_date('u.first_seen')} AS first_seen,"
    f" {_date('u.last_seen')} AS last_seen, u.captures, {_set('u.statuses')} AS statuses,"
    f" {_set('u.mimes')} AS mimes"
)

#: The runs of the most recent job (a ``crawl all`` is one job; a run without a job is its own).
_LAST_JOB_RUNS = (
    "SELECT run FROM runs WHERE coalesce(job, run_id) = (SELECT coalesce(job, run_id) FROM runs"
    " ORDER BY started_at DESC, run DESC LIMIT 1)"
)


@dataclass(frozen=True)
class View:
    name: str
    title: str
    description: str
    sql: str
    #: The tables it reads: it is offered only when the store has all of them.
    needs: tuple[str, ...]


VIEWS: tuple[View, ...] = (
    View(
        "url_provenance",
        "URLs",
        "Every URL with what the sources said about it: sources, first and last seen, captures,"
        " statuses, mime types.",
        f"SELECT {_URL_COLUMNS} FROM urls AS u ORDER BY u.url LIMIT 1000",
        ("urls",),
    ),
    View(
        "hosts",
        "Hosts",
        "How many URLs each host has, most first.",
        "SELECT host, count(*) AS urls FROM urls GROUP BY host ORDER BY urls DESC, host",
        ("urls",),
    ),
    View(
        "runs_by_source",
        "Runs",
        "Each run of each source: when, how it ended, how many URLs it read and how many were new.",
        "SELECT run, source, domain, "
        + _epoch("started_at")
        + " AS started, "
        + _epoch("finished_at")
        + " AS finished, finish_reason AS outcome, stats ->> '$.\"trawl/urls_unique\"' AS urls,"
        " stats ->> '$.\"trawl/urls_new\"' AS new_urls, stats ->> '$.\"trawl/log_errors\"' AS errors,"
        " coalesce(job, run_id) AS job FROM runs ORDER BY run DESC",
        ("runs",),
    ),
    View(
        "new_since_last_run",
        "New since the last run",
        "The URLs first stored by the most recent crawl (every source of a crawl all), as trawl"
        " report new lists them.",
        f"SELECT {_URL_COLUMNS}, r.source AS found_by FROM urls AS u JOIN runs AS r ON r.run = u.first_run"
        f" WHERE u.first_run IN ({_LAST_JOB_RUNS}) ORDER BY u.first_run, u.url",
        ("urls", "runs"),
    ),
    View(
        "mined_endpoints",
        "Mined endpoints",
        "The endpoints trawl crawl responses found in archived files, with when they were first and"
        " last seen and in how many files.",
        "SELECT endpoint, method, group_concat(DISTINCT how) AS how, group_concat(DISTINCT query) AS query,"
        f" {_date('min(first_seen)')} AS first_seen, {_date('max(last_seen)')} AS last_seen,"
        " count(DISTINCT digest) AS files, min(file_url) AS example_file FROM endpoint_records"
        " GROUP BY endpoint, method ORDER BY endpoint",
        ("endpoint_records",),
    ),
    View(
        "mined_parameters",
        "Mined parameters",
        "Each parameter name found in archived files, in how many files, first and last seen.",
        "SELECT p.value AS parameter, count(*) AS files, "
        + _date("min(m.first_seen)")
        + " AS first_seen, "
        + _date("max(m.last_seen)")
        + " AS last_seen FROM mined_records AS m,"
        " json_each('[\"' || replace(replace(m.params, '\"', ''), ',', '\",\"') || '\"]') AS p"
        " WHERE coalesce(m.params, '') != '' GROUP BY p.value ORDER BY files DESC, parameter",
        ("mined_records",),
    ),
    View(
        "probe_results",
        "Probe results",
        "What trawl crawl probe found: live, soft-404 or dead, status, title, server, where it redirects.",
        "SELECT url, verdict, live, status, title, server, final_url, content_type, response_ms, error,"
        " probed_at FROM probe_records ORDER BY verdict, url",
        ("probe_records",),
    ),
    View(
        "live_pages",
        "Live crawl pages",
        "What trawl crawl live fetched and found: each URL, the page it was found on, depth, status.",
        "SELECT url, verdict, status, content_type, depth, how, found_on, found_at FROM link_records"
        " ORDER BY depth, url",
        ("link_records",),
    ),
    View(
        "top_crates",
        "Top crates",
        "The crates with the most downloads.",
        "SELECT name, downloads, updated_at, description, repository FROM crate_records"
        " ORDER BY downloads DESC LIMIT 100",
        ("crate_records",),
    ),
    View(
        "crate_dependents",
        "Crate dependents",
        "The crates whose versions depend on a crate (direct dependents), most downloaded first.",
        "SELECT c.name AS dependent, max(v.num) AS latest_version_depending, c.downloads"
        " FROM crate_records AS target JOIN dependency_records AS d ON d.crate_id = target.id"
        " JOIN version_records AS v ON v.id = d.version_id JOIN crate_records AS c ON c.id = v.crate_id"
        " WHERE target.name = :crate GROUP BY c.id ORDER BY c.downloads DESC",
        ("crate_records", "dependency_records", "version_records"),
    ),
    View(
        "crate_download_trends",
        "Crate download trends",
        "A crate's downloads per day (all its versions), from the db-dump's last 90 days.",
        "SELECT d.date, sum(d.downloads) AS downloads FROM crate_records AS c"
        " JOIN version_records AS v ON v.crate_id = c.id JOIN version_download_records AS d"
        " ON d.version_id = v.id WHERE c.name = :crate GROUP BY d.date ORDER BY d.date",
        ("crate_records", "version_records", "version_download_records"),
    ),
)


def available(tables: set[str]) -> list[View]:
    """The views whose tables the store holds."""
    return [view for view in VIEWS if set(view.needs) <= tables]
