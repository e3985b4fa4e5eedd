"""A ``MINING_EXTRACTOR`` for the tests: the real reader, plus every ``AKIA...`` key as a secret.

Secrets detection is the readers' part of issue 18 (``trawl/mining/extract.py``);
the mining stage's part is to store what a reader finds and mask it in logs,
which this wrapper lets a test check whatever reader is in place.
"""

from __future__ import annotations

import re

from trawl.mining import FileFindings, Secret, extract_file

_KEY = re.compile(rb"AKIA[0-9A-Z]{16}")


def extract(body: bytes, url: str, mime: str | None = None, *, secrets: bool = False) -> FileFindings:
    findings = extract_file(body, url, mime, secrets=secrets)
    if secrets:
        known = {s.value for s in findings.secrets}
        for match in _KEY.finditer(body):
            value = match.group().decode()
            if value not in known:
                line = body.count(b"\n", 0, match.start()) + 1
                findings.secrets.append(Secret("aws-access-key-id", value, line))
    return findings
