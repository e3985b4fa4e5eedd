"""``trawl serve`` in a real browser: headless Chromium (Debian's) driven by Selenium.

A user's path through the pages, on a store one real ``trawl crawl all`` of the
local fakes filled: a search typed into the query box, a facet clicked, the
charts drawn (each SVG has shapes of non-zero size, as laid out by the browser),
a download saved (its bytes are ``trawl search``'s). One server and one browser
for the module. No chromium: these fail (CI installs it), they never skip.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_scrapy
from tests.helpers.browser import Served, chromium, crawl_fakes, served

WAIT = 15


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory, downloads: Path) -> Iterator[tuple[Path, Served, Any]]:
    """The store, its server and the browser: Chromium starts while the crawl runs (a few seconds saved)."""
    with ExitStack() as stack, ThreadPoolExecutor(1) as pool:
        browser = pool.submit(stack.enter_context, chromium(downloads))
        folder = tmp_path_factory.mktemp("serve-browser")
        crawl_fakes(folder, twice=False)
        server = stack.enter_context(served(folder, "--store", "sqlite:///trawl.db"))
        yield folder, server, browser.result()


@pytest.fixture(scope="module")
def folder(started: tuple[Path, Served, Any]) -> Path:
    return started[0]


@pytest.fixture(scope="module")
def server(started: tuple[Path, Served, Any]) -> Served:
    return started[1]


@pytest.fixture(scope="module")
def browser(started: tuple[Path, Served, Any]) -> Any:
    return started[2]


def wait_for(browser, condition):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT, poll_frequency=0.05).until(condition)


def shown_urls(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "td.trawl-url")]


def total(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "trawl-total").text


def test_a_search_typed_in_the_query_box(server: Served, browser) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "trawl/search")
    box = browser.find_element(By.ID, "trawl-q")
    box.send_keys("ext:js status:200")
    browser.find_element(By.ID, "trawl-submit").click()
    wait_for(browser, lambda b: total(b) == "2 URLs")
    assert shown_urls(browser) == [
        "https://static.example.com/app.js",
        "https://static.example.com/vendor.js",
    ]


def test_a_facet_click_narrows_to_its_value(server: Served, browser) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "trawl/search?q=source:wayback")
    host_facet = browser.find_element(By.CSS_SELECTOR, '.trawl-facet[data-facet="host"]')
    host_facet.find_element(By.LINK_TEXT, "api.example.com").click()
    wait_for(browser, lambda b: total(b) == "2 URLs")
    assert (
        browser.find_element(By.ID, "trawl-q").get_attribute("value")
        == 'source:wayback host:"api.example.com"'
    )
    assert shown_urls(browser) == [
        "https://api.example.com/v1/users?id=1",
        "https://api.example.com/v1/users?id=2",
    ]


DRAWN = """
return Array.from(document.querySelectorAll('svg.trawl-chart')).map(svg =>
    Array.from(svg.querySelectorAll('polyline.series, rect.bar')).filter(shape => {
        const box = shape.getBBox();
        return box.width > 0 && (box.height > 0 || shape.tagName === 'polyline');
    }).length);
"""


def test_the_charts_are_drawn(server: Served, browser) -> None:
    browser.get(server.url + "trawl/charts")
    drawn = browser.execute_script(DRAWN)
    # first seen per month: a line per source (otx, wayback); captures per year: a bar per
    # first-seen year (wayback 2015-2020, otx 2022); top hosts: a bar per host
    assert drawn == [2, 7, 3]


def test_a_download_saves_what_trawl_search_prints(
    folder: Path, server: Served, browser, downloads: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "trawl/search?q=mime:application/*")
    browser.find_element(By.ID, "export-csv").click()
    saved = downloads / "trawl-search.csv"
    deadline = time.monotonic() + WAIT
    while not saved.exists() and time.monotonic() < deadline:  # polls: Chromium renames when complete
        time.sleep(0.05)
    expected = run_scrapy(
        folder, "search", "mime:application/*", "--format", "csv", "--store", "sqlite:///trawl.db"
    )
    assert saved.read_text() == expected.stdout
    assert len(expected.stdout.splitlines()) == 1 + 5
