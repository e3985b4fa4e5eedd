"""trawl: every URL the public record knows for a domain, as Scrapy spiders."""

__version__ = "0.1.0"

from trawl.pluginmanager import hookimpl  # noqa: E402  (the marker plugins import)

__all__ = ["hookimpl", "__version__"]
