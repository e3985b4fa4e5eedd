"""Each collapse rule on a table of cases: URLs that make one pattern, and URLs that must stay apart."""

from __future__ import annotations

import polars as pl
import pytest

from trawl.search.collapse import MODES, collapse

U = "https://example.com"

# (mode, urls, the pattern they all collapse into)
TOGETHER = [
    # params: values do not count, names do, in any order
    ("params", [f"{U}/p.php?id=1", f"{U}/p.php?id=2"], f"{U}/p.php?id={{}}"),
    ("params", [f"{U}/p?id=1&q=a", f"{U}/p?q=b&id=2"], f"{U}/p?id={{}}&q={{}}"),
    ("params", [f"{U}/p?id=1", f"{U}/p?id="], f"{U}/p?id={{}}"),
    ("params", [f"{U}/p?a=1&a=2", f"{U}/p?a=3"], f"{U}/p?a={{}}"),
    ("params", [f"{U}/p?a=x=y", f"{U}/p?a=1"], f"{U}/p?a={{}}"),
    ("params", [f"{U}/p?a=1&&b=2", f"{U}/p?b=3&a=4&"], f"{U}/p?a={{}}&b={{}}"),
    ("params", [f"{U}/p?id=1#top", f"{U}/p?id=2#end"], f"{U}/p?id={{}}"),
    ("params", [f"{U}/p?&a=1", f"{U}/p?a=2&", f"{U}/p?a=3&a=4"], f"{U}/p?a={{}}"),
    ("params", [f"{U}/p?c=1&a=2&b=3&a=4", f"{U}/p?b=1&c=2&a=3"], f"{U}/p?a={{}}&b={{}}&c={{}}"),
    ("params", [f"{U}/p?b&a=1", f"{U}/p?a=2&b"], f"{U}/p?a={{}}&b"),
    ("params", ["http://example.com:80/p?id=1", "http://example.com/p?id=2"], "http://example.com/p?id={}"),
    ("params", ["https://example.com:443/p?id=1", f"{U}/p?id=2"], f"{U}/p?id={{}}"),
    # ids: numeric ids
    ("ids", [f"{U}/users/12/edit", f"{U}/users/345/edit"], f"{U}/users/{{int}}/edit"),
    ("ids", [f"{U}/page/1/", f"{U}/page/2/"], f"{U}/page/{{int}}/"),
    ("ids", [f"{U}/a/1/2/3", f"{U}/a/4/5/6"], f"{U}/a/{{int}}/{{int}}/{{int}}"),
    ("ids", [f"{U}/items/2019", f"{U}/items/7"], f"{U}/items/{{int}}"),
    ("ids", [f"{U}/a//1", f"{U}/a//22"], f"{U}/a//{{int}}"),  # an empty segment stays
    # ids: UUIDs, hyphenated, braced or not, any case
    (
        "ids",
        [f"{U}/f/550e8400-e29b-41d4-a716-446655440000", f"{U}/f/{{6BA7B810-9DAD-11D1-80B4-00C04FD430C8}}"],
        f"{U}/f/{{uuid}}",
    ),
    # ids: long hex hashes
    (
        "ids",
        [f"{U}/blob/d41d8cd98f00b204e9800998ecf8427e", f"{U}/blob/da39a3ee5e6b4b0d3255bfef95601890afd80709"],
        f"{U}/blob/{{hash}}",
    ),
    ("ids", [f"{U}/c/0123456789abcdef", f"{U}/c/deadbeefdeadbeef"], f"{U}/c/{{hash}}"),
    # ids: date folders and date segments
    ("ids", [f"{U}/blog/2023/05/hello", f"{U}/blog/2021/12/hello"], f"{U}/blog/{{date}}/hello"),
    ("ids", [f"{U}/blog/2023/05/01/hello", f"{U}/blog/2024/1/9/hello"], f"{U}/blog/{{date}}/hello"),
    ("ids", [f"{U}/archive/2023/05", f"{U}/archive/1999/11"], f"{U}/archive/{{date}}"),
    ("ids", [f"{U}/d/2023-05-01/x", f"{U}/d/2020-12/x"], f"{U}/d/{{date}}/x"),
    ("ids", [f"{U}/items/2019/12", f"{U}/items/2020/1"], f"{U}/items/{{date}}"),  # a year, a small number
    ("ids", [f"{U}/y/2023/05/2024/06", f"{U}/y/2020/01/2021/02"], f"{U}/y/{{date}}/{{date}}"),
    # ids: the query stays as it is
    ("ids", [f"{U}/u/1?tab=a", f"{U}/u/2?tab=a"], f"{U}/u/{{int}}?tab=a"),
    # all: both
    ("all", [f"{U}/u/1?tab=a", f"{U}/u/2?tab=b"], f"{U}/u/{{int}}?tab={{}}"),
    (
        "all",
        [f"{U}/o/2023/05/700?x=1&y=2", f"{U}/o/2022/11/800?y=3&x=4"],
        f"{U}/o/{{date}}/{{int}}?x={{}}&y={{}}",
    ),
]

# (mode, urls that must each stay their own pattern)
APART = [
    # params: another set of names is another pattern
    ("params", [f"{U}/p?id=1", f"{U}/p?id=1&debug=1"]),
    ("params", [f"{U}/p?id=1", f"{U}/p?uid=1"]),
    ("params", [f"{U}/p?id", f"{U}/p?id=1"]),  # a name alone is not name= (urless's {EMPTY})
    ("params", [f"{U}/p", f"{U}/p?id=1"]),
    ("params", [f"{U}/a?id=1", f"{U}/b?id=1"]),
    ("params", [f"{U}/p?id=1", "http://example.com/p?id=1", f"{U}:8443/p?id=1"]),
    ("params", [f"{U}/users/1?x=1", f"{U}/users/2?x=1"]),  # params leaves the path alone
    # ids: slugs, words, versions and ids inside a segment stay
    ("ids", [f"{U}/posts/a-brief-history-of-time", f"{U}/posts/another-post-about-things"]),
    ("ids", [f"{U}/api/v1/users", f"{U}/api/v2/users"]),
    ("ids", [f"{U}/item-123", f"{U}/item-456"]),
    ("ids", [f"{U}/img/123.jpg", f"{U}/img/456.jpg"]),
    ("ids", [f"{U}/c/deadbeef", f"{U}/c/cafebabe"]),  # 8 hex digits: too short for a hash
    ("ids", [f"{U}/about", f"{U}/contact"]),
    ("ids", [f"{U}/f/550e8400-e29b-41d4-a716-44665544000", f"{U}/f/550e8400-e29b-41d4-a716-44665544001"]),
    ("ids", [f"{U}/d/2023-13-01", f"{U}/d/2023-14-01"]),  # no month 13
    ("ids", [f"{U}/u/1?tab=a", f"{U}/u/2?tab=b"]),  # ids leaves the query alone
    ("ids", [f"{U}/users/1", f"{U}/groups/1"]),
    ("all", [f"{U}/u/1?a=1", f"{U}/u/1?b=1"]),
]


@pytest.mark.parametrize(("mode", "urls", "pattern"), TOGETHER)
def test_urls_collapse_into_one_pattern(mode: str, urls: list[str], pattern: str) -> None:
    result = collapse(pl.Series(urls), mode)  # type: ignore[arg-type]
    assert result.rows() == [(pattern, len(urls), min(urls))]


@pytest.mark.parametrize(("mode", "urls"), APART)
def test_urls_stay_apart(mode: str, urls: list[str]) -> None:
    result = collapse(pl.Series(urls), mode)  # type: ignore[arg-type]
    assert sorted(result["example"]) == sorted(urls)
    assert result["count"].to_list() == [1] * len(urls)


def test_sorted_by_count_then_pattern_with_the_smallest_url_as_example() -> None:
    urls = [f"{U}/b?id=9", f"{U}/b?id=10", f"{U}/a?id=1", f"{U}/c?id=3", f"{U}/c?id=2", f"{U}/c?id=30", None]
    result = collapse(pl.Series(urls), "params")
    assert result.columns == ["pattern", "count", "example"]
    assert result.rows() == [
        (f"{U}/c?id={{}}", 3, f"{U}/c?id=2"),
        (f"{U}/b?id={{}}", 2, f"{U}/b?id=10"),
        (f"{U}/a?id={{}}", 1, f"{U}/a?id=1"),
    ]
    assert result.schema == {"pattern": pl.String, "count": pl.Int64, "example": pl.String}


@pytest.mark.parametrize("mode", MODES)
def test_no_urls_no_patterns(mode: str) -> None:
    result = collapse(pl.Series([], dtype=pl.String), mode)  # type: ignore[arg-type]
    assert result.height == 0
    assert result.columns == ["pattern", "count", "example"]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="params, ids, all"):
        collapse(pl.Series([U]), "paths")  # type: ignore[arg-type]
