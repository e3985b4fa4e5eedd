"""One count of a source's finish line (``55 files stored``), declared by the source
(``Source.finish_counts``) and said by trawl.run.finishline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trawl.common.counts import counted


@dataclass(frozen=True)
class Tally:
    """One count of a source's finish line: ``Tally(FILES, "file", "stored")`` -> ``55 files stored``."""

    key: str  #: the stats key counted
    noun: str  #: its noun, singular ("file"); :func:`counted` makes the plural
    verb: str = ""  #: what happened to them ("stored"), if anything
    #: Left out of the line while zero (a count only worth saying when it happened).
    unless_zero: bool = False

    def say(self, stats: dict[str, Any]) -> str:
        text = counted(stats.get(self.key), self.noun)
        return f"{text} {self.verb}" if self.verb else text
