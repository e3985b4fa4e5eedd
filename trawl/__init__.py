"""trawl: every URL the public record knows for a domain, as Scrapy spiders.

``from trawl import hookimpl`` is all a plugin needs from trawl. Importing this
package stays light (pluggy only, no Scrapy): plugin packages and tools that
only inspect hooks import it.
"""

__version__ = "0.1.0"

from trawl.hookspecs import hookimpl, hookspec  # noqa: E402

__all__ = ["hookimpl", "hookspec", "__version__"]
