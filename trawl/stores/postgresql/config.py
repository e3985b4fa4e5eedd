"""The PostgreSQL store's settings, declared on its class (validated with every other setting)."""

from __future__ import annotations

from trawl.settings_checks import Setting, one_of, seconds

SETTINGS: dict[str, Setting] = {
    "POSTGRES_CONNECT_TIMEOUT": Setting(
        # Ten minutes at most: a server that has not answered by then is down, not slow.
        10,
        seconds(1, maximum=600, whole=True),
        "Seconds to wait for the PostgreSQL server when a store connects",
    ),
    # "off" risks the last few batches on a server crash (never corruption): a bulk load's choice.
    "POSTGRES_SYNCHRONOUS_COMMIT": Setting(
        "on",
        one_of("on", "off", "local", "remote_write", "remote_apply"),
        "PostgreSQL's synchronous_commit for the store's writes",
    ),
    # An hour at most: a server away longer is down, and the task is better back in the queue (a
    # batch's record in trawl_batches, which settles a COMMIT the outage cut, is kept a day).
    "POSTGRES_OUTAGE_MAX": Setting(
        300,
        seconds(0, maximum=3600),
        "Seconds a crawl's store waits for its PostgreSQL server to come back (0: fail at once)",
    ),
}
