"""A VirusTotal v2 domain report of ``example.com``, what a crawl of it keeps, and the key it is asked with.

``EXAMPLE_REPORT`` (built in the recorded report's shape) holds undetected and
detected URLs, one of another domain and one ``FILTER_URL`` drops, and three
subdomains; ``EXAMPLE_FILTERED`` is what a crawl with the default filters keeps
of it, ``EXAMPLE_ALL`` what it keeps with ``filters=false``. ``KEY`` is the key
the stand-in accepts; ``NO_KEY_ENV`` leaves none in the environment.
"""

from __future__ import annotations

from tests.servers.virustotal import build_report

KEY = "vt-test-key-0123456789abcdef"
NO_KEY_ENV = {"VIRUSTOTAL_API_KEY": "", "VIRUSTOTAL_API_KEYS": ""}

EXAMPLE_REPORT = build_report(
    undetected=[
        ("http://example.com/login", "2020-01-02 03:04:05"),
        ("https://api.example.com/v1/users?id=1", "2021-05-06 07:08:09"),
        ("http://notexample.com/", "2021-05-06 07:08:09"),  # another domain: scope drops it
        ("https://example.com/static/app.css", "2021-05-06 07:08:09"),  # FILTER_URL drops it
    ],
    detected=[
        ("http://example.com/login", "2019-12-31 23:59:59"),
        ("https://www.example.com/admin/", "2018-01-01 00:00:00"),
        ("http://example.com.evil.net/x", "2018-01-01 00:00:00"),
    ],
    subdomains=["api.example.com", "dev.example.com", "www.example.com"],
)
EXAMPLE_FILTERED = {
    "http://example.com/login",
    "https://api.example.com/v1/users?id=1",
    "https://www.example.com/admin/",
    "http://api.example.com/",
    "http://dev.example.com/",
    "http://www.example.com/",
}
EXAMPLE_ALL = EXAMPLE_FILTERED | {"https://example.com/static/app.css"}
