"""Resuming a crawl: which run a ``JOBDIR`` belongs to.

Scrapy's own JOBDIR persistence (a request queue and a seen-requests file on
disk) loses the requests in flight when the process is killed: they were
marked seen but never answered, so a resumed run would never fetch them. trawl
resumes differently. The store keeps a ledger of the pages each run stored,
written in the same transaction as the page's URLs; ``JOBDIR`` only remembers
the run id. A crawl started again with the same ``-s JOBDIR=`` goes on under
the same run: pages in the ledger are skipped, every other page is fetched,
and capture counts come out as if the run had never stopped.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

RESUMABLE = "TRAWL_JOBDIR"
#: Internal setting: the job (one ``scrapy crawl all``) a crawler's run belongs to; set by
#: :func:`trawl.run.crawl_all.start_all`. A crawl without it is a job of its own (its run id).
JOB_ID = "TRAWL_JOB"


def _state_file(jobdir: str, source: str) -> Path:
    return Path(jobdir).expanduser() / f"trawl-{source}.json"


def run_id_for(jobdir: str, source: str) -> tuple[str, bool]:
    """(run id, resumed): the unfinished run of this job, or a new one."""
    path = _state_file(jobdir, source)
    try:
        state = json.loads(path.read_text())
        if not state.get("finished") and state.get("run_id"):
            return str(state["run_id"]), True
    except (OSError, ValueError):
        pass
    run_id = uuid.uuid4().hex
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run_id": run_id, "finished": False}))
    return run_id, False


def record_end(jobdir: str, source: str, run_id: str, reason: str, finished: bool) -> None:
    """How the run ended (``shutdown``, ``store_error``...); only a complete run is ``finished``.

    An unfinished run is taken up again by the next crawl with this ``JOBDIR``.
    """
    state = {"run_id": run_id, "finished": finished, "reason": reason}
    _state_file(jobdir, source).write_text(json.dumps(state))
