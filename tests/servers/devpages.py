"""The bytes behind the dev server's URLs: JavaScript, JSON and HTML that hold endpoints.

One function, :func:`body_for`, gives what a URL of the generated dataset
(:mod:`tests.servers.devdata`) serves, both as the Wayback replay's archived
capture (:mod:`tests.servers.devreplay`) and as the live site's page
(:mod:`tests.servers.devsite`), so the endpoints ``trawl crawl responses``
mines and the ones ``trawl crawl live`` finds are the same kind of thing:

* a script calls ``fetch``, ``axios``, ``$.ajax`` and ``XMLHttpRequest`` on the
  site's API, with methods, query and body parameters, and names a CDN library
  and a partner's webhook (out of scope);
* an API answer (JSON) links the next page, its items and the docs;
* a page links its neighbours, loads a script and has a GET and a POST form.

The API version is 1 before 2016 and 2 from then on, so captures of one URL
across years differ (two digests, two sets of endpoints: what
``trawl endpoints --history`` shows). Bodies are a few hundred bytes: 5,000
URLs make about 5 MB.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from urllib.parse import urlsplit

#: What a capture or page of each family of types serves when it is not text.
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x00" * 64 + b"\xff\xd9"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
RESOURCES = ("users", "orders", "items", "cart", "reviews", "invoices", "sessions", "search")


def _number(url: str) -> int:
    return int.from_bytes(hashlib.sha1(url.encode()).digest()[:4], "big")


def _version(timestamp: str) -> int:
    """The API version a capture at ``timestamp`` (``YYYY...``; ``""``: today) calls."""
    return 1 if timestamp and timestamp[:4] < "2016" else 2


def script(url: str, domain: str, timestamp: str = "") -> bytes:
    """A bundle calling the site's API the ways front-end code does."""
    host = urlsplit(url).hostname or ""
    n, v = _number(url), _version(timestamp)
    own, other = RESOURCES[n % len(RESOURCES)], RESOURCES[(n // 8) % len(RESOURCES)]
    return f"""/*! app bundle {n:x} (api v{v}) */
(function () {{
  var API = "https://api.{domain}/v{v}";
  function load(id) {{
    return fetch("/api/v{v}/{own}?id=" + id + "&fields=name,price").then(function (r) {{ return r.json(); }});
  }}
  fetch("https://api.{domain}/v{v}/{other}/list?page=1&sort=asc", {{method: "GET"}});
  axios.post("https://api.{domain}/v{v}/auth/login", {{username: user, password: pass, remember: true}});
  $.ajax({{url: "/api/v{v}/{own}/update", type: "PUT", data: {{id: 1, status: "open"}}}});
  var xhr = new XMLHttpRequest();
  xhr.open("DELETE", "/api/v{v}/cart/items?sid=" + session);
  xhr.setRequestHeader("X-CSRF-Token", token);
  window.CONFIG = {{
    graphql: "https://api.{domain}/graphql?operation=Search",
    upload: "https://{host}/upload/image?size=large",
    webhook: "https://hooks.partner-{n % 7}.example.net/notify?src={host}",
    lib: "https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js"
  }};
  window.load = load;
}})();
""".encode()


def api_answer(url: str, domain: str, timestamp: str = "") -> bytes:
    """A page of an API listing: its items, the next page, the docs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    n, v = _number(url), _version(timestamp)
    resource = RESOURCES[n % len(RESOURCES)]
    items = [
        {"id": n % 1000 + k, "href": f"https://{host}/api/v{v}/{resource}/{n % 1000 + k}?expand=owner"}
        for k in range(3)
    ]
    answer = {
        "items": items,
        "count": 3,
        "next": f"https://{host}/api/v{v}/{resource}?page=2&per_page=50",
        "links": {
            "docs": f"https://docs.{domain}/api/v{v}/{resource}.html",
            "export": f"https://api.{domain}/v{v}/{resource}/export?format=csv&token=",
        },
    }
    return json.dumps(answer, indent=1).encode()


def page(url: str, timestamp: str = "", links: Sequence[str] = ()) -> bytes:
    """A page: ``links`` (its neighbours), a script, a search form and a login form."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    n, v = _number(url), _version(timestamp)
    anchors = "\n".join(f'<li><a href="{link}">{urlsplit(link).path}</a></li>' for link in links)
    return f"""<!DOCTYPE html>
<html lang="en"><head><title>{host}{parts.path}</title>
<script src="/assets/js/app.{n % 4096:x}.js"></script>
<link rel="stylesheet" href="/assets/css/site.css"></head>
<body><nav><a href="/">Home</a> <a href="/account/">Account</a> <a href="/help/contact">Contact</a></nav>
<h1>Page {n % 10000}</h1><p>Widgets, gadgets and the news of the example company.</p>
<ul>
{anchors}
</ul>
<form action="/search" method="get"><input name="q"><input name="category" type="hidden" value="all"></form>
<form action="/account/login" method="post"><input name="email"><input name="password" type="password">
<input name="csrf_token" type="hidden" value="x"></form>
<script>fetch("/api/v{v}/recommendations?page_id={n % 10000}&limit=5");</script>
</body></html>
""".encode()


def body_for(url: str, mime: str, domain: str, timestamp: str = "", links: Sequence[str] = ()) -> bytes:
    """What ``url`` (of type ``mime``, on ``domain``) serves, as captured at ``timestamp`` (``""``: live
    today)."""
    if "javascript" in mime:
        return script(url, domain, timestamp)
    if mime == "application/json":
        return api_answer(url, domain, timestamp)
    if mime == "image/jpeg":
        return JPEG
    if mime == "application/pdf":
        return PDF
    return page(url, timestamp, links)


def mime_of(path: str) -> str:
    """The type a dataset path serves, from its shape (:data:`tests.servers.devdata.KINDS`)."""
    bare = path.split("?", 1)[0]
    if bare.endswith(".js"):
        return "application/javascript"
    if bare.startswith("/api/"):
        return "application/json"
    if bare.endswith(".jpg"):
        return "image/jpeg"
    if bare.endswith(".pdf"):
        return "application/pdf"
    return "text/html"
