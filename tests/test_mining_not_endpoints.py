"""Strings real bundles hold that are not endpoints, and their neighbours that are.

Each false case is one the bench against xnLinkFinder found in a real bundle from npm
(bench/bench_mining_vs_xnlinkfinder.py): core-js's licence and source URLs in
swagger-ui's bundle, a JSON-Schema example generator's ``https://example.com/``, axios's
``http://localhost`` parse base, the generator's ``/a/b/c`` JSON pointer. Each keeps a
true twin, so that a rule too broad fails.
"""

from __future__ import annotations

import pytest

from trawl.mining import extract_file
from trawl.mining.policy import api_like

FILE = "https://cdn.site.io/dist/bundle.js"


def urls(script: str) -> list[str]:
    return sorted(e.url for e in extract_file(script.encode(), FILE, "application/javascript").endpoints)


def test_a_packages_licence_and_source_urls_are_metadata() -> None:
    core_js = (
        'v.push({version:"3.40.0",mode:"global",copyright:"(c) 2014-2025 Denis Pushkarev",'
        'license:"https://github.com/zloirock/core-js/blob/v3.40.0/LICENSE",'
        'source:"https://github.com/zloirock/core-js"});'
    )
    assert urls(core_js) == []
    assert urls('var o = {licence: "https://example.org/LICENCE.txt"};') == []


def test_a_source_without_a_licence_beside_it_is_kept() -> None:
    assert urls('$("#t").DataTable({source: "https://api.site.io/rows"});') == ["https://api.site.io/rows"]
    assert urls('var s = {url: "https://api.site.io/v1/items", license: null};') == []  # beside a licence
    assert urls('var s = {url: "https://api.site.io/v1/items", name: "x"};') == [
        "https://api.site.io/v1/items"
    ]


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("https://example.com/", False),
        ("https://example.com", False),
        ("http://www.example.org", False),
        ("http://localhost", False),
        ("http://localhost:9999", True),  # supabase's auth server's default: a dev server, asked
        ("http://127.0.0.1", False),
        ("https://example.com/docs/api", True),  # a path: someone may ask it
        ("http://localhost:8080/api/users", True),  # a development endpoint left in the bundle
        ("https://api.example.com", True),  # another host of the domain: a real base
        ("https://shop.site.io", True),
        ("/a/b/c", False),  # a JSON pointer's example
        ("/x/y/z/", False),
        ("/a/b", True),  # two letters may be a short link's
        ("/a/b/c.json", True),
        ("/api/v/c", True),
    ],
)
def test_an_example_origin_or_path_alone_is_not_an_endpoint(value: str, kept: bool) -> None:
    assert api_like(value) is kept
