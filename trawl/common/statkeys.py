"""Every ``trawl/*`` stats key, named once.

The exit status, the outcome word, the progress line, the summary table, the
run summary and the notifications are all read from these counters (54 keys
read in 27 files): as string literals, a key misspelt in one
of them would be a counter nobody reads and an outcome read from zero.
Scrapy's stats collector stays the carrier, so ``crawler.stats.get_stats()``
and the stored ``runs.stats`` show the same names as before.
"""

from __future__ import annotations

# --- pages and records -------------------------------------------------------------------
PAGES = "trawl/pages"  #: upstream pages read
PAGES_TOTAL = "trawl/pages_total"  #: pages the upstream said there are (CDX page count)
PAGES_ALREADY_STORED = "trawl/pages_already_stored"  #: pages a resumed run skipped
PAGES_RESUMED = "trawl/pages_resumed"
PAGE_COUNT_FAILED = "trawl/page_count_failed"
CAPTURES = "trawl/captures"  #: capture rows parsed, before dedup
DUPLICATES = "trawl/duplicates"
URLS_UNIQUE = "trawl/urls_unique"  #: URLs this run passed on, each once
URLS_NEW = "trawl/urls_new"  #: of those, URLs the store did not hold
BAD_LINES = "trawl/bad_lines"
BAD_BODIES = "trawl/bad_bodies"
UNDECODABLE_LINES = "trawl/undecodable_lines"  #: upstream lines not UTF-8, read with U+FFFD

# --- the run -----------------------------------------------------------------------------
RUN_ID = "trawl/run_id"
OUTCOME = "trawl/outcome"  #: one word, trawl.common.outcome
CLOSE_REASON = "trawl/close_reason"  #: why the engine closed the spider, known before the pipelines close
ABANDONED = "trawl/abandoned"  #: requests given up unsent because the crawl was stopping
SKIPPED = "trawl/skipped"  #: why the source did not run (no key...)
ELAPSED_SECONDS = "trawl/elapsed_seconds"  #: the one duration of a source's run
LOG_ERRORS = "trawl/log_errors"  #: ERROR lines this crawler logged (trawl.common.attribution)
ESTIMATE_REQUESTS = "trawl/estimate/requests"  #: check_only: requests a full run would send
ESTIMATE_AT_LEAST = "trawl/estimate/at_least"
ESTIMATE_UNKNOWN = "trawl/estimate/unknown"

# --- failures ----------------------------------------------------------------------------
ERRORS = "trawl/errors"
ERRORS_MALFORMED = "trawl/errors/malformed"
ERRORS_STORE = "trawl/errors/store"
GAVE_UP = "trawl/gave_up"
TIMEOUTS = "trawl/timeouts"
BLOCKED = "trawl/blocked"
LIMITED = "trawl/limited"
KEYS_DROPPED = "trawl/keys_dropped"
#: why the store gave up waiting for its server, one line: ``trawl worker`` hands the task back
STORE_OUTAGE = "trawl/store_outage"

# --- politeness --------------------------------------------------------------------------
BANS = "trawl/bans"
BAN_REQUEUED = "trawl/ban_requeued"
PAUSES = "trawl/pauses"
PAUSED_SECONDS = "trawl/paused_seconds"
PAUSE_SECONDS_MAX = "trawl/pause_seconds_max"
REQUESTS_HELD_BY_PAUSE = "trawl/requests_held_by_pause"
BACKOFF_SECONDS = "trawl/backoff_seconds"
RATE_CUTS = "trawl/rate_cuts"
RATE_FINAL = "trawl/rate_final"
RATE_LIMITED = "trawl/rate_limited"
RATE_LIMIT_WAITS = "trawl/rate_limit_waits"
THROTTLE_DELAY_MS_MAX = "trawl/throttle_delay_ms_max"
PROXY_BANS = "trawl/proxy_bans"
PROXIES_ALL_RESTING = "trawl/proxies_all_resting"

# --- per source and per store ------------------------------------------------------------
COMMONCRAWL_INDEXES = "trawl/commoncrawl/indexes"
COMMONCRAWL_COLLINFO_CACHED = "trawl/commoncrawl/collinfo_cached"
INTELX_BASE = "trawl/intelx/base"
INTELX_CREDITS = "trawl/intelx/credits"
INTELX_MASKED = "trawl/intelx/masked"
INTELX_POLLS = "trawl/intelx/polls"
ELASTICSEARCH_DEAD_LETTERS = "trawl/elasticsearch/dead_letters"
ELASTICSEARCH_RETRIED_REQUESTS = "trawl/elasticsearch/retried_requests"
ELASTICSEARCH_REJECTED_429 = "trawl/elasticsearch/rejected_429"

# --- families: one key per reason, kind or proxy -------------------------------------------
FILTERED_PREFIX = "trawl/filtered/"
FILTERED_OUT_OF_SCOPE = FILTERED_PREFIX + "out_of_scope"
FILTERED_INVALID_URL = FILTERED_PREFIX + "invalid_url"


#: Records a source handed to the store, by kind (``trawl/records/crate``): the finish line of a
#: source that is not about URLs (trawl.run.finishline).
RECORDS_PREFIX = "trawl/records/"


def records_of(kind: str) -> str:
    """Records of one kind the pipeline handed on (``trawl/records/probe``)."""
    return RECORDS_PREFIX + kind


def filtered(reason: str) -> str:
    """Records a filter dropped, by reason (``trawl/filtered/keywords``)."""
    return FILTERED_PREFIX + reason


def errors_of(kind: str) -> str:
    """Failures of one kind (``trawl/errors/http``)."""
    return f"{ERRORS}/{kind}"


def proxy_requests(label: str) -> str:
    """Requests sent through one proxy, by its masked label."""
    return f"trawl/proxy_requests/{label}"
