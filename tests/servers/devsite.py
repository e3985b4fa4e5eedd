"""The dev server's live website: the dataset's hosts, served under their real names.

:class:`DevSite` answers every host of the dataset's domain (told apart by the
``Host`` header), over plain HTTP and, as :class:`DevTlsSite`, over TLS with a
certificate for ``DOMAIN`` and ``*.DOMAIN``. :class:`DevProxy`, a forward proxy,
is how trawl reaches them: ``GET http://host/...`` goes to the plain server and
``CONNECT host:443`` to the TLS one, for hosts of the domain only (anything
else is a 502: the dev server reaches no other host). Through it
``trawl crawl probe`` and ``trawl crawl live`` run on ``www.example.com``, not on
``127.0.0.1:PORT``, which they refuse as targets.

What the site holds, on every host:

* each dataset URL of that host (:mod:`tests.servers.devdata`): its page, script
  or API answer (:mod:`tests.servers.devpages`); a page links the next three
  URLs of its host, so the links reach all of them; one in 12 is gone (404);
* ``/`` links the host's first ten URLs, the other hosts, the ``/private/``
  area and the calendar; the domain's own ``/`` is a 301 to ``https://www.``;
* ``/robots.txt`` disallows ``/private/`` and names ``/sitemap.xml``, which lists
  the host's first 100 URLs;
* the trap: ``/calendar/YYYY/MM`` links the month before and the month after,
  without end (the live crawl's per-pattern cap stops it);
* the pages the navigation and forms name (``/account/``, ``/search``...); the API
  answers under ``/api/v2/`` (any path), while ``/api/v1/``, which the old
  captures call, is ``410 Gone`` but for the dataset's own URLs;
* ``m.DOMAIN`` is a soft-404 host: any unknown path is a ``200`` "not found" page.
"""

from __future__ import annotations

import hashlib
import ssl
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.servers.certificates import self_signed
from tests.servers.devpages import body_for, mime_of
from tests.servers.forwardproxy import ForwardProxy
from tests.servers.local import Answer, LocalServer, SeenRequest

SERVER = "TrawlDevSite/1.0"
#: Links from a page to the next URLs of its host; from a home page to the first ones.
NEXT_LINKS, HOME_LINKS, SITEMAP_URLS = 3, 10, 100
#: One URL in this many answers 404 (gone since the archives saw it).
GONE_EVERY = 12
HTML = {"Content-Type": "text/html; charset=utf-8", "Server": SERVER}
#: The pages every page's navigation and forms name (:func:`tests.servers.devpages.page`).
NAVIGATION = {
    "/account/": "Account",
    "/account/login": "Sign in",
    "/help/contact": "Contact",
    "/search": "Search",
}


def _small_page(title: str, text: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>{text}</p><footer>Example Inc.</footer></body></html>"
    ).encode()


def _gone(path_qs: str) -> bool:
    return int(hashlib.sha1(path_qs.encode()).hexdigest()[:6], 16) % GONE_EVERY == 0


class DevSite(LocalServer):
    """Every host of ``domain`` over plain HTTP; ``urls`` are the dataset's canonical URLs."""

    def __init__(self, domain: str, urls: Iterable[str]) -> None:
        self.domain = domain
        paths: dict[str, set[str]] = defaultdict(set)
        for url in urls:
            parts = urlsplit(url)
            if parts.hostname:
                paths[parts.hostname].add(parts.path + (f"?{parts.query}" if parts.query else ""))
        paths.setdefault(f"www.{domain}", set())
        #: host -> its URLs' path?query, sorted; and each one's place in that list.
        self.paths = {host: sorted(found) for host, found in paths.items()}
        self.places = {host: {p: i for i, p in enumerate(found)} for host, found in self.paths.items()}
        #: Every request: (host, path?query), in arrival order.
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    @property
    def hosts(self) -> list[str]:
        return sorted(self.paths)

    def serves(self, host: str) -> bool:
        return host == self.domain or host.endswith("." + self.domain)

    def answer(self, request: SeenRequest) -> Answer:
        return self.respond(request, "http")

    def respond(self, request: SeenRequest, scheme: str) -> Answer:
        """The answer to ``request`` received over ``scheme`` (``http`` or ``https``)."""
        host = request.headers.get("host", "").split(":")[0].lower()
        with self._lock:
            self.seen.append((host, request.raw_url))
        if not self.serves(host):
            return 421, b"unknown host", {"Content-Type": "text/plain", "Server": SERVER}
        path_qs = request.raw_url
        base = f"{scheme}://{host}"
        if path_qs == "/" and host == self.domain:
            return 301, b"", {"Location": f"https://www.{self.domain}/", "Server": SERVER}
        if path_qs == "/":
            return 200, self._home(host, base), HTML
        if path_qs == "/robots.txt":
            robots = f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n"
            return 200, robots.encode(), {"Content-Type": "text/plain", "Server": SERVER}
        if path_qs == "/sitemap.xml":
            return 200, self._sitemap(host, base), {"Content-Type": "application/xml", "Server": SERVER}
        if path_qs.startswith("/calendar/"):
            return self._calendar(request.path)
        place = self.places.get(host, {}).get(path_qs)
        if place is not None and not _gone(path_qs):
            following = self.paths[host][place + 1 : place + 1 + NEXT_LINKS]
            mime = mime_of(path_qs)
            body = body_for(base + path_qs, mime, self.domain, links=[base + p for p in following])
            ctype = f"{mime}; charset=utf-8" if mime.startswith(("text/", "application/j")) else mime
            return 200, body, {"Content-Type": ctype, "Server": SERVER}
        if path_qs.startswith("/assets/js/") and request.path.endswith(".js"):
            script = body_for(base + path_qs, "application/javascript", self.domain)
            return 200, script, {"Content-Type": "application/javascript", "Server": SERVER}
        if request.path in NAVIGATION:
            return 200, _small_page(NAVIGATION[request.path], "Sign in, search or write to us."), HTML
        if request.path.startswith(("/api/v2/", "/v2/")):
            answer = body_for(base + path_qs, "application/json", self.domain)
            return 200, answer, {"Content-Type": "application/json", "Server": SERVER}
        if request.path.startswith(("/api/v1/", "/v1/")):
            retired = b'{"error":"API v1 was retired in 2016: use /api/v2/"}'
            return 410, retired, {"Content-Type": "application/json", "Server": SERVER}
        if host == f"m.{self.domain}":  # the soft-404 host
            return 200, _small_page("Mobile", f"Sorry, {request.path} is not here any more."), HTML
        return 404, _small_page("Not found", f"The page {request.path} does not exist."), HTML

    def _home(self, host: str, base: str) -> bytes:
        first = [base + p for p in self.paths.get(host, [])[:HOME_LINKS]]
        others = [f"https://{h}/" for h in self.hosts if h != host]
        links = [
            *first,
            *others,
            f"{base}/calendar/2024/01",
            f"{base}/private/admin.html",
            "https://www.iana.org/domains/example",
        ]
        return body_for(f"{base}/", "text/html", self.domain, links=links)

    def _sitemap(self, host: str, base: str) -> bytes:
        locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in self.paths.get(host, [])[:SITEMAP_URLS])
        xml = f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
        return xml.replace("&", "&amp;").encode()

    @staticmethod
    def _calendar(path: str) -> Answer:
        try:
            year, month = (int(p) for p in path.split("/")[2:4])
            if not 1 <= month <= 12:
                raise ValueError(month)
        except ValueError:
            return 404, _small_page("Not found", "No such month."), HTML
        before = (year, month - 1) if month > 1 else (year - 1, 12)
        after = (year, month + 1) if month < 12 else (year + 1, 1)
        links = "".join(f'<a href="/calendar/{y}/{m:02d}">{y}-{m:02d}</a> ' for y, m in (before, after))
        return 200, _small_page(f"Events {year}-{month:02d}", links), HTML


class DevTlsSite(LocalServer):
    """``site``'s hosts over TLS, with a certificate for its domain and ``*.domain``."""

    def __init__(self, site: DevSite) -> None:
        self.site = site

    def answer(self, request: SeenRequest) -> Answer:
        return self.site.respond(request, "https")

    def __enter__(self) -> Any:
        super().__enter__()
        cert, key = make_certificate(self.site.domain, Path(tempfile.mkdtemp(prefix="trawl-dev-tls-")))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        assert self._httpd is not None
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        return self

    @property
    def bound_port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"https://{self.host}:{self.bound_port}"


def make_certificate(domain: str, directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``domain`` and ``*.domain``, valid from a day ago for a year."""
    return self_signed(directory, [domain, f"*.{domain}"])


class DevProxy(ForwardProxy):
    """A forward proxy to :class:`DevSite` (``GET``) and :class:`DevTlsSite` (``CONNECT``), for the
    hosts of ``domain`` only; every request line in :attr:`requests`."""

    def __init__(self, domain: str, web_port: int, tls_port: int) -> None:
        super().__init__(web_port, tls_port)
        self.domain = domain

    @property
    def base_url(self) -> str:
        return self.url

    def serves(self, host: str) -> bool:
        host = host.lower()
        return host == self.domain or host.endswith("." + self.domain)

    def reaches_plain(self, host: str) -> bool:
        return self.serves(host)

    def reaches_tls(self, host: str, port: str) -> bool:
        return self.serves(host) and port == "443"

    def refusal(self, tls: bool) -> str:
        if tls:
            return f"the dev proxy reaches only *.{self.domain}:443 over TLS"
        return f"the dev proxy reaches only http://*.{self.domain}"
