"""Where trawl keeps a user's data by default: ``$XDG_DATA_HOME/trawl`` (``~/.local/share/trawl``).

The default store lives there (``STORE_URI`` in :mod:`trawl.settings`), so that
every run of one user finds the same store whoever starts it and wherever:
``make crawl`` in the checkout, ``trawl crawl`` in any directory, a cron job,
a scrapyd job (whose working directory is scrapyd's, not the user's). A
relative ``sqlite:///trawl.db`` meant a different file for each of those
(docs/scrapyd.md, "Where the store is"). ``TRAWL_STORE_URI`` in the
environment replaces that default, ``-s STORE_URI=...`` replaces both.
"""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """``$XDG_DATA_HOME/trawl``; ``~/.local/share/trawl`` when it is unset, empty or relative (XDG's rule)."""
    base = os.environ.get("XDG_DATA_HOME", "")
    home = Path(base) if base and Path(base).is_absolute() else Path("~/.local/share").expanduser()
    return home / "trawl"


def default_store_uri() -> str:
    """``STORE_URI``'s default: ``$TRAWL_STORE_URI`` if set and not empty, else ``data_dir()/trawl.db``."""
    return os.environ.get("TRAWL_STORE_URI", "").strip() or f"sqlite:///{data_dir() / 'trawl.db'}"
