"""A stand-in for Kibana's saved-objects import route (``POST /api/saved_objects/_import``).

``FakeKibana()`` checks a request as Kibana does (method, path with an
optional ``/s/<space>`` prefix, ``kbn-xsrf`` header, multipart ``file`` field
with an ``.ndjson`` name; ``auth=`` the ``Authorization`` header it requires)
and records each import in ``imports``; ``fail_ids=`` names objects it reports
as refused. Used as a context manager; ``url`` is its base URL.
"""

from __future__ import annotations

import json
import re
import threading
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


class FakeKibana:
    """Checks an import request like ``POST /api/saved_objects/_import`` does, and records it."""

    def __init__(self, auth: str | None = None, fail_ids: set[str] | None = None) -> None:
        self.auth = auth
        self.fail_ids = fail_ids or set()
        self.imports: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.answer(404, {"statusCode": 404, "error": "Not Found", "message": "Not Found"})

            def do_POST(self) -> None:
                status, body = fake.check(self.command, self.path, self.headers, self.rfile)
                self.answer(status, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def check(self, method: str, path: str, headers: Any, rfile: Any) -> tuple[int, dict[str, Any]]:
        def bad(message: str, status: int = 400) -> tuple[int, dict[str, Any]]:
            return status, {"statusCode": status, "error": "Bad Request", "message": message}

        length = int(headers.get("Content-Length") or 0)
        body = rfile.read(length)
        parts = urlsplit(path)
        match = re.fullmatch(r"(?:/s/([a-z0-9_-]+))?/api/saved_objects/_import", parts.path)
        if method != "POST" or match is None:
            return 404, {"statusCode": 404, "error": "Not Found", "message": "Not Found"}
        if self.auth is not None and headers.get("Authorization") != self.auth:
            return 401, {
                "statusCode": 401,
                "error": "Unauthorized",
                "message": "[security_exception] unable to authenticate",
            }
        if headers.get("kbn-xsrf") is None:
            return bad("Request must contain a kbn-xsrf header.")
        content_type = headers.get("Content-Type", "")
        if not content_type.startswith("multipart/form-data; boundary="):
            return 415, {
                "statusCode": 415,
                "error": "Unsupported Media Type",
                "message": "Unsupported Media Type",
            }
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
        files = [
            p for p in message.iter_parts() if p.get_param("name", header="content-disposition") == "file"
        ]
        if len(files) != 1:
            return bad("[request body.file]: expected value of type [object] but got [undefined]")
        filename = files[0].get_filename() or ""
        if not filename.endswith(".ndjson"):
            return bad(f"Invalid file extension {Path(filename).suffix or filename}")
        objects = [
            json.loads(line) for line in files[0].get_payload(decode=True).splitlines() if line.strip()
        ]
        query = parse_qs(parts.query)
        self.imports.append(
            {
                "space": match.group(1) or "default",
                "overwrite": query.get("overwrite") == ["true"],
                "objects": objects,
            }
        )
        errors = [
            {
                "id": o["id"],
                "type": o["type"],
                "title": o["attributes"]["title"],
                "error": {"type": "missing_references", "references": []},
            }
            for o in objects
            if o["id"] in self.fail_ids
        ]
        ok = [o for o in objects if o["id"] not in self.fail_ids]
        result: dict[str, Any] = {
            "success": not errors,
            "successCount": len(ok),
            "successResults": [{"type": o["type"], "id": o["id"], "meta": {}} for o in ok],
        }
        if errors:
            result["errors"] = errors
        return 200, result

    def __enter__(self) -> FakeKibana:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
