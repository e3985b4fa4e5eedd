"""urlscan pages decoded to the fields trawl reads (trawl.sources.urlscan.decode)."""

from __future__ import annotations

import orjson
import pytest

from trawl.sources.urlscan.decode import decode_page

SCAN = {
    "task": {"url": "https://example.com/a", "time": "2024-01-02T03:04:05.000Z", "uuid": "x", "tags": ["t"]},
    "page": {
        "url": "https://example.com/b",
        "status": "200",
        "mimeType": "text/html",
        "ptr": "h.example.com",
    },
    "stats": {"requests": 40, "dataLength": 12345},
    "screenshot": "https://urlscan.io/screenshots/x.png",
    "sort": [1675117496569, "abc"],
}


def test_only_the_fields_trawl_reads_are_kept() -> None:
    page = decode_page(orjson.dumps({"results": [SCAN], "total": 1, "took": 5, "has_more": False}))
    assert page == {
        "total": 1,
        "has_more": False,
        "results": [
            {
                "task": {"url": "https://example.com/a", "time": "2024-01-02T03:04:05.000Z"},
                "page": {
                    "url": "https://example.com/b",
                    "status": "200",
                    "mimeType": "text/html",
                    "ptr": "h.example.com",
                },
                "sort": [1675117496569, "abc"],
            }
        ],
    }


def test_a_number_status_and_missing_parts_come_as_they_are() -> None:
    page = decode_page(b'{"results": [{"page": {"status": 404}}, {}], "total": 2}')
    assert page["results"] == [
        {"sort": None, "page": {"url": None, "status": 404, "mimeType": None, "ptr": None}},
        {"sort": None},
    ]


def test_another_shape_is_decoded_whole() -> None:
    odd = {"results": ["not an object", {"task": "nor this"}], "total": "many"}
    assert decode_page(orjson.dumps(odd)) == odd


def test_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_page(b'{"results": [')
