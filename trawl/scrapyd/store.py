"""The schedules table: one SQLite file in scrapyd's ``dbs_dir``, so schedules outlive a restart.

scrapyd keeps its own state there the same way (``<project>.db`` for each
project's queue, ``jobs.db`` for finished jobs with ``SqliteJobStorage``);
the file is ``_trawl_schedules.db``, a name no project's queue can take
(scrapyd's ``dbs_dir = :memory:`` keeps it in memory, as scrapyd does its
queues). All access is from the reactor thread: one connection, a commit
after each change.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime
from typing import Any

from trawl.scrapyd.schedules import UTC, Schedule

FILENAME = "_trawl_schedules.db"

_COLUMNS = (
    "project",
    "name",
    "spider",
    "created",
    "next_run",
    "cron",
    "every",
    "tz",
    "version",
    "priority",
    "args",
    "settings",
    "last_planned",
    "last_run",
    "last_started",
    "last_job",
    "last_outcome",
)
_TIMES = {"created", "next_run", "last_planned", "last_run", "last_started"}
_JSON = {"args", "settings"}


def path_from_config(config: Any) -> str:
    """Where the table lives for a scrapyd ``Config`` (its ``dbs_dir``, created as scrapyd does)."""
    dbs_dir = config.get("dbs_dir", "dbs")
    if dbs_dir == ":memory:":
        return dbs_dir
    os.makedirs(dbs_dir, exist_ok=True)
    return os.path.join(dbs_dir, FILENAME)


def _to_db(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _TIMES:
        return value.astimezone(UTC).isoformat()
    if name in _JSON:
        return json.dumps(value, sort_keys=True)
    return value


def _from_db(name: str, value: Any) -> Any:
    if value is None:
        return {} if name in _JSON else None
    if name in _TIMES:
        return datetime.fromisoformat(value).astimezone(UTC)
    if name in _JSON:
        return json.loads(value)
    return value


class ScheduleStore:
    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS schedules ("
            "project TEXT NOT NULL, name TEXT NOT NULL, spider TEXT NOT NULL,"
            " created TEXT NOT NULL, next_run TEXT NOT NULL, cron TEXT, every INTEGER,"
            " tz TEXT NOT NULL, version TEXT, priority REAL NOT NULL, args TEXT, settings TEXT,"
            " last_planned TEXT, last_run TEXT, last_started TEXT, last_job TEXT, last_outcome TEXT,"
            " PRIMARY KEY (project, name))"
        )
        self.conn.commit()

    def add(self, schedule: Schedule) -> bool:
        """Insert; ``False`` when the project already has a schedule of that name."""
        try:
            self.conn.execute(
                f"INSERT INTO schedules ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                [_to_db(name, getattr(schedule, name)) for name in _COLUMNS],
            )
        except sqlite3.IntegrityError:
            self.conn.rollback()
            return False
        self.conn.commit()
        return True

    def update(self, schedule: Schedule, **changes: Any) -> None:
        """Set fields on the schedule and in its row."""
        for name, value in changes.items():
            setattr(schedule, name, value)
        assignments = ", ".join(f"{name} = ?" for name in changes)
        self.conn.execute(
            f"UPDATE schedules SET {assignments} WHERE project = ? AND name = ?",
            [*(_to_db(name, value) for name, value in changes.items()), schedule.project, schedule.name],
        )
        self.conn.commit()

    def delete(self, project: str, name: str) -> bool:
        deleted = self.conn.execute(
            "DELETE FROM schedules WHERE project = ? AND name = ?", (project, name)
        ).rowcount
        self.conn.commit()
        return bool(deleted)

    def get(self, project: str, name: str) -> Schedule | None:
        rows = self._select("WHERE project = ? AND name = ?", (project, name))
        return rows[0] if rows else None

    def list(self, project: str | None = None) -> list[Schedule]:
        if project is None:
            return self._select("", ())
        return self._select("WHERE project = ?", (project,))

    def by_job(self, job: str) -> Schedule | None:
        rows = self._select("WHERE last_job = ?", (job,))
        return rows[0] if rows else None

    def _select(self, where: str, params: tuple[Any, ...]) -> list[Schedule]:
        cursor = self.conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM schedules {where} ORDER BY project, name", params
        )
        return [
            Schedule(**{name: _from_db(name, value) for name, value in zip(_COLUMNS, row, strict=True)})
            for row in cursor
        ]

    def close(self) -> None:
        self.conn.close()
