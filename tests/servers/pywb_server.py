"""A real pywb ``wayback`` process serving a CDX API over a generated WARC.

Why: trawl talks to CDX servers (pywb, IA-style); mocking the HTTP layer
would encode our *assumptions* about the dialect.  Running the real pywb
(2.10, from the venv) keeps the tests honest.  See ``PYWB_DIALECT.md`` next
to this file for what pywb actually answers.

Everything is built with pywb's own tooling (``wb-manager init`` / ``add``)
except the optional ZipNum cluster, which pywb can *serve* but has no command
to *build*; :func:`build_zipnum` writes the (simple, documented) format.
"""

from __future__ import annotations

import gzip
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import timestamp_to_iso_date
from warcio.warcwriter import WARCWriter

__all__ = ["write_warc", "build_zipnum", "PywbServer"]

_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found"}


def write_warc(path: str | Path, captures: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``captures`` as gzipped WARC ``response`` records.

    Each capture is ``{"url", "timestamp" (14 digits), "status", "mime",
    "body"}``.  WARC-Date is derived from ``timestamp`` so that the CDX
    timestamp pywb indexes is exactly the one the test asked for.  3xx
    responses get a ``Location`` header (optional ``"location"`` key, default
    ``/``) so they look like real redirects; pywb's CDXJ does not index it.
    """
    path = Path(path)
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for cap in captures:
            ts = str(cap["timestamp"])
            if len(ts) != 14 or not ts.isdigit():
                raise ValueError(f"timestamp must be 14 digits: {ts!r}")
            status = int(cap.get("status", 200))
            body: bytes = cap.get("body", b"")
            headers = [
                ("Content-Type", str(cap.get("mime", "text/html"))),
                ("Content-Length", str(len(body))),
            ]
            if 300 <= status < 400:
                headers.append(("Location", str(cap.get("location", "/"))))
            http_headers = StatusAndHeaders(
                f"{status} {_REASONS.get(status, 'Status')}", headers, protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                str(cap["url"]),
                "response",
                payload=io.BytesIO(body),
                http_headers=http_headers,
                warc_headers_dict={"WARC-Date": timestamp_to_iso_date(ts)},
            )
            writer.write_record(record)
    return path


def pywb_bin() -> Path:
    """Where ``wayback`` and ``wb-manager`` are: pywb's own virtualenv (``.venv-pywb``, made by
    ``make setup``: pywb pins redis==2.10.6, trawl needs redis>=5), ``TRAWL_PYWB_BIN``, or beside
    this Python."""
    named = os.environ.get("TRAWL_PYWB_BIN")
    if named:
        return Path(named)
    own = Path(__file__).resolve().parents[2] / ".venv-pywb" / "bin"
    return own if (own / "wayback").exists() else Path(sys.executable).parent


def build_zipnum(cdxj: Path, out_dir: Path, lines_per_block: int, name: str = "cluster") -> Path:
    """Convert a sorted CDXJ file into a pywb ZipNum cluster; return the ``.idx``.

    Layout (same as pywb's ``sample_archive/zipcdx``):

    * ``<name>.cdx.gz`` -- concatenated gzip members, one per block of
      ``lines_per_block`` CDXJ lines;
    * ``<name>.idx`` -- one line per block:
      ``<first urlkey> <first timestamp>\\t<part>\\t<offset>\\t<length>\\t<block no, 1-based>``;
    * ``<name>.loc`` -- ``<part>\\t<path of .cdx.gz>`` (pywb resolves the part name
      through this file, found next to the ``.idx``).

    pywb pages over *blocks* (``pageSize`` = blocks per page), so small blocks
    are what make paging observable with a handful of captures.
    """
    if lines_per_block < 1:
        raise ValueError("lines_per_block must be >= 1")
    lines = [ln for ln in cdxj.read_bytes().splitlines(keepends=True) if ln.strip()]
    lines.sort()
    gz_path = out_dir / f"{name}.cdx.gz"
    idx_lines: list[str] = []
    offset = 0
    with gz_path.open("wb") as gz:
        for blockno, start in enumerate(range(0, len(lines), lines_per_block), start=1):
            block = lines[start : start + lines_per_block]
            data = gzip.compress(b"".join(block))
            gz.write(data)
            urlkey, ts = block[0].decode("utf-8").split(" ", 2)[:2]
            idx_lines.append(f"{urlkey} {ts}\t{name}\t{offset}\t{len(data)}\t{blockno}\n")
            offset += len(data)
    idx_path = out_dir / f"{name}.idx"
    idx_path.write_text("".join(idx_lines), encoding="utf-8")
    (out_dir / f"{name}.loc").write_text(f"{name}\t{gz_path}\n", encoding="utf-8")
    return idx_path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PywbServer:
    """Context manager running ``wayback`` over a temp collection.

    >>> with PywbServer(captures) as srv:          # doctest: +SKIP
    ...     urlopen(srv.cdx_url + "?url=example.com/*&output=json")

    ``zipnum=True`` replaces the plain ``indexes/index.cdxj`` with a ZipNum
    cluster of ``lines_per_block`` lines per block, so ``showNumPages`` /
    ``page`` / ``pageSize`` actually page.  ``pagesize_blocks`` sets pywb's
    default page size (its ``max_blocks`` config, default 10) used when the
    request has no ``pageSize``.
    """

    def __init__(
        self,
        captures: Sequence[Mapping[str, Any]],
        collection: str = "trawl",
        *,
        zipnum: bool = False,
        lines_per_block: int = 2,
        pagesize_blocks: int | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        if pagesize_blocks is not None and not zipnum:
            raise ValueError("pagesize_blocks only applies to zipnum=True (plain CDXJ cannot page)")
        self.captures = list(captures)
        self.collection = collection
        self.zipnum = zipnum
        self.lines_per_block = lines_per_block
        self.pagesize_blocks = pagesize_blocks
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self.root: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._log: IO[bytes] | None = None  # wayback's stdout+stderr, for error messages

    # -- public URLs --------------------------------------------------------
    @property
    def base_url(self) -> str:
        """Collection root, e.g. ``http://127.0.0.1:PORT/trawl``."""
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/{self.collection}"

    @property
    def cdx_url(self) -> str:
        """CDX endpoint (pywb: ``/<coll>/cdx``); append ``?url=...``."""
        return self.base_url + "/cdx"

    @property
    def index_dir(self) -> Path:
        assert self.root is not None
        return self.root / "collections" / self.collection / "indexes"

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> PywbServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="trawl-pywb-")
        self.root = Path(self._tmp.name)
        bindir = pywb_bin()
        warc = write_warc(self.root / "captures.warc.gz", self.captures)

        def run(*args: str) -> None:
            res = subprocess.run(
                [str(bindir / args[0]), *args[1:]],
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if res.returncode != 0:
                raise RuntimeError(f"{args} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")

        run("wb-manager", "init", self.collection)
        run("wb-manager", "add", self.collection, str(warc))  # copies + autoindexes to index.cdxj

        config_lines = []
        if self.zipnum:
            cdxj = self.index_dir / "index.cdxj"
            build_zipnum(cdxj, self.index_dir, self.lines_per_block)
            # pywb merges every *.cdx/*.cdxj/*.idx in indexes/ (*.cdx.gz is
            # ignored): drop the plain index so only the cluster answers.
            cdxj.unlink()
            if self.pagesize_blocks is not None:
                # auto-collections hand the global config to ZipNumIndexSource
                config_lines.append(f"max_blocks: {int(self.pagesize_blocks)}")
        (self.root / "config.yaml").write_text("\n".join(config_lines) + "\n")

        self.port = _free_port()
        self._log = tempfile.TemporaryFile(dir=self.root)
        # pywb's frontend calls its own warcserver over HTTP via `requests`:
        # keep any ambient proxy settings away from loopback.
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        self._proc = subprocess.Popen(
            [
                str(bindir / "wayback"),
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-d",
                str(self.root),
            ],
            cwd=self.root,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Poll the CDX endpoint (not a fixed sleep) until it answers HTTP 200."""
        assert self._proc is not None
        probe = self.cdx_url + "?" + urllib.parse.urlencode({"url": "example.com", "limit": "1"})
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.05
        last_err: Exception | None = None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"wayback exited with {self._proc.returncode} before serving:\n{self._output()}"
                )
            try:
                with opener.open(probe, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError) as e:  # not listening yet
                last_err = e
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        raise TimeoutError(
            f"pywb CDX endpoint {probe} not ready after {self.startup_timeout}s "
            f"(last error: {last_err!r}); server output:\n{self._output()}"
        )

    def _output(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-8000:]

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
