"""The dev server's other systems beside the URL sources, and the command that tries each.

* ``responses``: the wayback fake is a replay server too (:mod:`tests.servers.devreplay`),
  so ``trawl crawl responses`` downloads its ``id_`` captures and mines them;
* ``probe`` and ``live``: the generated site (:mod:`tests.servers.devsite`) behind a
  forward proxy, given to trawl as ``PROXY_LIST``: probe and live refuse
  ``127.0.0.1`` as a target, and through the proxy the hosts keep their names;
* ``crates``: a generated db-dump and the API (:mod:`tests.servers.devcrates`).

:func:`system_commands` gives one command per system, in the order they work
top to bottom: the URL crawl fills the store that ``responses`` and ``probe``
read. Every command runs with politeness off (local servers need no pacing) into
the URL crawl's store, ``trawl-dev.db``; the files go to ``trawl-dev-files``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from tests.servers.devserver import STORE_URI, trawl_executable

SYSTEMS = ("responses", "probe", "live", "crates")
#: Server names past the URL sources' (their order gives their place after ``--port-base``'s sources).
SERVERS = ("site", "site-tls", "proxy", "crates-dump", "crates-api")
FILES_STORE = "trawl-dev-files"
#: The stored URLs ``responses`` asks the archive about: the archived ones whose bytes hold endpoints
#: (1,312 of 5,007 URLs, 1,208 files: 18 s at a load of 8; the CDX lookups of all 5,007 alone took 39 s).
RESPONSES_QUERY = "source:wayback AND (ext:js OR ext:html OR path:/api/*)"
#: Pages the printed live crawl fetches at most: 5 s at a load of 8, where the site has a page per
#: dataset URL (5,000) and its traps.
LIVE_MAX_PAGES = 300
#: crates.io asks API clients for a User-Agent naming them and a contact.
CRATES_USER_AGENT = "trawl-dev (dev@example.com)"
QUIET = {"RATE_LIMITS_ENABLED": False, "AUTOTHROTTLE_ENABLED": False}


def start_systems(
    domain: str, urls: Sequence[str], systems: Sequence[str], stack: ExitStack, ports: Mapping[str, int]
) -> dict[str, Any]:
    """The running servers of ``systems`` (by name in :data:`SERVERS`), stopped when ``stack`` closes.

    ``urls`` are the site's pages; ``ports`` a fixed port by server name (else a free one).
    A port in use raises ``OSError`` naming the server.
    """
    from tests.servers.devcrates import dev_crates
    from tests.servers.devsite import DevProxy, DevSite, DevTlsSite

    servers: dict[str, Any] = {}

    def start(name: str, server: Any) -> Any:
        if name in ports:
            server.port = ports[name]
        try:
            servers[name] = stack.enter_context(server)
        except OSError as exc:
            raise OSError(exc.errno, f"{name} on 127.0.0.1:{server.port}: {exc.strerror}") from exc
        return servers[name]

    if "probe" in systems or "live" in systems:
        site = start("site", DevSite(domain, urls))
        tls = start("site-tls", DevTlsSite(site))
        start("proxy", DevProxy(domain, site._httpd.server_address[1], tls.bound_port))
    if "crates" in systems:
        dump, api = dev_crates()
        start("crates-dump", dump)
        start("crates-api", api)
    return servers


def _command(words: Sequence[str], settings: Mapping[str, Any]) -> str:
    head = shlex.join([trawl_executable(), *words])
    lines = [head] + ["    -s " + shlex.quote(f"{name}={value}") for name, value in settings.items()]
    return " \\\n".join(lines)


def system_commands(
    domain: str, systems: Sequence[str], servers: Mapping[str, Any], wayback_url: str | None
) -> list[tuple[str, str]]:
    """``(what it does, the command)`` for each of ``systems``, in :data:`SYSTEMS` order."""
    commands = []
    store = {"STORE_URI": STORE_URI}
    if "responses" in systems and wayback_url:
        commands.append(
            (
                f"Download and mine the archived scripts, pages and API answers (into {FILES_STORE}/)",
                _command(
                    ["crawl", "responses", "-a", f"domain={domain}", "-a", f"query={RESPONSES_QUERY}"],
                    {"WAYBACK_BASE_URL": wayback_url, "FILES_STORE": FILES_STORE, **QUIET, **store},
                ),
            )
        )
        commands.append(
            (
                "then what mining found",
                shlex.join([trawl_executable(), "endpoints", "-a", f"domain={domain}", "--store", STORE_URI]),
            )
        )
    proxy = servers.get("proxy")
    if "probe" in systems and proxy is not None:
        commands.append(
            (
                f"Probe the stored URLs on the live site (*.{domain} through the proxy)",
                _command(
                    ["crawl", "probe", "-a", f"domain={domain}"],
                    {"PROXY_LIST": proxy.url, **QUIET, **store},
                ),
            )
        )
    if "live" in systems and proxy is not None:
        commands.append(
            (
                f"Crawl the live site from its root ({LIVE_MAX_PAGES} pages at most)",
                _command(
                    ["crawl", "live", "-a", f"domain={domain}", "-a", f"max_pages={LIVE_MAX_PAGES}"],
                    {"PROXY_LIST": proxy.url, **QUIET, **store},
                ),
            )
        )
    if "crates" in systems and "crates-dump" in servers:
        dump, api = servers["crates-dump"], servers["crates-api"]
        commands.append(
            (
                f"Load the crates.io db-dump (also {dump.zip_url}; the API: {api.base_url})",
                _command(
                    ["crawl", "crates"],
                    {"CRATES_DUMP_URL": dump.dump_url, "CRATES_BASE_URL": api.base_url, **store},
                ),
            )
        )
        commands.append(
            (
                "then the daily top-up from the API (the crates updated since the dump)",
                _command(
                    ["crawl", "crates", "-a", "mode=incremental"],
                    {
                        "CRATES_BASE_URL": api.base_url,
                        "CRATES_USER_AGENT": CRATES_USER_AGENT,
                        **QUIET,
                        **store,
                    },
                ),
            )
        )
        commands.append(
            (
                "then the most downloaded crates",
                shlex.join([trawl_executable(), "crates", "top", "--store", STORE_URI]),
            )
        )
    return commands
