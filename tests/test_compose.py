"""docker-compose.yml runs today's commands (no Docker in CI: the file is read, its commands asked for -h).

Every service's command and every ``docker compose run ... trawl trawl CMD`` the
file's comments show is a ``trawl`` subcommand that answers ``-h`` (a service
that ran ``scrapy search`` went unnoticed), and the image installs the extras
that pyproject.toml declares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
#: The programs a service may run besides trawl: scrapyd's own.
OTHER_PROGRAMS = {"scrapyd", "scrapyd-deploy", "redis-server"}


def trawl_subcommands() -> set[str]:
    """The trawl subcommands the compose file runs, from its services and its comments."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    found = set()
    for name, service in services.items():
        command = service.get("command")
        if command is None:
            continue
        assert command[0] in OTHER_PROGRAMS | {"trawl"}, f"service {name} runs {command[0]!r}, not trawl"
        if command[0] == "trawl":
            found.add(command[1])
    found.update(re.findall(r"docker compose run --rm trawl trawl ([a-z-]+)", COMPOSE.read_text()))
    return found


def test_the_compose_file_runs_trawl_not_scrapy() -> None:
    text = COMPOSE.read_text()
    assert not re.search(r"\bscrapy (crawl|search|list|kibana-setup)\b", text)
    assert {"crawl", "search", "kibana-setup", "worker", "enqueue"} <= trawl_subcommands()


@pytest.mark.parametrize("subcommand", sorted(trawl_subcommands()))
def test_each_subcommand_the_compose_file_runs_exists(subcommand: str, tmp_path: Path) -> None:
    done = processes.run(
        [sys.executable, "-m", "trawl.cli", subcommand, "-h"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"trawl {subcommand}" in done.stdout


def test_the_image_installs_declared_extras() -> None:
    # pyproject.toml's extras: the `name = [` lines of [project.optional-dependencies] (tomllib is 3.11+).
    table = (
        (ROOT / "pyproject.toml")
        .read_text()
        .split("[project.optional-dependencies]", 1)[1]
        .split("\n[", 1)[0]
    )
    extras = re.findall(r"^([a-z-]+) = \[", table, re.MULTILINE)
    assert "scrapyd" in extras
    installs = re.findall(r"pip install [^\n]*-e '\.\[([a-z,]+)\]'", COMPOSE.read_text())
    assert installs, "the image installs trawl without the scrapyd extra"
    for names in installs:
        assert set(names.split(",")) <= set(extras)
