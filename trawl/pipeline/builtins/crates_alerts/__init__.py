"""Alerts on the crates.io data: the ``crates_alerts`` plugin.

* :mod:`.rules`: the watch rules file (``CRATES_WATCH_FILE``: a watchlist of crates
  with the events watched, a growth threshold over all crates) and its state file;
* :mod:`.events`: what changed since the last evaluation (each event fires once);
* :mod:`.send`: evaluating against a store, sending through the notifiers.

Evaluated after every run of the ``crates`` source (``-a mode=dump``, ``api``,
``incremental``), in ``trawl_run_finished``: the hook crawl notifications are
sent from, once the crawl has closed and its store holds everything the run
wrote. ``trawl crates watch`` edits the rules; ``trawl crates watch check``
evaluates them without a crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl import hookimpl
from trawl.lazyclasses import lazy_attributes
from trawl.settings_checks import Setting, text

if TYPE_CHECKING:
    from trawl.run.summary import RunSummary

SOURCE = "crates"

# The rules' evaluation (polars, the store), imported on first use: registering costs a read command nothing.
__getattr__ = lazy_attributes(
    __name__, {"check_alerts": "trawl.pipeline.builtins.crates_alerts.send:check_alerts"}
)

settings_declared = {
    "CRATES_WATCH_FILE": Setting(
        "",
        text,
        "the crates alerts' rules (JSON; empty: crates-watch.json in trawl's data directory);"
        " what fired is kept beside it in NAME.state.json",
    ),
}


@hookimpl
def trawl_run_finished(summary: RunSummary) -> None:
    """After a run of the crates source with a store: the rules evaluated, what fired sent.

    A failure here is one WARNING line (:func:`trawl.run.summary.run_finished`): the crawl's
    exit status stays the crawl's.
    """
    settings = summary.settings
    uri = str(settings.get("STORE_URI") or "").strip() if settings is not None else ""
    if not uri or not any(s.source == SOURCE for s in summary.sources):
        return
    from trawl.pipeline.builtins.crates_alerts.send import check_alerts

    check_alerts(settings, uri)


__all__ = ["check_alerts", "settings_declared", "trawl_run_finished"]
