"""API keys of a source: read from settings or environment, used in turn, rested.

``URLSCAN_API_KEYS=k1,k2`` (or ``URLSCAN_API_KEY=k1``, in waymore's
``config.yml`` given as ``-a config=``, as a Scrapy setting or an environment
variable) gives a ring of keys. Requests take the next key that
is not resting; a key that hit its quota rests until the reset the API
announced; a key the API refused (401/403) is dropped for the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trawl.common.secrets import register_secret
from trawl.pipeline.filters import load_config_file
from trawl.sources.arguments import split_list


def read_keys(settings: Mapping[str, Any], name: str, config: str | None = None) -> list[str]:
    """Keys from ``NAMES``/``NAME``: the config file first, then settings, then the environment.

    ``config``: a waymore ``config.yml`` (``-a config=``), whose ``VIRUSTOTAL_API_KEY:``,
    ``URLSCAN_API_KEY:``... were ignored without a word although its filters
    applied. It ranks above settings as its filters do
    (README: ``settings.py``, ``-s``, ``-a config=``, ``-a``, lowest first).
    """
    layers: list[Mapping[str, Any]] = [settings, os.environ]
    if config:
        file = load_config_file(config)
        layers.insert(0, {key.upper(): value for key, value in file.items() if value is not None})
    for source in layers:
        for key_name in (name + "S", name):
            value = source.get(key_name)
            keys = split_list(value)
            if keys:
                for key in keys:
                    register_secret(key)
                return list(dict.fromkeys(keys))
    return []


@dataclass
class KeyRing:
    keys: list[str]
    resting: dict[str, float] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    _turn: int = 0

    @property
    def usable(self) -> list[str]:
        return [k for k in self.keys if k not in self.dropped]

    def next_key(self, now: float | None = None) -> str | None:
        """The next key not resting, in turn; ``None`` if all rest (or none is left)."""
        now = time.time() if now is None else now
        usable = self.usable
        for offset in range(len(usable)):
            key = usable[(self._turn + offset) % len(usable)]
            if self.resting.get(key, 0) <= now:
                self._turn = (self._turn + offset + 1) % max(len(usable), 1)
                return key
        return None

    def rest(self, key: str, until: float) -> None:
        self.resting[key] = max(until, self.resting.get(key, 0))

    def drop(self, key: str) -> None:
        self.dropped.add(key)

    def wake_time(self) -> float | None:
        """When the first resting key becomes usable again."""
        times = [self.resting.get(k, 0) for k in self.usable]
        return min(times) if times else None

    def label(self, key: str) -> str:
        """How a key is named in logs: its position, never its value."""
        return f"key #{self.keys.index(key) + 1}"
