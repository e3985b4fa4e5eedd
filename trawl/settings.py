"""Scrapy settings for trawl: the core ones. Every setting is documented in docs/settings.md.

Override any of them with ``-s NAME=value`` or in a project's own settings.
Components bring their own settings (trawl.settings_checks): each source class
declares its budget, concurrency, timeout, base URL, key and own settings; each
store, the notifier and its receiver kinds, and the URL filter theirs. Their
defaults apply under anything set here or with ``-s``.
"""

import os

from trawl.stores.location import default_store_uri

BOT_NAME = "trawl"

# Sources come from plugins (trawl_register_sources), trawl's own included; a project
# that adds spiders of its own lists their modules here.
SPIDER_MODULES: list[str] = []
NEWSPIDER_MODULE = "trawl.sources"
SPIDER_LOADER_CLASS = "trawl.sources.loader.PluginSpiderLoader"
COMMANDS_MODULE = "trawl.commands"

# Identify ourselves; archives ask crawlers to.
USER_AGENT = "trawl/0.1 (+https://github.com/trawl-project/trawl)"
ROBOTSTXT_OBEY = False  # APIs, not pages: robots.txt does not govern them

# --- Storage -----------------------------------------------------------------------------
# $TRAWL_STORE_URI, else ~/.local/share/trawl/trawl.db ($XDG_DATA_HOME/trawl): the same store
# for every run of a user, from any directory, by hand, cron or scrapyd (trawl.stores.location).
STORE_URI = default_store_uri()
# Each store's own settings are declared by its class (SQLITE_*: trawl.stores.sqlite.store,
# ELASTICSEARCH_*: trawl.stores.elasticsearch.config).
# Pages smaller than this wait up to BATCH_COALESCE_SECONDS for more of their source and are
# stored as one batch (trawl/pipeline/coalesce.py); 0 stores every page on its own.
BATCH_COALESCE_ROWS = 5000
BATCH_COALESCE_SECONDS = 0.2
# Rows handed to a store that writes off the reactor and not written yet, at most, before downloads pause
# (trawl.pipeline.backlog; 0: no bound).
STORE_BACKLOG_ROWS = 50_000
# Response bytes Scrapy's scraper holds before it stops downloading (its default: 5 MB). A page's
# response is held until its batch is stored, and wayback coalesces ten 5,000-line pages (~6 MB)
# into one write: at 5 MB, downloads stopped at every write and the reactor and the store's writer
# took turns (each ~50% busy; 2,000,000 captures 8.2 s, 6.9 s at 16 MiB; peak RSS +35 MB). Pages over
# it (archive.org's 150,000-line ones) are still held one at a time: the store backlog bounds the rest.
SCRAPER_SLOT_MAX_ACTIVE_SIZE = 16 * 2**20

# --- Distributed runs ---------------------------------------------------------------------
# The Redis that trawl enqueue, trawl worker and the shared per-source gate use (trawl.distributed);
# empty: nothing is shared. -s TRAWL_REDIS_URL=... or the environment.
TRAWL_REDIS_URL = os.environ.get("TRAWL_REDIS_URL", "")
# trawl worker: seconds between a worker's heartbeats; a worker silent for 3 of them is dead and the
# reaper returns its work to the queue (trawl.distributed.queue).
QUEUE_HEARTBEAT = 10
# A task whose runs died (killed worker, killed crawl) this many times goes to the dead-letter list.
QUEUE_MAX_DEATHS = 3
# trawl worker: a spreadable source's pages (wayback's, commoncrawl's) go into a per-run Redis queue
# that every worker fetches from (trawl.distributed.spreadsched); False: each task's run stays on one
# worker. Measured as fast as whole runs with one worker and 14-27% faster with two or three
# (docs/distributed.md, "Why spreading is on by default").
SPREAD_PAGES = True
# Requests a spread crawler holds at once (taken from the run's queue, not yet done with);
# 0: three times the source's concurrency (downloading, being stored, ready).
SPREAD_HOLD = 0

# --- Files -------------------------------------------------------------------------------
# The umask of the run: every file trawl creates (store, LOG_FILE, exports, JOBDIR, reports)
# is 0600 and every folder 0700; 022 for 0644/0755, empty for the inherited umask (trawl.common.files).
UMASK = "077"

# --- Plugins -----------------------------------------------------------------------------
TRAWL_PLUGINS: dict[str, bool] = {}
TRAWL_PLUGINS_DISABLED: list[str] = []
TRAWL_RUN_ID = ""

ITEM_PIPELINES = {"trawl.pipeline.itempipeline.PluginPipeline": 300}

# --- Exports (-o) ------------------------------------------------------------------------
FEED_EXPORTERS = {
    "txt": "trawl.exports.exporters.UrlListExporter",
    "jsonl": "trawl.exports.exporters.RecordJsonLinesExporter",
    "jsonlines": "trawl.exports.exporters.RecordJsonLinesExporter",
    "csv": "trawl.exports.exporters.RecordCsvExporter",
}
FEED_EXPORT_ENCODING = "utf-8"
# -O replaces a file at the end of the run, and only with one that has URLs (trawl.exports.storage).
FEED_STORAGES = {
    "": "trawl.exports.storage.SafeFileFeedStorage",
    "file": "trawl.exports.storage.SafeFileFeedStorage",
}

# --- The run summary and notifications when a run ends ----------------------------------
# NOTIFY_URLS, NOTIFY_ON, NOTIFY_TIMEOUT: declared by the notifier (trawl.notify), and
# TELEGRAM_API_BASE_URL by its telegram receiver kind (trawl.notify.receivers).
NOTIFY_MAX_URLS = 20  # new URLs listed in the run summary (and so in a notification)

# --- Progress ----------------------------------------------------------------------------
EXTENSIONS = {
    "trawl.run.progress.Progress": 500,
    "scrapy.extensions.throttle.AutoThrottle": None,
    "trawl.politeness.throttle.SourceAutoThrottle": 0,
    # ERROR lines counted per crawler: one source's error is not another's (crawl all).
    "trawl.common.attribution.ErrorAttribution": 0,
    # /metrics for Prometheus when PROMETHEUS_PORT is set (trawl.metrics); off otherwise.
    "trawl.metrics.extension.Metrics": 500,
}
PROGRESS_INTERVAL = 10.0
# Requests unanswered this long are named in the progress line ("waiting 95 s on 4 requests to ...").
PROGRESS_STALL_AFTER = 30.0
LOG_LEVEL = "INFO"
LOGSTATS_INTERVAL = 0  # the progress line replaces Scrapy's "Crawled N pages" line

# --- Logs (trawl.common.logs) ---------------------------------------------------------------------
# The console shows trawl's lines and every warning; Scrapy's banner and dumps go to LOG_FILE.
TRAWL_LOG_ALL = False  # True: every INFO line on the console too, as plain Scrapy prints them
TRAWL_LOG_JSON = False  # True: one JSON object a line (time, level, source, message, counters)

# --- Politeness ----------------------------------------------------------------------------
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's retry, replaced by one that honours Retry-After and backs off with jitter.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "trawl.politeness.retry.BackoffRetryMiddleware": 550,
    # Picks a live proxy; Scrapy's HttpProxyMiddleware (750) then uses it.
    "trawl.politeness.proxies.ProxyRotationMiddleware": 740,
    # Last before the download: the source's gate (budget, concurrency, pauses).
    "trawl.politeness.ratelimit.RateLimitMiddleware": 950,
    # Scrapy's decompression, a body inflating past DOWNLOAD_MAXSIZE said as such (not "ignored").
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "trawl.politeness.bounds.BoundedCompressionMiddleware": 590,
}
RATE_LIMITS_ENABLED = True
# Every request a server sees must have passed the gate: no transparent re-sends.
DOWNLOAD_HANDLERS = {
    "http": "trawl.politeness.handler.GatedHTTPDownloadHandler",
    "https": "trawl.politeness.handler.GatedHTTPDownloadHandler",
}
# Per source, over the source class's default_concurrency (wayback's is 2).
SOURCE_CONCURRENCY: dict[str, int] = {}
RETRY_LIMITS: dict[str, int] = {}
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 60.0
RETRY_MAX_PAUSE = 3600.0
# First pause after a ban (connections refused right after 429s), doubling while it lasts.
RETRY_BAN_PAUSE = 120.0
PROXY_LIST: list[str] = []
PROXY_LIST_FILE = ""
PROXY_BAN_STATUSES = [403, 407, 418]
PROXY_BACKOFF_BASE = 30.0
PROXY_BACKOFF_MAX = 3600.0
PROXY_MAX_TRIES = 10
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 60.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0

# --- Downloads ---------------------------------------------------------------------------
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
# Scrapy's, with each source's concurrency (SOURCE_CONCURRENCY, else the source's
# default_concurrency, else CONCURRENT_REQUESTS_PER_DOMAIN) enforced by its download slot
# under the asyncio reactor too (see the module).
DOWNLOADER = "trawl.politeness.downloader.Downloader"
DOWNLOAD_TIMEOUT = 120
# Per source, over the source class's default_download_timeout (a CDX page may take a minute
# to come, an API page that has not come in 30 s will not).
SOURCE_DOWNLOAD_TIMEOUT: dict[str, float] = {}
# Bytes an answer may have, counted after decompression too; each built-in source declares its
# own (default_download_maxsize: CDX 64/32 MiB, API pages 8-64 MiB), SOURCE_DOWNLOAD_MAXSIZE
# overrides them. This is what a plugin's source without one gets: Scrapy's 1 GiB let one endless
# page take a crawl to 1.17 GB of RSS. 0: no limit.
DOWNLOAD_MAXSIZE = 64 * 1024 * 1024
DOWNLOAD_WARNSIZE = 32 * 1024 * 1024
SOURCE_DOWNLOAD_MAXSIZE: dict[str, int] = {}
SOURCE_DOWNLOAD_WARNSIZE: dict[str, int] = {}
RETRY_ENABLED = True
RETRY_TIMES = 3
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
# Spiders report a request that gave up in their own one ERROR line.
RETRY_GIVE_UP_LOG_LEVEL = "WARNING"
# A body that does not parse is retried from the spider's callback (trawl.politeness.retryrule):
# the retry carries its count on purpose, which Scrapy's MetaCopyDetectionMiddleware would
# otherwise report as a key copied by mistake from response.meta.
META_COPY_WARN_SKIP_KEYS = ["retry_times"]
# No cookie jar: the APIs need none, and Scrapy's jar would fetch the public
# suffix list over the network (tldextract) the first time it sees a cookie.
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False  # no listening port on a crawler machine by default

# --- Sources -----------------------------------------------------------------------------
# Each source class declares its own (trawl/sources/): its base URL (WAYBACK_BASE_URL...), API key
# (OTX_API_KEY...), settings (URLSCAN_PAGE_SIZE...) and budget. RATE_LIMITS overrides budgets per
# source, requests per period ({"wayback": "30/60s"}); the gate enforces them (trawl.politeness).
RATE_LIMITS: dict[str, str] = {}
# The waymore filters (FILTER_*, MATCH_*) are declared with them, in trawl.pipeline.filters.

# --- Recurring schedules in scrapyd (`trawl schedule`, docs/schedules.md) -----------------------
SCRAPYD_URL = "http://localhost:6800"  # the scrapyd `trawl schedule` talks to (--url)
SCRAPYD_PROJECT = "trawl"  # its project name there, as deployed by scrapyd-deploy (--project)
