"""What the export tests share: an upstream that is down, and the files a run leaves half-written.

``DOWN`` is a base URL nothing listens on (connection refused at once);
:func:`leftovers` names the ``.part`` files left in a run's working directory.
"""

from __future__ import annotations

from pathlib import Path

DOWN = "http://127.0.0.1:9"  # nothing listens on the discard port: connection refused


def leftovers(workdir: Path) -> list[str]:
    return [path.name for path in workdir.iterdir() if path.name.endswith(".part")]
