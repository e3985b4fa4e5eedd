"""What every trawl source spider shares, and what the URL sources add on top.

:class:`Source` is any record kind's source: its own arguments, a base URL,
API keys, a request budget, resume, failures. It takes no domain: a crates.io
or DNS feed has none. :class:`SourceSpider` is the URL source every built-in
is: a domain and its scope (``-a domain=``, ``-a subs=``), the waymore
filters and ``-a new_only=``. Either hands the pipeline what its plugins read
(:meth:`Source.run_inputs`, carried by the run context), never its attributes.

Arguments and settings (:mod:`trawl.validation`) are validated twice on
purpose: by ``scrapy crawl`` before the reactor starts (so bad input is one
line and exit status 2, not a traceback), and again when the spider is built,
for runs that bypass the command (scrapyd, ``CrawlerProcess``): raising there
stops the crawler before its first request, so a bad politeness setting cannot
let requests out ungated.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy

from trawl.common import statkeys
from trawl.common.counts import counted
from trawl.common.remotecontrol import defer_remote_control
from trawl.common.startupheap import freeze_startup_objects
from trawl.common.stopping import interruptible
from trawl.common.tally import Tally
from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.filters import FilterConfig, build_filter_config
from trawl.politeness.gate import sleep
from trawl.settings_checks import Setting, apply_defaults, http_url, read, text
from trawl.sources.argsets import (
    CONFIG_ARGUMENT,
    FILTER_ARGUMENT_HELP,
    FILTER_ARGUMENTS,
    SOURCE_ARGUMENT_HELP,
    SOURCE_ARGUMENTS,
    URL_ARGUMENT_HELP,
    URL_ARGUMENTS,
)
from trawl.sources.arguments import parse_bool, parse_int
from trawl.sources.keys import KeyRing, read_keys
from trawl.sources.limits import apply_source_limits, check_source_limits
from trawl.sources.outcomes import Outcomes
from trawl.sources.target import Target, parse_target
from trawl.validation import run_settings, validate_settings


class Source(Outcomes, scrapy.Spider):
    """Base class of every source spider, whatever record kind it yields.

    It knows nothing of domains or URLs: a source of another kind (a DNS or
    crates.io feed) subclasses it, declares its ``extra_arguments``, reads them
    in :meth:`configure_kind` and hands what its plugins need to the run
    context in :meth:`run_inputs`.

    A source declares its defaults on the class, in one place: the politeness
    ones below (``RATE_LIMITS``, ``SOURCE_CONCURRENCY``, ``SOURCE_DOWNLOAD_TIMEOUT``,
    ``SOURCE_DOWNLOAD_MAXSIZE`` and ``_WARNSIZE`` override them per source), its base URL and
    key settings, and any setting of its own in :attr:`settings_declared`
    (:mod:`trawl.settings_checks`). :meth:`declared_settings` is what
    validation, the defaults and the docs test see.
    """

    #: Requests per period the service tolerates (``"60/60s"``); ``None``: no budget.
    default_rate_limit: ClassVar[str | None] = None
    #: Requests in flight at once; ``None``: ``CONCURRENT_REQUESTS_PER_DOMAIN``.
    default_concurrency: ClassVar[int | None] = None
    #: Seconds a response may take (this source's ``DOWNLOAD_TIMEOUT``); ``None``: Scrapy's.
    default_download_timeout: ClassVar[float | None] = None
    #: Bytes an answer may have, decompressed (its ``DOWNLOAD_MAXSIZE``); ``None``: the project's.
    default_download_maxsize: ClassVar[int | None] = None
    #: Bytes past which an answer is worth a warning (its ``DOWNLOAD_WARNSIZE``); ``None``: the project's.
    default_download_warnsize: ClassVar[int | None] = None
    #: Setting that holds this source's base URL (e.g. ``WAYBACK_BASE_URL``).
    base_url_setting: ClassVar[str] = ""
    #: Its default (``https://web.archive.org``).
    default_base_url: ClassVar[str] = ""
    #: This source's own settings: ``{NAME: Setting(default, check, doc)}``; a subclass adds to its parents'.
    settings_declared: ClassVar[Mapping[str, Setting]] = {}
    #: Extra ``-a`` arguments this source accepts: their names, or each name with the one line
    #: ``trawl list`` says of it (``{"cc_indexes": "the newest N crawl indexes"}``).
    extra_arguments: ClassVar[frozenset[str] | Mapping[str, str]] = frozenset()
    #: What the finish line counts (``Tally(FILES, "file", "stored")`` -> ``55 files stored``);
    #: empty: a URL source's pages and URLs, another kind's records by kind (trawl.run.finishline).
    finish_counts: ClassVar[tuple[Tally, ...]] = ()
    #: Setting / environment variable holding this source's API key(s), if any.
    api_key_setting: ClassVar[str] = ""
    #: Without a key the source is skipped (one warning line), not failed.
    api_key_required: ClassVar[bool] = False
    #: ``crawl all`` runs it unless the user names other sources; False: only when named
    #: (``-a sources=``): a source that is not about a domain, such as the crates.io dump.
    in_crawl_all: ClassVar[bool] = True
    #: Its page requests are independent (their state in their meta, no callback copying a
    #: response's meta into a new request): ``trawl worker`` may spread them over every worker
    #: (trawl.distributed.spreadsched). False: the source's run stays whole on one worker.
    spreadable: ClassVar[bool] = False

    limit_requests: int
    base_url: str
    keys: KeyRing
    #: Why this source will not run (e.g. no API key); ``None`` if it will.
    skip_reason: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, Any] = {k: v for k, v in kwargs.items() if k not in ("name", "_job")}

    @classmethod
    def declared_settings(cls) -> dict[str, Setting]:
        """Every setting this source reads, with its default and check: the base URL and
        key settings, then the ``settings_declared`` of each class from the base down."""
        declared: dict[str, Setting] = {}
        if cls.base_url_setting:
            # A source without a default base URL (a plugin's, for a service with no
            # public endpoint) needs one only when it runs: _read_base_url says so then.
            # Checking the empty default for every run made any crawl with that plugin
            # installed fail inside the reactor.
            declared[cls.base_url_setting] = Setting(
                cls.default_base_url,
                http_url(optional=not cls.default_base_url),
                f"where the {cls.name} source is queried",
            )
        if cls.api_key_setting:
            declared[cls.api_key_setting] = Setting(
                "", text, f"the {cls.name} API key (or the environment variable of this name)"
            )
            # trawl.sources.keys reads NAMES before NAME: a key ring, used in turn.
            declared[cls.api_key_setting + "S"] = Setting(
                "", text, f"several {cls.name} API keys, comma-separated, used in turn"
            )
        for klass in reversed(cls.__mro__):
            declared.update(vars(klass).get("settings_declared", {}))
        return declared

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        """Every component's declared defaults, and this source's download limits.

        The defaults (:func:`trawl.settings_checks.apply_defaults`) matter to runs
        that bypass the crawl command, which applies them itself (scrapyd, a
        script's ``CrawlerProcess``). This source's ``SOURCE_DOWNLOAD_TIMEOUT``,
        ``SOURCE_DOWNLOAD_MAXSIZE`` and ``SOURCE_DOWNLOAD_WARNSIZE``, else its
        class defaults, become its ``DOWNLOAD_*`` settings (:mod:`trawl.sources.limits`).

        A CDX page can take a minute to come; an OTX or urlscan page that has not
        come in 30 s will not (4 x 120 s waits on a server that never
        answered). A CDX page is tens of MB at most, an OTX page a few hundred KB
        (an endless page grew to Scrapy's 1 GiB default). A
        ``DOWNLOAD_TIMEOUT`` (or ``_MAXSIZE``...) given on the command line wins
        over the per-source defaults, unless the per-source setting was given too.
        """
        super().update_settings(settings)
        defer_remote_control(settings)
        apply_defaults(settings, cls.declared_settings())
        try:
            apply_defaults(settings, run_settings(settings))
        except TrawlError:
            pass  # a bad TRAWL_PLUGINS: from_crawler's validate_settings says so in one line
        apply_source_limits(cls, settings)

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Source:
        validate_settings(crawler.settings)
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.configure(crawler.settings, spider.arguments)
        crawler.signals.connect(freeze_startup_objects, signal=scrapy.signals.engine_started)
        return spider

    # --- arguments ---------------------------------------------------------------------

    @classmethod
    def check_arguments(cls, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        """Raise :class:`TrawlUsageError` if the arguments (or this source's own limits) cannot work."""
        check_source_limits(cls, settings)
        probe = cls.__new__(cls)
        probe.configure(settings, arguments)

    @classmethod
    def accepted_arguments(cls) -> frozenset[str]:
        """The ``-a`` names this source takes (lower case): what ``crawl all`` hands it."""
        keyed = frozenset({CONFIG_ARGUMENT}) if cls.api_key_setting else frozenset()
        return SOURCE_ARGUMENTS | keyed | frozenset(cls.extra_arguments)

    @classmethod
    def described_arguments(cls) -> dict[str, str]:
        """Each ``-a`` name this source takes with its one line (``trawl list``); ``""``: none declared.

        A name a source declares without a line gets the common one of the same name (``domain``).
        """
        lines = {**SOURCE_ARGUMENT_HELP, **URL_ARGUMENT_HELP, **FILTER_ARGUMENT_HELP}
        for klass in reversed(cls.__mro__):
            declared = vars(klass).get("extra_arguments")
            if isinstance(declared, Mapping):
                lines.update(declared)
        return {name: lines.get(name, "") for name in sorted(cls.accepted_arguments())}

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        known = self.accepted_arguments()
        unknown = sorted(k for k in arguments if k.lower() not in known)
        if unknown:
            raise TrawlUsageError(
                f"unknown argument for the {self.name} source: -a {unknown[0]}= "
                f"(known: {', '.join(sorted(known))})"
            )
        self.configure_kind(settings, arguments)
        self.limit_requests = parse_int("limit_requests", arguments.get("limit_requests", 0))
        self.check_only = parse_bool("check_only", arguments.get("check_only", False))
        if self.base_url_setting:
            self.base_url = self._read_base_url(settings)
        config = arguments.get("config") or None  # waymore's config.yml holds API keys too
        self.keys = KeyRing(read_keys(settings, self.api_key_setting, config) if self.api_key_setting else [])
        self.skip_reason = None
        if self.api_key_required and not self.keys.keys:
            self.skip_reason = f"no API key (set {self.api_key_setting} as a setting or environment variable)"

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        """Read the arguments of this source's record kind (the URL source: domain, filters);
        raise :class:`TrawlUsageError` for a bad one. Called before the common ones are read."""

    def run_inputs(self) -> dict[str, Any]:
        """What this run's plugins read, by name: the pipeline puts it in ``RunContext.inputs``.

        Plugins read the run context, never the spider: a hook that works on a
        record kind finds there what that kind's source parsed, whichever spider
        class (or test double) produced it.
        """
        return {"check_only": self.check_only}

    def setting(self, settings: Mapping[str, Any], name: str) -> Any:
        """This source's declared setting ``name``: its value, checked, else its default.

        Validation has refused a bad value before any spider exists; checking it
        again here keeps a caller that skipped validation from a traceback.
        """
        declared = self.declared_settings()[name]
        if settings.get(name) is None:
            return declared.default
        declared.check(settings, name, None)  # type: ignore[arg-type]
        return settings.get(name)

    def _read_base_url(self, settings: Mapping[str, Any]) -> str:
        raw = str(read(settings, self.declared_settings(), self.base_url_setting) or "").strip()
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise TrawlUsageError(f"{self.base_url_setting} must be an http(s) URL, got {raw!r}")
        return raw.rstrip("/")

    def page_done(self, key: str) -> int | None:
        """Rows of a page this run stored before it was stopped (resume), or ``None``.

        The store's page ledger is read once at the start (``run_context`` is set
        by the pipeline); pages are keyed as the spider names them in batches.
        """
        context = getattr(self, "run_context", None)
        if context is None:
            return None
        rows = context.done_pages.get(key)
        if rows is not None:
            self.crawler.stats.inc_value(statkeys.PAGES_RESUMED)
        return rows

    def should_skip(self) -> bool:
        """Log once and record why this source does nothing, if it cannot run."""
        if self.skip_reason is None:
            return False
        self.logger.warning("%s: skipped: %s", self.name, self.skip_reason)
        self.crawler.stats.set_value(statkeys.SKIPPED, self.skip_reason)
        return True

    # --- request budget and waiting -----------------------------------------------------

    page_requests: int = 0
    limit_logged: bool = False

    def take_request(self) -> bool:
        """Count one data request against ``limit_requests``; False once it is spent.

        The first refusal says, once, that the results are partial by request.
        """
        if self.limit_requests and self.page_requests >= self.limit_requests:
            if not self.limit_logged:
                self.limit_logged = True
                self.logger.warning(
                    "%s: stopping at limit_requests=%d page requests; the results are partial",
                    self.name,
                    self.limit_requests,
                )
                self.crawler.stats.set_value(statkeys.LIMITED, True)
            return False
        self.page_requests += 1
        return True

    async def wait(self, seconds: float) -> bool:
        """Wait without blocking the reactor (from an async callback): other
        requests and the progress line go on meanwhile. The wait ends early when
        the crawl is stopping (a signal, a store error: trawl.common.stopping);
        False then, and the caller gives up what it waited for."""
        if seconds <= 0:
            return True
        return await interruptible(getattr(self, "crawler", None), sleep(seconds))

    # --- check only --------------------------------------------------------------------

    def report_estimate(self, requests: int) -> None:
        """In ``check_only`` mode: add to the requests a full run would make.

        Call it from the callbacks of the cheap counting requests (CDX
        ``showNumPages``, OTX ``full_size``...); the summary turns the total into
        an estimated duration under the source's rate limit.
        """
        self.crawler.stats.inc_value(statkeys.ESTIMATE_REQUESTS, requests)

    # --- outcomes (the rest in trawl.sources.outcomes) ---------------------------------

    def closed(self, reason: str) -> None:
        """Scrapy calls it once the source is done: what it read with a fault is said once, not per line."""
        undecodable = self.crawler.stats.get_value(statkeys.UNDECODABLE_LINES, 0)
        if undecodable:
            self.logger.warning(
                "%s: %s had bytes that are not UTF-8; read with U+FFFD (%%EF%%BF%%BD) in their place",
                self.name,
                counted(undecodable, "upstream line"),
            )


class SourceSpider(Source):
    """Base class of the spiders that collect URLs for a domain from one source.

    On top of :class:`Source`: the domain and its scope, the waymore filters
    (sent upstream where a source can filter, checked again by the
    ``url_filter`` plugin) and ``-a new_only=``, which the ``url_stats`` plugin
    applies to the exports.
    """

    target: Target
    filters: FilterConfig
    new_only: bool = False
    #: ``-a allow_private=true`` may make the target an address, ``localhost`` or ``host:port``
    #: (a source that talks to the target itself: a lab); the archives index names only.
    private_targets: ClassVar[bool] = False

    @classmethod
    def accepted_arguments(cls) -> frozenset[str]:
        return super().accepted_arguments() | URL_ARGUMENTS | FILTER_ARGUMENTS

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        subs = parse_bool("subs", arguments.get("subs", True))
        private = (
            parse_bool("allow_private", arguments.get("allow_private", False))
            if self.private_targets
            else None
        )
        self.target = parse_target(arguments.get("domain"), include_subdomains=subs, allow_private=private)
        self.filters = build_filter_config(settings, arguments)
        self.new_only = parse_bool("new_only", arguments.get("new_only", False))
        if self.new_only and not str(settings.get("STORE_URI") or "").strip():
            raise TrawlUsageError(
                "-a new_only=true exports the URLs the store did not know: it needs a store (STORE_URI)"
            )

    def run_inputs(self) -> dict[str, Any]:
        return {
            **super().run_inputs(),
            "target": self.target,
            "filters": self.filters,
            "new_only": self.new_only,
        }

    def log_target(self) -> None:
        for note in self.target.notes:
            self.logger.info("%s: %s", self.name, note)


logger = logging.getLogger(__name__)
