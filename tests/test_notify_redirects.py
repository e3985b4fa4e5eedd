"""Receivers that redirect, and webhook URLs with a password.

Real ``scrapy crawl`` runs against the fake CDX server post to local receivers
(tests/servers/receiver.py) that log what they received. Before: a receiver
answering 302 to another host got a bodiless GET sent there, logged as
``notified (HTTP 200)``; ``http://user:pw@host/hook`` failed with ``Name or
service not known``. Another host is another name or address, whatever it
resolves to: ``127.0.0.2`` and ``localhost`` are not ``127.0.0.1``. No redirect
is followed, not even to the same host (trawl/notify/send.py says why).
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.notify import crawl, warnings, wayback
from tests.servers.receiver import FakeReceiver, basic_auth

TOKEN = "hooktoken-9c4d2e"
LANDING_TOKEN = "landingtoken-77aa31"
USER = "trawl-bot"
PASSWORD = "pw:S3cret@hooks!"
PASSWORD_IN_URL = "pw%3AS3cret%40hooks%21"


def port(recv: FakeReceiver) -> str:
    return recv.base_url.rsplit(":", 1)[1]


#: urllib turned a POST answered 301/302/303 into a GET and followed it; 307/308 it did not follow.
REDIRECTS = [
    (301, "localhost"),
    (302, "127.0.0.2"),
    (303, "localhost"),
    (307, "127.0.0.2"),
    (308, "localhost"),
]


@pytest.mark.parametrize(("status", "other_host"), REDIRECTS)
def test_a_redirect_to_another_host_is_a_warning_and_nothing_is_sent_there(
    workdir: Path, status: int, other_host: str
) -> None:
    # "localhost" is 127.0.0.1 by address, another host by name: it is served on 127.0.0.1.
    with wayback() as server, FakeReceiver(host=other_host.replace("localhost", "127.0.0.1")) as there:
        landing = f"http://{other_host}:{port(there)}/landing/{LANDING_TOKEN}"
        with FakeReceiver(location=landing, status=status) as hook:
            result = crawl(workdir, server, NOTIFY_URLS=f"{hook.base_url}/hook?token={TOKEN}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(r.method, r.path) for r in hook.requests] == [("POST", "/hook")]
    assert hook.bodies()[0]["domain"] == "example.com"
    assert there.requests == []  # neither the GET nor the POST, nor the Authorization header
    [line] = warnings(result)
    assert line.endswith(
        f"WARNING: notify: webhook (127.0.0.1:{port(hook)}): answered a redirect (HTTP {status}) "
        f"to {other_host}:{port(there)}; not followed"
    ), line
    assert "notified" not in result.stderr
    assert TOKEN not in result.stderr and LANDING_TOKEN not in result.stderr


def test_a_redirect_to_the_same_host_is_not_followed_either(workdir: Path) -> None:
    with wayback() as server, FakeReceiver(location="/moved/here") as hook:
        result = crawl(workdir, server, NOTIFY_URLS=f"slack+{hook.base_url}/services/{TOKEN}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(r.method, r.path) for r in hook.requests] == [("POST", f"/services/{TOKEN}")]
    [line] = warnings(result)
    assert line.endswith(
        f"WARNING: notify: slack (127.0.0.1:{port(hook)}): answered a redirect (HTTP 302) "
        f"to 127.0.0.1:{port(hook)}; not followed"
    ), line


def test_a_password_in_a_webhook_url_is_sent_as_basic_auth_and_shown_nowhere(workdir: Path) -> None:
    with wayback() as server, FakeReceiver(auth=(USER, PASSWORD)) as hook:
        netloc = f"{USER}:{PASSWORD_IN_URL}@127.0.0.1:{port(hook)}"
        entries = [f"http://{netloc}/hook?token={TOKEN}", f"slack+http://{netloc}/services/{TOKEN}"]
        result = crawl(
            workdir,
            server,
            NOTIFY_URLS=json.dumps(entries),
            LOG_FILE="crawl.log",
            LOG_LEVEL="DEBUG",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(r.path for r in hook.requests) == ["/hook", f"/services/{TOKEN}"]
    for request in hook.requests:
        assert request.headers["authorization"] == basic_auth(USER, PASSWORD)
        assert request.headers["host"] == f"127.0.0.1:{port(hook)}"
    by_path = {r.path: r for r in hook.requests}
    assert by_path["/hook"].body["new_count"] == 3
    assert by_path[f"/services/{TOKEN}"].body["text"].startswith("trawl: example.com: complete")
    assert warnings(result) == []
    log = (workdir / "crawl.log").read_text()
    assert log.count("notified (HTTP 200)") == 2
    with sqlite3.connect(workdir / "trawl.db") as con:
        stored = " ".join(str(row) for row in con.execute("SELECT * FROM runs"))
    encoded = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    payloads = " ".join(r.raw_body.decode() for r in hook.requests)
    for shown in (result.stderr, result.stdout, log, stored, payloads):
        for secret in (PASSWORD, PASSWORD_IN_URL, encoded, TOKEN):
            assert secret not in shown, secret


def test_a_wrong_password_is_one_warning_naming_the_status(workdir: Path) -> None:
    with wayback() as server, FakeReceiver(auth=(USER, "another-password")) as hook:
        result = crawl(
            workdir, server, NOTIFY_URLS=f"http://{USER}:{PASSWORD_IN_URL}@127.0.0.1:{port(hook)}/h"
        )
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = warnings(result)
    assert line.endswith(f"notify: webhook (127.0.0.1:{port(hook)}): HTTP 401"), line
    assert len(hook.requests) == 1 and PASSWORD not in result.stderr and PASSWORD_IN_URL not in result.stderr
