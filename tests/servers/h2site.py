"""A local HTTPS site that offers HTTP/2 through ALPN, logging its connections and streams.

Twisted's web server, with ``h2`` installed, speaks HTTP/2 on a TLS connection
whose ALPN chose ``h2`` and HTTP/1.1 otherwise: the same code a real Twisted
site runs, not a model of HTTP/2. Run as a process of its own (the test's and
the crawl's reactors stay apart)::

    python -m tests.servers.h2site --ports 2 --pages 300 --alpn h2,http/1.1 --log site.jsonl

It prints ``READY port1 port2 ...`` once every port listens. Each port is an
origin (``https://127.0.0.1:PORT``) serving the same generated site:

* ``/``: links to ``/p/0`` ... ``/p/{pages-1}``, spread so that a breadth-first
  crawl reaches them all within depth 3 (the home links to the first ten, each
  page ``n`` to ``10n+1`` ... ``10n+10``); each page is about 2 KB of HTML;
* ``/big``: 300 KB of HTML; ``/bomb``: 16 KB of gzip (``Content-Encoding: gzip``,
  sent whatever the client asked) inflating to 16 MiB; ``/away``: a 302 to
  ``https://evil.example.net/stolen``; ``/moved``: a 301 to ``/p/1``; ``/hang``:
  never answered. The home
  page links ``/bomb`` too (the live crawl's size bound);
* anything else: a 404 page.

``--alpn h2,http/1.1`` (HTTP/2 offered) or ``--alpn http/1.1`` (an HTTP/1.1-only
TLS server that negotiates ALPN; a server without ALPN at all is
:class:`tests.servers.website.TlsSite`, Python's ``ssl``). A port also answers
plain HTTP (the first byte of a connection tells: TLS starts with 0x16) with
a 301 to its ``https://`` twin, as sites do: the live crawl's ``http://`` seed
then reaches the TLS site.

The certificate is self-signed for ``127.0.0.1`` and ``localhost``, made at start
in ``--cert-dir``. The log (JSON lines, flushed each) says what a user would
check on a server: ``{"event": "connection", "port": P, "peer": 51234}`` per TCP
connection accepted, ``{"event": "tls", "peer": ..., "alpn": "h2"}`` per
handshake done, and ``{"event": "request", "port": P, "peer": ..., "protocol":
"HTTP/2", "path": "/p/3"}`` per request: the peer's port names the connection,
so requests per connection are the streams it carried.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import IO, Any

try:
    from tests.servers.certificates import self_signed
except ImportError:  # run from tests/
    from servers.certificates import self_signed  # type: ignore[no-redef]

SERVER = "TrawlH2Site/1.0"
LINKS_PER_PAGE = 10
BIG_BYTES = 300_000
BOMB_BYTES = 16 << 20
EVIL = "https://evil.example.net/stolen"
BIG_PAGE = b"<html><head><title>Big</title></head><body>" + b"<p>lorem ipsum</p>" * (BIG_BYTES // 18)


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, valid from yesterday for a year."""
    return self_signed(directory, ["localhost", "127.0.0.1"], prefix="h2")


def page_body(number: int, pages: int) -> bytes:
    """Page ``number``: its title, some text, and links to its children in the tree."""
    children = range(LINKS_PER_PAGE * number + 1, min(LINKS_PER_PAGE * number + LINKS_PER_PAGE + 1, pages))
    links = "".join(f'<li><a href="/p/{child}">Page {child}</a></li>' for child in children)
    text = " ".join(f"word{(number * 7 + i) % 97}" for i in range(250))
    return (
        f"<!DOCTYPE html><html><head><title>Page {number}</title></head><body>"
        f"<h1>Page {number}</h1><p>{text}</p><ul>{links}</ul></body></html>"
    ).encode()


def home_body(pages: int) -> bytes:
    links = "".join(f'<li><a href="/p/{n}">Page {n}</a></li>' for n in range(min(LINKS_PER_PAGE, pages)))
    links += '<li><a href="/bomb">archive</a></li>'
    return (
        f"<!DOCTYPE html><html><head><title>Home</title></head><body><ul>{links}</ul></body></html>".encode()
    )


def serve(
    ports: int, pages: int, alpn: str, log_path: Path, cert_dir: Path, goaway_after: int = 0
) -> None:  # pragma: no cover
    """Runs the site in this process until it is killed (the reactor is this process's own).

    ``goaway_after``: as nginx's ``keepalive_requests``, an HTTP/2 connection's Nth request is its
    last: a graceful GOAWAY naming that stream goes out, the streams up to it are answered, those
    the client opened after it are not (it must send them again), then the connection is closed.
    """
    from OpenSSL import crypto
    from twisted.internet import reactor, ssl
    from twisted.internet.interfaces import IProtocolNegotiationFactory
    from twisted.internet.protocol import Factory, Protocol
    from twisted.protocols.tls import TLSMemoryBIOFactory
    from twisted.web import resource, server
    from zope.interface import implementer

    cert_path, key_path = make_certificate(cert_dir)
    bomb = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)
    log: IO[str] = log_path.open("a", encoding="utf-8")

    def note(**event: Any) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()

    protocols = [p.encode() for p in alpn.split(",")]
    options = ssl.CertificateOptions(
        privateKey=crypto.load_privatekey(crypto.FILETYPE_PEM, key_path.read_bytes()),
        certificate=crypto.load_certificate(crypto.FILETYPE_PEM, cert_path.read_bytes()),
    )

    from hyperframe.frame import GoAwayFrame

    def going_away(request: Any, path: str, peer: int) -> bool:
        """Past the connection's last stream (unanswered, logged); its last: GOAWAY sent first."""
        stream = request.channel
        conn = getattr(stream, "_conn", None)
        if not goaway_after or conn is None or not hasattr(stream, "streamID"):
            return False
        last = getattr(conn, "goaway_last", None)
        if last is not None and stream.streamID > last:
            note(event="unanswered", peer=peer, path=path, stream=stream.streamID)
            return True
        if not hasattr(conn, "served"):
            conn.served, conn.open_streams, conn.goaway_last = 0, set(), None
        conn.served += 1
        conn.open_streams.add(stream.streamID)

        def done(_: Any, sid: int = stream.streamID) -> None:
            conn.open_streams.discard(sid)
            if conn.goaway_last is not None and not conn.open_streams:
                conn.transport.loseConnection()

        request.notifyFinish().addBoth(done)
        if conn.served == goaway_after and last is None:
            # Written past Twisted's h2 state machine, which could then answer no stream at all.
            conn.goaway_last = stream.streamID
            conn.transport.write(
                GoAwayFrame(stream_id=0, last_stream_id=stream.streamID, error_code=0).serialize()
            )
            note(event="goaway", peer=peer, last_stream=stream.streamID)
        return False

    class Page(resource.Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> bytes:  # noqa: N802 - Twisted's naming
            path = request.path.decode("latin-1")
            proto = request.clientproto.decode("latin-1")
            host = request.getHost()
            peer = request.getClientAddress()
            if going_away(request, path, peer.port):
                return server.NOT_DONE_YET  # type: ignore[no-any-return]
            note(event="request", port=host.port, peer=peer.port, protocol=proto, path=path)
            request.setHeader(b"Server", SERVER.encode())
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            if not request.isSecure():
                request.setResponseCode(301)
                given = request.getHeader(b"host")  # a relay in front: its port, not this one
                authority = given.decode("latin-1") if given else f"127.0.0.1:{host.port}"
                request.setHeader(b"Location", f"https://{authority}{path}".encode())
                return b""
            if path == "/":
                return home_body(pages)
            if path == "/hang":  # never answered: the client's timeout or stop ends it
                return server.NOT_DONE_YET  # type: ignore[no-any-return]
            if path == "/big":
                return BIG_PAGE
            if path == "/bomb":
                request.setHeader(b"Content-Encoding", b"gzip")
                return bomb
            if path in ("/away", "/moved"):
                request.setResponseCode(302 if path == "/away" else 301)
                request.setHeader(b"Location", EVIL.encode() if path == "/away" else b"/p/1")
                return b""
            if path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < pages:
                return page_body(int(path[3:]), pages)
            request.setResponseCode(404)
            return b"<html><head><title>Not found</title></head><body>Not found.</body></html>"

    site = server.Site(Page())
    site.log = lambda request: None  # type: ignore[method-assign]  # the JSON log says it

    # Twisted's Site offers h2 itself when h2 is installed: the TLS side gets a factory that offers
    # what --alpn says, and builds the Site's protocol.
    @implementer(IProtocolNegotiationFactory)
    class Negotiating(Factory):
        def buildProtocol(self, addr: Any) -> Any:  # noqa: N802
            return site.buildProtocol(addr)

        def acceptableProtocols(self) -> list[bytes]:  # noqa: N802
            return protocols or []

    tls_factory = TLSMemoryBIOFactory(options, False, Negotiating())
    original_build = tls_factory.buildProtocol

    def build_tls(addr: Any) -> Any:
        protocol = original_build(addr)
        inner_made = protocol.wrappedProtocol.dataReceived

        def first_data(data: bytes, _done: list[bool] = []) -> None:  # noqa: B006 - once per connection
            if not _done:
                _done.append(True)
                chosen = protocol.negotiatedProtocol
                note(event="tls", peer=addr.port, alpn=chosen.decode() if chosen else None)
            inner_made(data)

        protocol.wrappedProtocol.dataReceived = first_data
        return protocol

    class Sniff(Protocol):
        """TLS (a first byte of 0x16) or plain HTTP on one port."""

        inner: Any = None

        def connectionMade(self) -> None:  # noqa: N802
            # As nginx's tcp_nodelay (on by default): an HTTP/2 answer's HEADERS and DATA frames are
            # two writes, and Nagle held the second until the first was acknowledged (up to 40 ms).
            self.transport.setTcpNoDelay(True)
            peer = self.transport.getPeer()
            note(event="connection", port=self.transport.getHost().port, peer=peer.port)

        def dataReceived(self, data: bytes) -> None:  # noqa: N802
            if self.inner is None:
                peer = self.transport.getPeer()
                self.inner = build_tls(peer) if data[:1] == b"\x16" else site.buildProtocol(peer)
                self.inner.makeConnection(self.transport)
            self.inner.dataReceived(data)

        def connectionLost(self, reason: Any = None) -> None:  # noqa: N802
            if self.inner is not None:
                self.inner.connectionLost(reason)

    factory = Factory.forProtocol(Sniff)
    listening = [reactor.listenTCP(0, factory, interface="127.0.0.1") for _ in range(ports)]  # type: ignore[attr-defined]
    print("READY " + " ".join(str(port.getHost().port) for port in listening), flush=True)
    reactor.run()  # type: ignore[attr-defined]


class H2Site:
    """The site as a child process: ``with H2Site(ports=2) as site: site.urls``, ``site.requests()``."""

    def __init__(
        self,
        ports: int = 1,
        pages: int = 40,
        alpn: str = "h2,http/1.1",
        directory: Path | None = None,
        goaway_after: int = 0,
    ):
        self.count, self.pages, self.alpn, self.goaway_after = ports, pages, alpn, goaway_after
        self.directory = directory or Path(tempfile.mkdtemp(prefix="trawl-h2site-"))
        self.log_path = self.directory / f"h2site-{os.getpid()}-{id(self)}.jsonl"
        self.ports: list[int] = []
        self._process: subprocess.Popen[str] | None = None

    @property
    def origins(self) -> list[str]:
        return [f"https://127.0.0.1:{port}" for port in self.ports]

    def __enter__(self) -> H2Site:
        root = Path(__file__).resolve().parents[2]
        command = [
            sys.executable, "-m", "tests.servers.h2site", "--ports", str(self.count),
            "--pages", str(self.pages), "--alpn", self.alpn, "--log", str(self.log_path),
            "--cert-dir", str(self.directory), "--goaway-after", str(self.goaway_after),
        ]  # fmt: skip
        self._process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # blocks until the ports listen (or the process died)
        if not line.startswith("READY "):
            self.__exit__()
            raise RuntimeError(f"h2site did not start: {line!r}")
        self.ports = [int(port) for port in line.split()[1:]]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
            self._process = None

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The log so far (``kind``: only that event)."""
        if not self.log_path.exists():
            return []
        rows = [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines() if line]
        return [row for row in rows if kind is None or row["event"] == kind]

    def requests(self) -> list[dict[str, Any]]:
        return self.events("request")

    def mark(self) -> int:
        """How many log lines there are now: :meth:`since` reads what came after."""
        return len(self.events())

    def since(self, mark: int, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self.events()[mark:]
        return [row for row in rows if kind is None or row["event"] == kind]


def streams_per_connection(requests: list[dict[str, Any]]) -> Counter[int]:
    """Requests per connection (by the peer's port)."""
    return Counter(row["peer"] for row in requests)


def main() -> None:  # pragma: no cover
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=1)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--alpn", default="h2,http/1.1")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--cert-dir", type=Path, default=None)
    parser.add_argument("--goaway-after", type=int, default=0, help="an HTTP/2 connection's last request")
    args = parser.parse_args()
    cert_dir = args.cert_dir or Path(tempfile.mkdtemp(prefix="trawl-h2site-"))
    serve(args.ports, args.pages, args.alpn, args.log, cert_dir, args.goaway_after)


if __name__ == "__main__":  # pragma: no cover
    main()
