"""The precision policy: which bare strings count as endpoints.

A value a file *uses* as a URL (``fetch(x)``, ``<a href>``, ``location = x``) is always an
endpoint. A string that merely sits in a file (a JavaScript literal, a JSON value, an XML
attribute) is one only when it looks like a URL a server answers. The rules, in order
(docs/mining.md has them with examples):

1. Rejected: shorter than 2 or longer than 2,048 characters; any whitespace, quote,
   ``<``, ``>``, ``\\``, ``{``, ``}``, ``|``, ``^``, backtick or ``*`` (prose, markup, globs,
   templates of other languages); a MIME type (``text/html``, ``application/json``);
   a date or a fraction (``12/31/2024``, ``1/2``); an npm scope (``@babel/core``);
   an XML namespace or schema URL (``http://www.w3.org/2000/svg``), a JSON Schema or OpenAPI
   specification URI (``http://json-schema.org/draft-07/schema``, ``https://spec.openapis.org/...``),
   a framework's error-reference link (``https://react.dev/errors/418``); an example domain's or
   the loopback's origin alone (``https://example.com/``, ``http://localhost``); a path of
   one-letter segments (``/a/b/c``); a value with no known part (``/EXPR/EXPR``, ``http://EXPR``).
2. Accepted: an absolute ``http(s)``/``ws(s)`` URL or a protocol-relative ``//host.tld/...``
   whose host has a dot (or is ``localhost``).
3. Accepted: a root-relative path ``/seg...`` whose first segment holds a letter
   (``/login``, ``/api/v1/users``, ``/static/app.css``); ``/1`` and ``/`` are not.
   ``EXPR/users`` (an unknown base) is judged by what follows ``EXPR``.
4. Accepted: a relative path whose first segment is an API word (``api``, ``v1``...,
   ``graphql``, ``rest``, ``rpc``, ``ajax``, ``wp-json``, ``oauth``...) with a ``/`` after
   it, or the word ``graphql`` alone; or a relative path ending in a server-side or data
   extension (``.php``, ``.asp(x)``, ``.jsp``, ``.do``, ``.action``, ``.cgi``, ``.json``,
   ``.xml``...). ``./data.json`` counts; ``./x.css``, ``./chunk.js`` and ``../lib/y`` do not:
   in a bundle or an import statement they are module specifiers, not requests.
5. Everything else is rejected (``react-dom/client``, ``en/US``, ``a/b``).
"""

from __future__ import annotations

import re

from trawl.mining.resolve import EXPR, MAX_URL

_BAD_CHARS = re.compile(r"[\s\"'<>\\{}|^`*]")
_MIME = re.compile(
    r"^(?:application|text|image|audio|video|font|multipart|message|model|x-[\w-]+)/[\w.+-]+$",
    re.IGNORECASE,
)
_DATE = re.compile(r"^[\d.\-]+(?:/[\d.\-]+)+$")
_ABSOLUTE = re.compile(
    r"^(?:(?:https?|wss?):)?//(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?::\d+)?(?:[/?#]|$)"
    r"|^(?:(?:https?|wss?):)?//(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|EXPR)(?::\d+)?(?:[/?#]|$)",
    re.IGNORECASE,
)
_NAMESPACE_HOSTS = re.compile(
    r"^(?:https?:)?//(?:www\.)?(?:w3\.org|w3c\.org|schemas\.xmlsoap\.org|schemas\.microsoft\.com"
    r"|schema\.org|purl\.org|ns\.adobe\.com|schemas\.openxmlformats\.org|xmlns\.com"
    r"|json-schema\.org|spec\.openapis\.org)(?:[/?#]|$)",
    re.IGNORECASE,
)
#: Links a framework prints in its error messages (React's decoder, Angular's and Vue's references).
_ERROR_REFERENCES = re.compile(
    r"^(?:https?:)?//(?:www\.)?(?:reactjs\.org/docs/error-decoder|react\.dev/errors/|legacy\.reactjs\.org/docs/error-decoder"
    r"|angular\.(?:io|dev)/errors/|vuejs\.org/error-reference|redux\.js\.org/errors)",
    re.IGNORECASE,
)
#: An origin alone that is nobody's endpoint: a documentation domain's (RFC 2606: a JSON-Schema
#: example generator's ``https://example.com/``) or the loopback's without a port
#: (``http://localhost``, the base axios and URL polyfills parse relative URLs against outside a
#: browser). A port or a path keeps it: supabase's ``http://localhost:9999`` is its auth server's
#: default, ``http://localhost/api`` a development endpoint worth reading.
_EXAMPLE_ORIGIN = re.compile(
    r"^(?:(?:https?|wss?):)?//(?:(?:www\.)?example\.(?:com|net|org)(?::\d+)?|localhost|127\.0\.0\.1)/?$",
    re.IGNORECASE,
)
#: A path of three or more one-letter segments (``/a/b/c``, ``/x/y/z``): an example (a JSON
#: pointer's, a router's documentation), not a page.
_LETTERS_ONLY = re.compile(r"^/[A-Za-z](?:/[A-Za-z]){2,}/?$")
#: Data extensions a bare file name (no `/`) is not kept for: `response.txt`, `export.json` are
#: default names of files a page saves, not requests; a server-side name (`login.php`) still is.
_DATA_EXTENSIONS = (".txt", ".json", ".jsonp", ".xml")
_UNKNOWN_ONLY = re.compile(r"^(?:https?|wss?):|EXPR|[/?#&=.:]")
_ROOT = re.compile(r"^/(?!/)[^/?#]*[A-Za-z]")
_API_WORD = re.compile(
    r"^(?:\./)?(?:api|v\d{1,2}|graphql|gql|rest|rpc|jsonrpc|ajax|xhr|ws|services?|endpoints?|wp-json"
    r"|oauth2?|auth|admin-ajax\.php)(?:/|$)",
    re.IGNORECASE,
)
ENDPOINT_EXTENSIONS = (
    ".php",
    ".asp",
    ".aspx",
    ".ashx",
    ".asmx",
    ".axd",
    ".jsp",
    ".jspx",
    ".do",
    ".action",
    ".cgi",
    ".pl",
    ".cfm",
    ".svc",
    ".json",
    ".jsonp",
    ".xml",
    ".graphql",
    ".gql",
    ".wsdl",
    ".txt",
)


def _path_part(value: str) -> str:
    return value.split("?", 1)[0].split("#", 1)[0]


def api_like(value: str) -> bool:
    """Whether a bare string found in a file counts as an endpoint (the module docstring's rules)."""
    if "/" not in value and "." not in value and not value.lower().endswith("graphql"):
        return False  # every rule below needs one of these: most literals of a bundle stop here
    if len(value) < 2 or len(value) > MAX_URL or _BAD_CHARS.search(value):
        return False
    if _MIME.match(value) or _DATE.match(value) or value.startswith("@"):
        return False
    if not _UNKNOWN_ONLY.sub("", value):
        return False  # `/EXPR/EXPR`, `http://EXPR`: every part unknown, nothing to ask
    if value.startswith(EXPR):
        rest = value[len(EXPR) :]
        return rest.startswith("/") and not rest.startswith("//") and bool(_ROOT.match(rest))
    if _ABSOLUTE.match(value):
        return not (
            _NAMESPACE_HOSTS.match(value) or _ERROR_REFERENCES.match(value) or _EXAMPLE_ORIGIN.match(value)
        )
    if value.startswith("/"):
        return bool(_ROOT.match(value)) and not _LETTERS_ONLY.match(value)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", value):  # another scheme: not ours
        return False
    path = _path_part(value).lower()
    if _API_WORD.match(value) and ("/" in value.removeprefix("./") or path.endswith("graphql")):
        return True
    if "/" not in path and path.endswith(_DATA_EXTENSIONS):
        return False
    if path.endswith(ENDPOINT_EXTENSIONS) and not path.startswith("../"):
        stem = path.rsplit("/", 1)[-1]
        return len(stem) > max(len(ext) for ext in ENDPOINT_EXTENSIONS if path.endswith(ext)) and bool(
            re.match(r"^[\w\-./%~]+$", path)
        )
    return False
