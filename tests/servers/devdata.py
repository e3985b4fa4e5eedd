"""One generated dataset of a domain's URLs, split across the sources with overlap, as in reality.

Each URL is first reported by one source (weights ``PRIMARY``) and, with
probability ``overlap``, by one to three others too (weights ``ALSO``): by
default 40% of the URLs are known to two sources or more. Each source's share
comes in its own wire shape, ready for its fake server: Wayback captures (1-4 a
URL, some with an explicit default port, statuses and revisits mixed), Common
Crawl records in 1 to ``crawls`` crawl indexes, OTX URLs, urlscan results,
VirusTotal report rows (and the report's subdomains, which the spider reads as
``http://host/``), IntelX phonebook selectors and GhostArchive search entries.

Used by ``bench/bench_sources.py`` (four sources, 200,000 URLs) and by the
dev server (``python -m tests.servers``). A given ``(n_urls, overlap, crawls,
seed, sources)`` always gives the same dataset; adding a source to the list
does not change the random draws of a run without it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, TypeVar

from tests.servers.commoncrawl import cc_record, collinfo_entry
from tests.servers.ia_cdx import Capture, _host_key, _path_key
from tests.servers.otx import OtxUrl
from tests.servers.urlscan import make_result
from trawl.records.canonical import canonicalize, host_of
from trawl.sources.target import parse_target

DOMAIN = "example.com"
SOURCES = ("wayback", "commoncrawl", "otx", "urlscan", "virustotal", "intelx", "ghostarchive")
#: Which source first reports a URL, and how likely each is to report it too.
PRIMARY = {
    "wayback": 0.52,
    "commoncrawl": 0.24,
    "otx": 0.17,
    "urlscan": 0.07,
    "virustotal": 0.04,
    "intelx": 0.03,
    "ghostarchive": 0.01,
}
ALSO = {
    "wayback": 4.0,
    "commoncrawl": 3.0,
    "otx": 2.0,
    "urlscan": 0.7,
    "virustotal": 1.0,
    "intelx": 0.8,
    "ghostarchive": 0.3,
}
#: IntelX's phonebook returns at most this many selectors (``INTELX_MAX_RESULTS``'s default):
#: past it, a URL is not given to IntelX.
INTELX_MAX_RESULTS = 10_000
CRAWL_IDS = ("CC-MAIN-2025-33", "CC-MAIN-2025-26", "CC-MAIN-2025-21", "CC-MAIN-2025-18", "CC-MAIN-2025-13")
HOSTS = ("", "www.", "www.", "blog.", "shop.", "api.", "m.", "docs.")
SECTIONS = ("news", "blog", "products", "about", "support", "docs", "en/us", "static")
SLUGS = ("index", "welcome", "contact", "pricing", "release-notes", "faq", "team", "careers")
#: (path template, mime type); already in canonical form.
KINDS = (
    ("/{sec}/{slug}-{i}.html", "text/html"),
    ("/{sec}/{slug}-{i}.html", "text/html"),
    ("/{sec}/{i}/", "text/html"),
    ("/{sec}/{slug}-{i}", "text/html"),
    ("/assets/js/app.{i:x}.js", "application/javascript"),
    ("/img/{sec}/photo_{i}.jpg", "image/jpeg"),
    ("/api/v1/items?id={i}", "application/json"),
    ("/search?q=term{i}&page=2", "text/html"),
    ("/downloads/guide-{i}.pdf", "application/pdf"),
)
T = TypeVar("T")


@dataclass
class Dataset:
    sources: tuple[str, ...] = SOURCES
    domain: str = DOMAIN
    #: Canonical URL -> the sources that report it.
    sources_of: dict[str, frozenset[str]] = field(default_factory=dict)
    wayback: list[Capture] = field(default_factory=list)
    commoncrawl: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    otx: list[OtxUrl] = field(default_factory=list)
    urlscan: list[dict[str, Any]] = field(default_factory=list)
    #: VirusTotal's report rows: ``(url, "YYYY-MM-DD hh:mm:ss", detected)``.
    virustotal: list[tuple[str, str, bool]] = field(default_factory=list)
    #: The report's ``subdomains``: the hosts of its URLs.
    virustotal_subdomains: list[str] = field(default_factory=list)
    intelx: list[str] = field(default_factory=list)
    ghostarchive: list[str] = field(default_factory=list)
    #: Every URL as a server spells it (default ports and all).
    served: list[str] = field(default_factory=list)

    def per_source(self) -> dict[str, int]:
        return {s: sum(1 for found in self.sources_of.values() if s in found) for s in self.sources}

    def collinfo(self) -> list[dict[str, str]]:
        """``collinfo.json`` for the crawls the Common Crawl share is in, newest first."""
        return [
            collinfo_entry(c, f"2025-0{1 + i}-01T00:00:00", f"2025-0{1 + i}-14T00:00:00")
            for i, c in enumerate(self.commoncrawl)
        ]


class _Clock:
    """Random 14-digit timestamps between two years, without a datetime per call."""

    def __init__(self, rng: random.Random, first_year: int, last_year: int) -> None:
        first = dt.date(first_year, 1, 1)
        days = (dt.date(last_year, 12, 31) - first).days + 1
        self.days = [(first + dt.timedelta(days=d)).strftime("%Y%m%d") for d in range(days)]
        self.rng = rng

    def cdx(self) -> str:
        """``20200131235959``"""
        r = self.rng.getrandbits(32)
        second = r % 86400
        hms = f"{second // 3600:02d}{second // 60 % 60:02d}{second % 60:02d}"
        return self.days[(r >> 17) % len(self.days)] + hms

    def iso(self, sep: str = "T") -> str:
        """``2020-01-31T23:59:59``"""
        t = self.cdx()
        return f"{t[:4]}-{t[4:6]}-{t[6:8]}{sep}{t[8:10]}:{t[10:12]}:{t[12:]}"


def _pick(rng: random.Random, choices: Sequence[T], cumulative: Sequence[float]) -> T:
    return choices[bisect.bisect(cumulative, rng.random() * cumulative[-1])]


def _sources(
    rng: random.Random, overlap: float, sources: Sequence[str], primary: Sequence[float]
) -> frozenset[str]:
    first = _pick(rng, sources, primary)
    chosen = {first}
    if rng.random() < overlap and len(sources) > 1:
        others = [s for s in sources if s != first]
        weights = list(accumulate(ALSO[s] for s in others))
        extra = min(_pick(rng, (1, 2, 3), (0.65, 0.92, 1.0)), len(others))
        while len(chosen) < 1 + extra:
            chosen.add(_pick(rng, others, weights))
    return frozenset(chosen)


_CAPTURES = (1, 2, 3, 4), (0.5, 0.75, 0.9, 1.0)
_IA_STATUS = ("200", "301", "404", "-"), (0.85, 0.91, 0.97, 1.0)
_CC_STATUS = ("200", "301", "404"), (0.9, 0.95, 1.0)


def build_dataset(
    n_urls: int,
    overlap: float = 0.4,
    crawls: int = 1,
    seed: int = 0,
    sources: Sequence[str] = SOURCES,
    domain: str = DOMAIN,
) -> Dataset:
    """``n_urls`` distinct canonical URLs of ``domain``, each given to one of ``sources`` or
    (``overlap``) more.

    Wayback has 1-4 captures a URL, some with an explicit default port; Common
    Crawl lists a URL in 1 to ``crawls`` crawl indexes; the others once.
    """
    unknown = set(sources) - set(SOURCES)
    if unknown or not sources:
        raise ValueError(f"unknown sources: {sorted(unknown)}" if unknown else "no sources")
    sources = tuple(s for s in SOURCES if s in sources)
    rng = random.Random(seed)
    crawl_ids = CRAWL_IDS[:crawls]
    data = Dataset(sources=sources, domain=domain, commoncrawl={crawl: [] for crawl in crawl_ids})
    archive, common, otx, scans = (
        _Clock(rng, 1998, 2024),
        _Clock(rng, 2025, 2025),
        _Clock(rng, 2017, 2024),
        _Clock(rng, 2019, 2024),
    )
    primary = list(accumulate(PRIMARY[s] for s in sources))
    served = data.served.append
    vt_hosts: set[str] = set()
    for i in range(n_urls):
        host = HOSTS[rng.randrange(len(HOSTS))] + domain
        template, mime = KINDS[rng.randrange(len(KINDS))]
        path = template.format(sec=SECTIONS[i % len(SECTIONS)], slug=SLUGS[(i >> 3) % len(SLUGS)], i=i)
        scheme = "https" if rng.random() < 0.7 else "http"
        url = f"{scheme}://{host}{path}"
        found = _sources(rng, overlap, sources, primary)
        if "intelx" in found and len(data.intelx) >= INTELX_MAX_RESULTS:
            found = found - {"intelx"} or frozenset({sources[0]})
        data.sources_of[url] = found
        urlkey = _host_key(host) + ")" + _path_key(path)
        if "wayback" in found:
            ported = f"{scheme}://{host}:{443 if scheme == 'https' else 80}{path}"
            for _ in range(_pick(rng, *_CAPTURES)):
                original = ported if rng.random() < 0.15 else url
                ts = archive.cdx()
                status = _pick(rng, *_IA_STATUS)
                kind = "warc/revisit" if status == "-" else mime
                digest = hashlib.sha1(f"{original} {ts}".encode()).hexdigest()[:32].upper()
                data.wayback.append(Capture(urlkey, ts, original, kind, status, digest, "1234"))
                served(original)
        if "commoncrawl" in found:
            for crawl in rng.sample(crawl_ids, rng.randint(1, len(crawl_ids))):
                status = _pick(rng, *_CC_STATUS)
                record = cc_record(url, common.cdx(), status=status, mime=mime, crawl=crawl, urlkey=urlkey)
                data.commoncrawl[crawl].append(record)
                served(url)
        if "otx" in found:
            data.otx.append(OtxUrl(url, otx.iso(), rng.choice((200, 200, 200, 404, 0))))
            served(url)
        if "urlscan" in found:
            data.urlscan.append(make_result(url, scans.iso() + ".000Z"))
            served(url)
        if "virustotal" in found:
            data.virustotal.append((url, scans.iso(" "), i % 5 == 0))
            vt_hosts.add(host)
            served(url)
        if "intelx" in found:
            data.intelx.append(url)
            served(url)
        if "ghostarchive" in found:
            data.ghostarchive.append(url)
            served(url)
    for host in sorted(vt_hosts):  # the report's subdomains: one more URL each
        data.virustotal_subdomains.append(host)
        url = f"http://{host}/"
        data.sources_of[url] = data.sources_of.get(url, frozenset()) | {"virustotal"}
        served(url)
    return data


def expected_urls(data: Dataset, domain: str | None = None) -> set[str]:
    """The canonical, in-scope form of every URL a server hands out."""
    target = parse_target(domain or data.domain)
    urls = {canonicalize(u) for u in data.served}
    return {u for u in urls if u and target.in_scope(host_of(u))}
