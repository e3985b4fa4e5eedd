"""The mode of the files and folders trawl creates: private to the user by default (``UMASK``).

A store holds every URL a user collected, some with tokens in their query
strings; a log names the targets; an export is the store's view of a domain.
Under a custom ``STORE_URI``, ``LOG_FILE`` and ``-o``/``-O`` they were created
0644, readable by every account on the machine, while the default store's
folder was 0700. trawl sets the process umask once, before
its first file is opened, from ``UMASK`` (default ``077``): every file any part
of the run creates is then 0600 and every folder 0700 (SQLite's store and its
``-wal``/``-shm``, ``LOG_FILE``, exports, ``JOBDIR`` state, reports, the
Elasticsearch dead letters, and a plugin's own files alike), with no code path
that can forget to ask. A umask only applies to what is created: a file that
exists keeps its mode (``-O`` and reports, which replace a file by renaming a
new one over it, copy the old mode first).

``-s UMASK=022`` gives the usual 0644/0755 (a store a group reads); ``-s
UMASK=`` (empty) keeps the umask trawl was started with (the shell's, or the
one a systemd unit or scrapyd sets).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from typing import Any

from trawl.settings_checks import fail

#: The settings :func:`apply_umask` reads, checked before it runs (with the logging ones).
FILES_SETTINGS = ("UMASK",)
_OCTAL = re.compile(r"(?:0o?)?([0-7]{1,4})")


def parse_umask(raw: Any) -> int | None:
    """``"077"``, ``"0o077"``, ``"0077"`` or an int already read as octal -> the mask; ``""`` -> ``None``
    (keep the inherited umask). Raises ``ValueError`` for anything else."""
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= 0o777:
        return raw
    text = str(raw if raw is not None else "").strip().lower()
    if not text:
        return None
    match = _OCTAL.fullmatch(text)
    if match is None or int(match.group(1), 8) > 0o777:
        raise ValueError(text)
    return int(match.group(1), 8)


def umask_check(settings: Any, name: str, sources: Collection[str] | None) -> None:
    """``UMASK``: an octal mask (``077``, ``022``) or empty."""
    raw = settings.get(name)
    try:
        parse_umask(raw)
    except ValueError:
        raise fail(
            name, "must be an octal umask such as 077 or 022, or empty to keep the inherited one", raw
        ) from None


def apply_umask(settings: Any) -> None:
    """Set the process umask from ``UMASK``; call before the first file is opened (the log file)."""
    mask = parse_umask(settings.get("UMASK"))
    if mask is not None:
        os.umask(mask)
