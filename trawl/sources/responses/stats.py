"""The responses source's statistics (Scrapy stats keys), read by its summary line and by tests."""

from __future__ import annotations

URLS = "responses/urls"  #: stored URLs selected
CAPTURES = "responses/captures"  #: captures chosen from the CDX answers (or read from local files)
INDEXED_BEFORE = "responses/indexed_before"  #: digests the index held at the start
DOWNLOADED = "responses/downloaded"  #: replays downloaded and stored
FILES = "responses/files"  #: files written (downloaded or local)
BYTES = "responses/bytes"  #: bytes written
STORED_BEFORE = "responses/stored_before"  #: rows whose digest was stored by an earlier run
SHARED_IN_RUN = "responses/shared_digest"  #: rows whose digest another row of this run fetched
NO_MEMENTO = "responses/no_memento"  #: "no memento" answers: counted, not stored
KNOWN_MISSING = "responses/known_missing"  #: captures indexed as "no memento" by an earlier run
FAILED = "responses/failed"  #: downloads that failed (HTTP error, unreachable)
TOO_BIG = "responses/too_big"  #: captures over RESPONSES_MAX_BYTES
OVER_RUN_CAP = "responses/over_run_cap"  #: captures left out once RESPONSES_MAX_RUN_BYTES was reached
UNSAFE = "responses/unsafe_path"  #: files not written: the path went through a symlink
LOCAL_SKIPPED = "responses/local_skipped"  #: local entries skipped (out of scope, unreadable, links)
MINED = "responses/mined"  #: files mined in this run
MINED_BYTES = "responses/mined_bytes"  #: bytes of the files mined
MINED_BEFORE = "responses/mined_before"  #: digests an earlier run mined (not mined again)
MINE_FAILED = "responses/mine_failed"  #: files that could not be mined (unreadable, a reader's error)
ENDPOINTS = "responses/endpoints"  #: endpoint records found
SECRETS = "responses/secrets"  #: secrets found (-a secrets=true)
OUT_OF_SCOPE = "responses/out_of_scope"  #: endpoints on hosts outside the target
OUT_OF_SCOPE_HOSTS = "responses/out_of_scope_hosts"  #: distinct hosts of those
WIDENED = "responses/widened"  #: digests mined before whose captures' span this run widened
