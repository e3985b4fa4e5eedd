"""The pages ``trawl crawl live`` walks on the test site (tests/servers/website.py serves them).

* ``example.com`` (:data:`APEX`): ``/`` redirects to ``http://shop.example.com/``
  (the root that redirects to a subdomain); anything else is a 404;
* ``shop.example.com`` (:data:`SHOP`): a home page with relative, absolute and
  out-of-scope links, a GET and a POST form, an inline script, a script file
  whose endpoints only a JS reader finds, a robots.txt that disallows
  ``/private/`` and names the sitemap, a sitemap with a page nothing links to,
  a PDF (read no further than its headers), a slow page, a redirect loop
  (``/loop`` -> ``/loop2`` -> ``/loop``), a calendar that links each month to
  the next and the one before, and a cart whose every page links a new
  session id (the traps); ``/orphan.html`` is linked from nowhere (a stored URL
  seeds it: ``-a seed=store``);
* ``api.example.com``: JSON at ``/v2/items`` (named in the script only).
"""

from __future__ import annotations

import re

APEX = "example.com"
SHOP = "shop.example.com"
API = "api.example.com"
SERVER = "TrawlTestSite/1.0"
PDF_BYTES = 300_000
HTML = {"Content-Type": "text/html; charset=utf-8", "Server": SERVER}
JSON = {"Content-Type": "application/json", "Server": SERVER}

Answer = tuple[int, bytes, dict[str, str]]


def html(title: str, body: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>{body}"
        "<footer>Shop of the example company, all rights reserved.</footer></body></html>"
    ).encode()


HOME = html(
    "Shop home",
    """<p>Widgets and gadgets for every room of the house.</p>
<a href="about.html">About</a> <a href="/products/">Products</a>
<a href="http://shop.example.com/contact">Contact</a> <a href="http://www.example.com/admin/">Admin</a>
<a href="https://secure.example.com/">Secure</a> <a href="http://soft.example.com/about">Soft</a>
<a href="http://soft.example.com/gone">Gone</a> <a href="http://www.iana.org/domains/example">IANA</a>
<a href="mailto:info@example.com">Mail</a> <a href="javascript:void(0)">Nothing</a> <a href="#top">Top</a>
<a href="/private/secret.html">Secret</a> <a href="/files/report.pdf">Report</a> <a href="/slow">Slow</a>
<a href="/loop">Loop</a> <a href="/calendar/2024/01">Calendar</a> <a href="/cart?sid=1">Cart</a>
<script src="/static/app.js"></script><script src="https://cdn.othersite.net/lib.js"></script>
<script>var status = "/api/v1/status";</script>
<form action="/search" method="get"><input name="q"></form>
<form action="/contact/send" method="post"><input name="message"></form>""",
)
APP_JS = b"""// the shop's script
fetch("/api/v1/users").then(r => r.json());
const orders = '/api/v1/orders?status=open';
const items = "http://api.example.com/v2/items";
"""
ROBOTS = b"User-agent: *\nDisallow: /private/\nSitemap: http://shop.example.com/sitemap.xml\n"
SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://shop.example.com/sitemap-only.html</loc></url>
<url><loc>http://shop.example.com/products/</loc></url>
</urlset>
"""

SHOP_PAGES: dict[str, Answer] = {
    "/": (200, HOME, HTML),
    "/about.html": (
        200,
        html(
            "About the shop",
            '<a href="products/">Products</a> <a href="./">Home</a> <a href="../about.html">Us</a>',
        ),
        HTML,
    ),
    "/products/": (
        200,
        html(
            "Products",
            '<a href="item?id=1">One</a> <a href="item?id=2#reviews">Two</a>'
            ' <a href="HTTP://SHOP.EXAMPLE.COM/products/item?id=1">One again</a>'
            ' <a href="https://twitter.com/example">Follow us</a>',
        ),
        HTML,
    ),
    "/products/item?id=1": (200, html("Red widget", "<p>A red widget with a blue handle.</p>"), HTML),
    "/products/item?id=2": (200, html("Green gadget", "<p>A green gadget for the kitchen.</p>"), HTML),
    "/contact": (200, html("Contact us", "<p>Write to us with the form below.</p>"), HTML),
    "/search": (200, html("Search", "<p>Type a word to search the shop.</p>"), HTML),
    "/sitemap-only.html": (200, html("Only in the sitemap", "<p>No page links here.</p>"), HTML),
    "/orphan.html": (200, html("Orphan", '<p>Old.</p><a href="/orphan-child">More</a>'), HTML),
    "/orphan-child": (200, html("Orphan child", "<p>Linked from the orphan only.</p>"), HTML),
    "/private/secret.html": (200, html("Secret", "<p>Robots may not read this.</p>"), HTML),
    "/static/app.js": (200, APP_JS, {"Content-Type": "application/javascript", "Server": SERVER}),
    "/api/v1/status": (200, b'{"ok": true}', JSON),
    "/api/v1/users": (200, b'[{"id": 1}]', JSON),
    "/api/v1/orders?status=open": (200, b"[]", JSON),
    "/robots.txt": (200, ROBOTS, {"Content-Type": "text/plain", "Server": SERVER}),
    "/sitemap.xml": (200, SITEMAP, {"Content-Type": "application/xml", "Server": SERVER}),
    "/files/report.pdf": (200, b"%PDF-1.4\n" + b"0" * PDF_BYTES, {"Content-Type": "application/pdf"}),
    "/loop": (302, b"", {"Location": "/loop2", "Server": SERVER}),
    "/loop2": (302, b"", {"Location": "http://shop.example.com/loop", "Server": SERVER}),
}
_CALENDAR = re.compile(r"^/calendar/(\d{4})/(\d{2})$")
_CART = re.compile(r"^/cart\?sid=(\d+)$")


def not_found(path: str) -> Answer:
    return 404, html("Not found", f"<p>No page at {path}.</p>"), HTML


def calendar(year: int, month: int) -> Answer:
    """A month linking the next and the one before: a trap without end."""
    index = year * 12 + month - 1
    after, before = divmod(index + 1, 12), divmod(index - 1, 12)
    links = " ".join(f'<a href="/calendar/{y:04d}/{m + 1:02d}">{y}-{m + 1}</a>' for y, m in (before, after))
    return 200, html(f"Calendar {year}-{month:02d}", f"<p>Events of the month.</p>{links}"), HTML


def answer(host: str, raw_url: str) -> Answer | None:
    """The answer of the apex, shop or API host; ``None`` for another host."""
    if host == APEX:
        if raw_url == "/":
            return 301, b"", {"Location": "http://shop.example.com/", "Server": SERVER}
        return not_found(raw_url)
    if host == API:
        if raw_url == "/v2/items":
            return 200, b'{"items": []}', JSON
        return not_found(raw_url)
    if host != SHOP:
        return None
    known = SHOP_PAGES.get(raw_url)
    if known is not None:
        return known
    if match := _CALENDAR.match(raw_url):
        return calendar(int(match.group(1)), int(match.group(2)))
    if match := _CART.match(raw_url):
        sid = int(match.group(1))
        return (
            200,
            html(f"Cart {sid}", f'<p>Your cart is empty.</p><a href="/cart?sid={sid + 1}">Refresh</a>'),
            HTML,
        )
    return not_found(raw_url)
