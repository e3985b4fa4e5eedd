"""The watch rules (``CRATES_WATCH_FILE``) and what the alerts fired already (its state file).

The rules file is JSON a user may also write by hand::

    {"crates": {"serde": ["version", "yanked", "dependency"]},
     "growth": {"factor": 3.0, "window": 7}}

``crates``: crate names and the events watched for each (a new version, a
version yanked, a new dependency of its current version); ``growth``: a
threshold over all crates (``trends --growth FACTOR --window DAYS``), or absent.
``trawl crates watch`` edits it. Default place: trawl's data directory, beside
the default store (:func:`trawl.stores.location.data_dir`), so a cron job and a
scrapyd job find the same rules.

The state file (``<rules>.state.json`` beside it) holds, per store, what the
last evaluation saw: each watched crate's versions, yanked versions and
dependencies, and the crates over the growth threshold. An alert is the
difference from it, so each event fires once, not again on the next run. Both
files are written whole to a temporary file and renamed over the old one: a
crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trawl.errors import TrawlUsageError
from trawl.stores.location import data_dir

EVENTS = ("version", "yanked", "dependency")
WATCH_FILE_NAME = "crates-watch.json"


def watch_path(value: object) -> Path:
    """``CRATES_WATCH_FILE``, or (empty) ``crates-watch.json`` in trawl's data directory."""
    text = str(value or "").strip()
    return Path(text).expanduser() if text else data_dir() / WATCH_FILE_NAME


def state_path(rules: Path) -> Path:
    return rules.with_name(rules.name.removesuffix(".json") + ".state.json")


def read_events(value: object) -> tuple[str, ...]:
    """``--on``: some of :data:`EVENTS`, comma-separated (or a list); one usage line otherwise."""
    words = value if isinstance(value, list) else str(value).split(",")
    chosen = [str(w).strip().lower() for w in words if str(w).strip()]
    unknown = [w for w in chosen if w not in EVENTS]
    if not chosen or unknown:
        raise TrawlUsageError(f"watch events are some of {', '.join(EVENTS)}, not {value!r}")
    return tuple(e for e in EVENTS if e in chosen)


@dataclass
class Rules:
    """The watchlist and the growth threshold."""

    crates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    growth: tuple[float, int] | None = None

    @property
    def empty(self) -> bool:
        return not self.crates and self.growth is None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "crates": {name: list(events) for name, events in sorted(self.crates.items())}
        }
        if self.growth is not None:
            data["growth"] = {"factor": self.growth[0], "window": self.growth[1]}
        return data


#: The longest download window (``trends --window``, ``top --days``, ``watch growth``): two fit in
#: a year. Past the dump's 90 days the windows read the days ``-a history=`` archived.
MAX_WINDOW = 183


def check_growth(factor: object, window: object) -> tuple[float, int]:
    """A growth threshold: a factor > 1 and a window of 1 to :data:`MAX_WINDOW` days."""
    try:
        f, w = float(str(factor)), int(str(window))
    except ValueError:
        raise TrawlUsageError(
            f"a growth threshold is a factor and a number of days, not {factor!r}/{window!r}"
        ) from None
    if not 1.0 < f < float("inf"):
        raise TrawlUsageError(f"the growth factor must be a number above 1 (3.0: +200%), not {factor!r}")
    if not 1 <= w <= MAX_WINDOW:
        raise TrawlUsageError(
            f"the growth window must be 1 to {MAX_WINDOW} days (two windows in a year), not {window!r}"
        )
    return f, w


def load_rules(path: Path) -> Rules:
    """The rules in ``path`` (none when it does not exist); one usage line for a file that is not rules."""
    data = _read_json(path, "the watch file")
    if data is None:
        return Rules()
    where = f"the watch file {str(path)!r}"
    if not isinstance(data, dict) or not isinstance(data.get("crates", {}), dict):
        raise TrawlUsageError(f'{where} is not a JSON object with "crates": {{name: [events]}}')
    try:
        crates = {str(name): read_events(events) for name, events in data.get("crates", {}).items()}
        growth = data.get("growth")
        threshold = None
        if growth is not None:
            if not isinstance(growth, dict):
                raise TrawlUsageError('"growth" is {"factor": F, "window": DAYS}')
            threshold = check_growth(growth.get("factor"), growth.get("window", 7))
    except TrawlUsageError as exc:
        raise TrawlUsageError(f"{where}: {exc}") from None
    return Rules(crates, threshold)


def save_rules(path: Path, rules: Rules) -> None:
    write_json(path, rules.as_json())


def _read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TrawlUsageError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TrawlUsageError(f"{what} {str(path)!r} is not valid JSON ({exc})") from None


def write_json(path: Path, data: Any) -> None:
    """``data`` as ``path``, atomically (a temporary file renamed over it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        raise TrawlUsageError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None


def load_state(path: Path, store: str) -> dict[str, Any]:
    """What the last evaluation against ``store`` saw (empty: none yet)."""
    data = _read_json(path, "the watch state")
    state = data.get(store) if isinstance(data, dict) else None
    return state if isinstance(state, dict) else {}


def save_state(path: Path, store: str, state: dict[str, Any]) -> None:
    data = _read_json(path, "the watch state")
    data = data if isinstance(data, dict) else {}
    data[store] = state
    write_json(path, data)
