"""A unit of queued work: one source's run for one domain, as the JSON a Redis list holds.

``trawl enqueue example.com -a sources=wayback,otx`` becomes one task per
(domain, source), so that one domain's sources spread over every worker and a
source that fails or kills its worker is retried or dead-lettered alone. A task
carries the ``-a`` arguments its source takes (``crawl all`` refuses the others)
and the ``-s`` settings given to ``enqueue``; the worker runs it as ``trawl crawl
all`` for that one source, so a task's run is exactly a ``crawl all`` run:
validation, the store and its provenance merge, the run record, the outcome.

Why not page requests (scrapy-redis's unit): a source keeps per-run state in
its spider (urlscan's ``search_after`` chain, Common Crawl's index list, the
resume ledger, the run record); a whole run is the unit whose state is whole in
one process. See docs/distributed.md, "Queue and workers".
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from trawl.errors import TrawlUsageError


@dataclass(frozen=True)
class Task:
    domain: str
    source: str
    #: The ``-a`` arguments this source takes, ``domain`` included.
    arguments: dict[str, str]
    #: The ``-s`` settings given to ``trawl enqueue`` (the worker's own ``-s`` win over them).
    settings: dict[str, str] = field(default_factory=dict)
    #: Whether the user named the source (``-a sources=``): unnamed and keyless is skipped, not failed.
    explicit: bool = False
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    enqueued: float = field(default_factory=time.time)
    #: A join task: the spread run (its owner's task id) whose queued pages this task's crawler fetches.
    join: str = ""
    #: Which of the run's join tasks (they differ by it, so that the queue keeps each).
    joiner: int = 0

    def to_json(self) -> bytes:
        data: dict[str, Any] = {
            "id": self.id,
            "domain": self.domain,
            "source": self.source,
            "arguments": self.arguments,
            "settings": self.settings,
            "explicit": self.explicit,
            "enqueued": self.enqueued,
        }
        if self.join:
            data["join"], data["joiner"] = self.join, self.joiner
        return orjson.dumps(data)

    def joining(self, index: int) -> Task:
        """Join task ``index`` of this task's spread run: the same source and domain, no start."""
        return Task(self.domain, self.source, dict(self.arguments), dict(self.settings), self.explicit,
                    join=self.join or self.id, joiner=index)  # fmt: skip

    @classmethod
    def from_json(cls, raw: bytes | str) -> Task:
        """A task read back; ``ValueError`` for anything that is not one (say so, never drop it silently)."""
        try:
            data = orjson.loads(raw)
            return cls(
                domain=str(data["domain"]),
                source=str(data["source"]),
                arguments={str(k): str(v) for k, v in dict(data["arguments"]).items()},
                settings={str(k): str(v) for k, v in dict(data.get("settings") or {}).items()},
                explicit=bool(data.get("explicit", False)),
                id=str(data["id"]),
                enqueued=float(data.get("enqueued") or 0.0),
                join=str(data.get("join") or ""),
                joiner=int(data.get("joiner") or 0),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a trawl task ({type(exc).__name__}: {exc}): {raw[:200]!r}") from None

    @property
    def fingerprint(self) -> str:
        """Same domain, source, arguments and settings: the same work, queued once at a time."""
        key = orjson.dumps(
            [self.domain, self.source, self.arguments, self.settings, self.explicit]
            + ([self.join, self.joiner] if self.join else []),
            option=orjson.OPT_SORT_KEYS,
        )
        return hashlib.sha1(key).hexdigest()

    def command(
        self, executable: list[str], known_sources: Iterable[str], own: Mapping[str, str]
    ) -> list[str]:
        """``trawl crawl all`` for this task's source, the worker's own ``-s`` (``own``) over the task's.

        An unnamed source is selected by excluding every other one, so that ``crawl
        all`` treats it as unnamed (skipped without a key, not failed).
        """
        args = [*executable, "crawl", "all"]
        if self.explicit:
            args += ["-a", f"sources={self.source}"]
        else:
            others = sorted(name for name in known_sources if name not in (self.source, "all"))
            args += ["-a", f"exclude={','.join(others)}"] if others else []
        for name, value in self.arguments.items():
            args += ["-a", f"{name}={value}"]
        for name, value in {**self.settings, **own}.items():
            args += ["-s", f"{name}={value}"]
        return args


def read_domains(given: Iterable[str], files: Iterable[str]) -> list[str]:
    """The domains given, then those of ``--file`` (one a line, ``#`` comments), once each."""
    domains = [d.strip() for d in given if d.strip()]
    for path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise TrawlUsageError(f"--file {path}: cannot read it: {exc}") from None
        domains += [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]
    if not domains:
        raise TrawlUsageError(
            "give at least one domain, e.g. trawl enqueue example.com (or --file scope.txt)"
        )
    return list(dict.fromkeys(domains))


def summarize(raw: bytes) -> dict[str, Any]:
    """What ``trawl queue`` shows of a task: never its settings (API keys travel in them)."""
    task = Task.from_json(raw)
    return {"id": task.id, "domain": task.domain, "source": task.source}
