"""Writes ``tests/helpers/slow_tests.txt``, the tests ``make check`` leaves out, from a full run's JUnit XML.

``make check`` is the inner loop's tier: at most 2 minutes on two cores. It leaves
out the modules that start real servers (:data:`SERVER_MODULES`: pywb, scrapyd,
PostgreSQL, Redis, noida-db, Chromium) and every test that took over :data:`LIMIT` seconds
in the full run the list was made from; at 1 s, 1,363 of 1,773 tests ran in
154 test-seconds. Regenerate after a full run:
``pytest -n 2 --junitxml=run.xml && python -m tests.helpers.slowlist run.xml``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

LIMIT = 1.0
LIST = Path(__file__).with_name("slow_tests.txt")
TESTS = Path(__file__).resolve().parents[1]
SERVER_MODULES = frozenset({
    "test_distributed_postgres", "test_elasticsearch_store", "test_kibana", "test_page_spreading",
    "test_postgres_kinds", "test_postgres_outage", "test_postgres_store", "test_pywb_server_smoke",
    "test_queue_dead_letters", "test_queue_workers", "test_scrapyd", "test_scrapyd_schedules",
    "test_scrapyd_server", "test_serve_browser", "test_shared_gate", "test_store_across_machines",
    "test_wayback_pywb", "test_worker_fairness", "test_worker_signals",
})  # fmt: skip


def node_id(classname: str, name: str) -> str:
    """``tests.test_x.TestY`` + ``test_z[p]`` -> ``tests/test_x.py::TestY::test_z[p]``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        if (TESTS.parent / Path(*parts[:cut])).with_suffix(".py").exists():
            return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])
    return f"{classname}::{name}"


def slow_tests(junit: Path) -> list[str]:
    slow = []
    for case in ET.parse(junit).iter("testcase"):
        if float(case.get("time", "0")) > LIMIT:
            slow.append(node_id(case.get("classname", ""), case.get("name", "")))
    return sorted(set(slow))


def is_slow(node: str, listed: frozenset[str]) -> bool:
    module = node.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
    return module in SERVER_MODULES or node in listed


def listed() -> frozenset[str]:
    return frozenset(LIST.read_text().split("\n")) if LIST.exists() else frozenset()


if __name__ == "__main__":
    names = slow_tests(Path(sys.argv[1]))
    LIST.write_text("\n".join(names) + "\n")
    print(f"{len(names)} tests over {LIMIT} s written to {LIST}")
