"""What every hook receives about the crawl it is working for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pluggy
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from trawl.pipeline.filters import FilterConfig
    from trawl.sources.target import Target
    from trawl.stores.contract import WritingStore


@dataclass(eq=False)
class RunContext:
    """One crawl's view for plugins: its source's inputs, settings, stats and state.

    Plugins are modules shared by every crawl in the process, so whatever a
    plugin remembers during a run lives in :attr:`state`, keyed by the plugin.

    What a plugin reads about the run (the domain, the filters, ``new_only``)
    is in :attr:`inputs`, not on the spider: the source hands it over once
    (``Source.run_inputs``), so a hook for one record kind never depends on
    the attributes of a spider class of that kind, and a source of another
    kind carries its own inputs the same way.
    """

    crawler: Crawler
    spider: Spider
    run_id: str
    plugins: pluggy.PluginManager
    state: dict[str, Any] = field(default_factory=dict)
    #: The invocation this run is part of: ``scrapy crawl all`` runs one crawl per
    #: source under one job; a single-source crawl is a job of its own (its run id).
    job_id: str = ""
    #: The store this crawl writes to (``None``: exports only).
    store: WritingStore | None = None
    #: Pages this run stored before it was stopped (page key -> upstream rows):
    #: filled from the store's page ledger when a resumed crawl opens; spiders skip them.
    done_pages: dict[str, int] = field(default_factory=dict)
    #: What the source's arguments say, parsed and checked, by name: what plugins read.
    #: A URL source gives ``target``, ``filters`` and ``new_only`` (:class:`trawl.sources.base.SourceSpider`).
    inputs: dict[str, Any] = field(default_factory=dict)
    #: A crawler that joined another worker's spread run (trawl.distributed.spreadsched): it writes
    #: batches under that run's id, and the run's record (its start, end and stats) is the owner's.
    joined: bool = False

    @property
    def settings(self) -> BaseSettings:
        return self.crawler.settings

    @property
    def stats(self) -> StatsCollector:
        assert self.crawler.stats is not None
        return self.crawler.stats

    @property
    def source(self) -> str:
        return self.spider.name

    @property
    def target(self) -> Target | None:
        """The validated domain and scope, for sources that take one (URL sources)."""
        return self.inputs.get("target")

    @property
    def filters(self) -> FilterConfig | None:
        """The waymore filters of a URL source's run; ``None`` for other kinds."""
        return self.inputs.get("filters")
