"""Scrapy settings for trawl. Every setting is documented in docs/settings.md.

Override any of them with ``-s NAME=value`` or in a project's own settings.
"""

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
SQLITE_SYNCHRONOUS = "NORMAL"
SQLITE_CACHE_MB = 64
# Pages smaller than this wait up to BATCH_COALESCE_SECONDS for more of their source and are
# stored as one batch (trawl/pipeline/coalesce.py); 0 stores every page on its own.
BATCH_COALESCE_ROWS = 5000
BATCH_COALESCE_SECONDS = 0.2

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

# --- Notifications when a run ends (trawl.notify) ------------------------------------
# Receivers: https://... (JSON), slack+https://..., discord+https://..., telegram://TOKEN@CHAT_ID.
NOTIFY_URLS: list[str] = []
NOTIFY_ON = "always"  # always, new (the run added URLs), error (exit status not 0); or several
NOTIFY_MAX_URLS = 20  # new URLs listed in a notification (and in the run summary)
NOTIFY_TIMEOUT = 5.0  # seconds for all receivers together; a slow one is left behind
TELEGRAM_API_BASE_URL = "https://api.telegram.org"

# --- Progress ----------------------------------------------------------------------------
EXTENSIONS = {
    "trawl.run.progress.Progress": 500,
    "scrapy.extensions.throttle.AutoThrottle": None,
    "trawl.politeness.throttle.SourceAutoThrottle": 0,
    # ERROR lines counted per crawler: one source's error is not another's (crawl all).
    "trawl.run.attribution.ErrorAttribution": 0,
}
PROGRESS_INTERVAL = 10.0
# Requests unanswered this long are named in the progress line ("waiting 95 s on 4 requests to ...").
PROGRESS_STALL_AFTER = 30.0
LOG_LEVEL = "INFO"
LOGSTATS_INTERVAL = 0  # the progress line replaces Scrapy's "Crawled N pages" line

# --- Logs (trawl.run.logs) ---------------------------------------------------------------------
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
}
RATE_LIMITS_ENABLED = True
# Every request a server sees must have passed the gate: no transparent re-sends.
DOWNLOAD_HANDLERS = {
    "http": "trawl.politeness.handler.GatedHTTPDownloadHandler",
    "https": "trawl.politeness.handler.GatedHTTPDownloadHandler",
}
# The Internet Archive bans an IP after three 429s in a row: with two requests in flight,
# the first 429 cannot become three before the gate pauses the source (trawl.politeness.aimd).
SOURCE_CONCURRENCY: dict[str, int] = {"wayback": 2}
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
# Scrapy's, with each source's concurrency (SOURCE_CONCURRENCY, else CONCURRENT_REQUESTS_PER_DOMAIN)
# enforced by its download slot under the asyncio reactor too (see the module).
DOWNLOADER = "trawl.politeness.downloader.Downloader"
DOWNLOAD_TIMEOUT = 120
# Per source: a CDX page may take a minute to come, an API page that has not come in 30 s will not.
SOURCE_DOWNLOAD_TIMEOUT = {
    "wayback": 120,
    "commoncrawl": 120,
    "otx": 30,
    "urlscan": 30,
    "virustotal": 30,
    "intelx": 30,
    "ghostarchive": 60,
}
RETRY_ENABLED = True
RETRY_TIMES = 3
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
# Spiders report a request that gave up in their own one ERROR line.
RETRY_GIVE_UP_LOG_LEVEL = "WARNING"
# No cookie jar: the APIs need none, and Scrapy's jar would fetch the public
# suffix list over the network (tldextract) the first time it sees a cookie.
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False  # no listening port on a crawler machine by default

# --- Sources -----------------------------------------------------------------------------
WAYBACK_BASE_URL = "https://web.archive.org"
WAYBACK_CDX_PATH = "/cdx/search/cdx"
WAYBACK_DIALECT = "auto"
WAYBACK_PAGE_SIZE = 0

COMMONCRAWL_BASE_URL = "https://index.commoncrawl.org"
COMMONCRAWL_COLLINFO_TTL = 86400  # seconds collinfo.json stays cached
OTX_BASE_URL = "https://otx.alienvault.com"
OTX_API_KEY = ""
URLSCAN_BASE_URL = "https://urlscan.io"
URLSCAN_API_KEY = ""
URLSCAN_API_KEYS = ""
VIRUSTOTAL_BASE_URL = "https://www.virustotal.com"
VIRUSTOTAL_API_KEY = ""
INTELX_BASE_URL = "https://2.intelx.io"
INTELX_FALLBACK_BASE_URL = "https://free.intelx.io"
INTELX_API_KEY = ""
GHOSTARCHIVE_BASE_URL = "https://ghostarchive.org"
# Where trawl caches small upstream metadata (Common Crawl's collinfo.json).
TRAWL_CACHE_DIR = "~/.cache/trawl"

# Requests per period each source's public service tolerates (enforced per source
# by trawl.politeness.ratelimit; check_only estimates durations with them).
RATE_LIMITS = {
    "wayback": "60/60s",
    "commoncrawl": "1/1s",
    "otx": "100/60s",
    "urlscan": "120/60s",
    "virustotal": "4/60s",
    "intelx": "1/1s",
    "ghostarchive": "30/60s",
}

# --- Filters (waymore 8.9's names and defaults) ------------------------------------------
FILTER_CODE = "404,301,302"
FILTER_MIME = (
    "text/css,image/jpeg,image/jpg,image/png,image/svg+xml,image/gif,image/tiff,image/webp,"
    "image/bmp,image/vnd,image/x-icon,image/vnd.microsoft.icon,font/ttf,font/woff,font/woff2,"
    "font/x-woff2,font/x-woff,font/otf,audio/mpeg,audio/wav,audio/webm,audio/aac,audio/ogg,"
    "audio/wav,audio/webm,video/mp4,video/mpeg,video/webm,video/ogg,video/mp2t,video/webm,"
    "video/x-msvideo,video/x-flv,application/font-woff,application/font-woff2,"
    "application/x-font-woff,application/x-font-woff2,application/vnd.ms-fontobject,"
    "application/font-sfnt,application/vnd.android.package-archive,binary/octet-stream,"
    "application/octet-stream,application/x-font-ttf,application/x-font-otf,video/webm,"
    "video/3gpp,application/font-ttf,audio/mp3,audio/x-wav,image/pjpeg,audio/basic,"
    "application/font-otf,application/x-ms-application,application/x-msdownload,"
    "video/x-ms-wmv,image/x-png,video/quicktime,image/x-ms-bmp,font/opentype,"
    "application/x-font-opentype,application/x-woff,audio/aiff,video/x-ms-asf,"
    "audio/x-ms-wma,audio/wma,application/x-mplayer2,image/avif"
)
FILTER_URL = (
    ".css,.jpg,.jpeg,.png,.svg,.img,.gif,.mp4,.flv,.ogv,.webm,.webp,.mov,.mp3,.m4a,.m4p,"
    ".scss,.tif,.tiff,.ttf,.otf,.woff,.woff2,.bmp,.ico,.eot,.htc,.rtf,.swf,.image,/image,"
    "/img,/css,/wp-json,/wp-content,/wp-includes,/theme,/audio,/captcha,/font,node_modules,"
    "/jquery,/bootstrap,/_incapsula_resource,.wmv,.wma,.asx,.avif"
)
FILTER_KEYWORDS = (
    "admin,login,logon,signin,signup,register,registration,dash,portal,ftp,panel,.js,api,"
    "robots.txt,graph,gql,config,backup,debug,db,database,git,cgi-bin,swagger,zip,.rar,"
    "tar.gz,internal,jira,jenkins,confluence,atlassian,okta,corp,upload,delete,email,sql,"
    "create,edit,test,temp,cache,wsdl,log,payment,setting,mail,file,redirect,chat,billing,"
    "doc,trace,ftp,gateway,import,proxy,dev,stage,stg,uat,sonar.ci.,.cp."
)
MATCH_CODE = ""
MATCH_MIME = ""

# --- urlscan -----------------------------------------------------------------------------
URLSCAN_PAGE_SIZE = 100  # results per search request (urlscan: default 100, at most 10000)
# Longest wait for a rate-limited key's reset before the run stops as partial (seconds).
URLSCAN_MAX_WAIT = 3600

# --- Elasticsearch store (STORE_URI=elasticsearch://host:9200) ------------------------------
# elasticsearch+https://user:password@host:9200 for TLS and basic auth; docs/elasticsearch.md.
ELASTICSEARCH_API_KEY = ""  # or the ELASTICSEARCH_API_KEY environment variable
ELASTICSEARCH_CA_CERTS = ""  # CA bundle (PEM) for https clusters with a private CA
ELASTICSEARCH_VERIFY_CERTS = True
ELASTICSEARCH_TIMEOUT = 30  # seconds per request
ELASTICSEARCH_INDEX_PREFIX = "trawl"  # indexes <prefix>-urls-v1, <prefix>-pages, <prefix>-runs
ELASTICSEARCH_SHARDS = 1
ELASTICSEARCH_REPLICAS = "0-1"  # a number, or an auto_expand_replicas range
ELASTICSEARCH_BULK_DOCS = 2000  # documents per _bulk request
# Tries again for documents the cluster rejects with 429, and for a store request that fails
# as a whole (timeout, refused or reset connection, HTTP 502/503/504) before the crawl stops.
ELASTICSEARCH_RETRIES = 5
ELASTICSEARCH_BACKOFF = 0.5  # first wait before such a try (seconds), doubled each time
ELASTICSEARCH_BACKOFF_MAX = 10.0
# Documents that still fail land here, one JSON line each; `scrapy es-replay` writes them.
ELASTICSEARCH_DEAD_LETTERS = "trawl-es-dead-letters.ndjson"

# --- VirusTotal ----------------------------------------------------------------------------
# Seconds to wait after an over-quota answer (HTTP 204, empty body) before the one retry.
VIRUSTOTAL_QUOTA_WAIT = 60

# --- Intelligence X ------------------------------------------------------------------------
INTELX_MAX_RESULTS = 10000  # "maxresults" of the phonebook search
INTELX_PAGE_SIZE = 1000  # "limit" of each result request
INTELX_SEARCH_TIMEOUT = 5  # "timeout" of the search (seconds, IntelX side)
INTELX_POLL_INTERVAL = 2.0  # seconds between result requests while IntelX answers "not ready yet"
INTELX_MAX_POLLS = 30  # "not ready yet" answers in a row before the run gives up

# --- Recurring schedules in scrapyd (`trawl schedule`, docs/schedules.md) -----------------------
SCRAPYD_URL = "http://localhost:6800"  # the scrapyd `trawl schedule` talks to (--url)
SCRAPYD_PROJECT = "trawl"  # its project name there, as deployed by scrapyd-deploy (--project)
