"""Run waymore with its upstream hosts sent to local fakes (runs in waymore's own venv).

waymore's source URLs are module constants (``WAYBACK_URL`` ...) and Common Crawl's
come from ``collinfo.json``, which names the real host as every mirror does; so the
shim rewrites each request's URL prefix in ``requests.Session.request`` (waymore's
only way out: ``session.get`` over ``multiprocessing.dummy`` threads) and then runs
waymore's own ``main()``. A prefix swap per request costs microseconds against the
milliseconds of a page. Standard library and ``requests`` only: trawl is not
importable in that venv.

    python waymore_shim.py '{"https://web.archive.org": "http://127.0.0.1:PORT", ...}' WAYMORE-ARGS...
"""

from __future__ import annotations

import json
import sys
from typing import Any

import requests


def route(hosts: dict[str, str]) -> None:
    """Send every request whose URL starts with a key of ``hosts`` to its value instead."""
    original = requests.Session.request

    def request(self: requests.Session, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        for upstream, local in hosts.items():
            if url.startswith(upstream):
                url = local + url[len(upstream) :]
                break
        return original(self, method, url, *args, **kwargs)

    requests.Session.request = request  # type: ignore[method-assign]


def main() -> None:
    route(json.loads(sys.argv[1]))
    sys.argv = ["waymore", *sys.argv[2:]]
    from waymore.waymore import main as waymore_main

    waymore_main()


if __name__ == "__main__":
    main()
