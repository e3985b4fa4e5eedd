"""Every duration setting has a documented upper bound.

Before, ``NOTIFY_TIMEOUT=1e9`` was accepted, and kept a process alive for as
long as a hanging receiver held its connection; so was any other wait of a
billion seconds. Now a value above a duration's bound is refused before
anything starts: one ``trawl: error:`` line naming the setting and its bound,
exit status 2, nothing sent. ``inf`` and ``nan`` are refused too, and every
bound is written in docs/settings.md with its reason.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.conftest import crawl_args, run_scrapy
from tests.helpers.settings_doc import SETTINGS_MD
from tests.helpers.validation import QUIET, SOURCES, refused, trawl_defaults
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.receiver import FakeReceiver
from trawl.errors import TrawlUsageError
from trawl.settings_checks import Duration, bound_text
from trawl.validation import DurationBySource, all_checks, validate_settings

#: Names that say "a number of seconds": each must have a bounded check.
DURATION_NAME = re.compile(r"TIMEOUT|_WAIT|PAUSE|BACKOFF|DELAY|INTERVAL|_TTL|SECONDS|STALL_AFTER")


def durations() -> dict[str, Duration]:
    checks = all_checks(trawl_defaults())
    return {name: check for name, check in checks.items() if isinstance(check, Duration)}


def test_every_duration_setting_has_a_bounded_check() -> None:
    checks = all_checks(trawl_defaults())
    named = sorted(name for name in checks if DURATION_NAME.search(name))
    assert len(named) >= 20, named
    assert [name for name in named if not isinstance(checks[name], Duration)] == []
    for name, check in durations().items():
        assert math.isfinite(check.maximum) and check.maximum > 0, name


def as_set(name: str, check: Duration, value: object) -> object:
    return json.dumps({"wayback": value}) if isinstance(check, DurationBySource) else value


def refusal(name: str, value: object) -> str:
    settings = trawl_defaults()
    settings.set(name, value, priority="cmdline")
    with pytest.raises(TrawlUsageError) as raised:
        validate_settings(settings, sources=SOURCES, names=[name])
    return str(raised.value)


@pytest.mark.parametrize("name", sorted(durations()))
def test_a_duration_above_its_bound_inf_or_nan_is_refused(name: str) -> None:
    check = durations()[name]
    at_most = check.maximum
    settings = trawl_defaults()
    settings.set(name, as_set(name, check, int(at_most) if check.whole else at_most), priority="cmdline")
    validate_settings(settings, sources=SOURCES, names=[name])  # the bound itself is accepted

    above = as_set(name, check, int(at_most) + 1 if check.whole else at_most * 1.5 + 1)
    message = refusal(name, above)
    assert name in message and "\n" not in message
    if check.whole:
        assert f"to {int(at_most)}" in message, message
    else:
        assert f"must be at most {bound_text(at_most, 'seconds')}, got" in message, message
    for value in ("inf", "nan", "-inf", "1e999"):
        assert name in refusal(name, as_set(name, check, value))


@pytest.mark.parametrize("name", sorted(durations()))
def test_each_bound_is_documented(name: str) -> None:
    number = bound_text(durations()[name].maximum)
    lines = [line for line in SETTINGS_MD.splitlines() if f"`{name}" in line]
    assert any(f"at most {number}" in line.lower() for line in lines), (name, number, lines)


CASES = [
    ("NOTIFY_TIMEOUT=1e9", "NOTIFY_TIMEOUT must be at most 300 seconds (5 minutes), got '1e9'"),
    (
        'SOURCE_DOWNLOAD_TIMEOUT={"wayback": 7200}',
        "SOURCE_DOWNLOAD_TIMEOUT['wayback'] must be at most 3600 seconds (1 hour), got 7200",
    ),
    (
        'RATE_LIMITS={"wayback": "1/48h"}',
        "RATE_LIMITS['wayback'] has a period of at most 86400 seconds (1 day), got '1/48h'",
    ),
    ("COMMONCRAWL_COLLINFO_TTL=1e12", "COMMONCRAWL_COLLINFO_TTL must be at most 2592000 seconds (30 days)"),
]


@pytest.mark.parametrize(("setting", "message"), CASES, ids=[s for s, _ in CASES])
def test_a_crawl_with_a_wait_beyond_its_bound_is_refused_in_one_line(
    workdir: Path, setting: str, message: str
) -> None:
    name, _, value = setting.partition("=")
    with (
        FakeCdxServer([make_capture("https://example.com/a", "20200101000000")]) as server,
        FakeReceiver() as hook,
    ):
        settings = {"WAYBACK_BASE_URL": server.base_url, "NOTIFY_URLS": f"{hook.base_url}/h", **QUIET}
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", {**settings, name: value}))
        refused(result, server, message)
    assert hook.requests == []
