"""A real scrapyd on 127.0.0.1 for tests, with trawl deployed to it the way a user deploys it.

::

    with ScrapydServer(tmp_path / "scrapyd") as scrapyd:
        scrapyd.deploy(ROOT)                                   # scrapyd-deploy, as a user runs it
        job = scrapyd.schedule("wayback", domain="example.com", settings={"STORE_URI": ...})
        scrapyd.wait_finished(job, timeout=60)
        assert scrapyd.job_log(job).splitlines()[-1] ...

The server writes its ``scrapyd.conf`` into ``workdir`` (a free port, every directory
under ``workdir``, a short ``poll_interval`` so that a scheduled job starts at once),
runs the virtualenv's ``scrapyd`` script there, and is ready once ``daemonstatus.json``
answers. Nothing sleeps for a fixed time: every wait polls, with a deadline.

``deploy`` copies the project (without virtualenvs, ``.git``, build output and stores) into
``workdir`` and runs ``scrapyd-deploy`` there against a ``[deploy:scrapyd-test]`` target
given through ``$XDG_CONFIG_HOME/scrapy.cfg`` (scrapyd-client merges it with the
project's own ``[deploy]`` section): the project's ``scrapy.cfg`` is used as committed,
and the egg build (``setup.py clean``, ``bdist_egg``) never writes into the source tree,
so tests in parallel can deploy from the same checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import urlopen

PROJECT = "trawl"
TARGET = "scrapyd-test"
_BIN = Path(sys.executable).parent
_COPY_IGNORE = shutil.ignore_patterns(
    ".venv*", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
    "*.db", "*.db-wal", "*.db-shm", "*.egg", ".scrapy",
)  # fmt: skip


class ScrapydError(RuntimeError):
    """scrapyd did not start, refused a request, or a job did not finish in time."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _script(name: str) -> list[str]:
    """The virtualenv's console script, else the module run by this interpreter."""
    path = _BIN / name
    if path.exists():
        return [str(path)]
    return [sys.executable, "-m", name.replace("-", "_")]


class ScrapydServer:
    """A scrapyd subprocess on 127.0.0.1 (module docstring); a context manager."""

    def __init__(
        self,
        workdir: Path,
        extra_conf: dict[str, dict[str, str]] | None = None,
        *,
        max_proc: int = 4,
        env: dict[str, str | None] | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.workdir = Path(workdir).resolve()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.logs_dir = self.workdir / "logs"
        self.items_dir = self.workdir / "items"
        self.dbs_dir = self.workdir / "dbs"
        self.eggs_dir = self.workdir / "eggs"
        self.conf_path = self.workdir / "scrapyd.conf"
        self.env = dict(os.environ)
        for name, value in (env or {}).items():  # None: unset it for scrapyd and its jobs
            if value is None:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        # scrapyd sets these per job; one left over from the test's environment would pick a project.
        for name in ("SCRAPY_PROJECT", "SCRAPYD_EGG_VERSION"):
            self.env.pop(name, None)
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._spiders: dict[str, str] = {}
        self._deploys = 0
        self._write_conf(max_proc, extra_conf or {})

    # --- lifecycle --------------------------------------------------------------------------

    def _write_conf(self, max_proc: int, extra: dict[str, dict[str, str]]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        scrapyd = {
            "bind_address": "127.0.0.1",
            "http_port": str(self.port),
            "eggs_dir": str(self.eggs_dir),
            "logs_dir": str(self.logs_dir),
            "items_dir": str(self.items_dir),
            "dbs_dir": str(self.dbs_dir),
            "jobs_to_keep": "100",
            "finished_to_keep": "100",
            "max_proc": str(max_proc),
            "poll_interval": "0.1",
        }
        sections = {"scrapyd": {**scrapyd, **extra.get("scrapyd", {})}}
        sections.update({name: opts for name, opts in extra.items() if name != "scrapyd"})
        lines = []
        for name, options in sections.items():
            lines.append(f"[{name}]")
            lines += [f"{key} = {value}" for key, value in options.items()]
            lines.append("")
        self.conf_path.write_text("\n".join(lines), encoding="utf-8")

    def start(self) -> ScrapydServer:
        if self.process is not None:
            raise ScrapydError("scrapyd is already running")
        self._stdout = (self.workdir / "scrapyd.stdout").open("ab")
        self._stderr = (self.workdir / "scrapyd.stderr").open("ab")
        self.process = subprocess.Popen(
            _script("scrapyd"),
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.process.poll() is not None:
                raise ScrapydError(f"scrapyd exited with status {self.process.returncode}:\n{self._output()}")
            try:
                status = self._get("daemonstatus.json", timeout=2)
                if status.get("status") == "ok":
                    return self
            except (OSError, URLError, ValueError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                waited = f"after {self.start_timeout} s"
                raise ScrapydError(f"scrapyd not ready on {self.url} {waited}:\n{self._output()}")
            time.sleep(0.05)

    def stop(self, timeout: float = 20.0) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        self._stdout.close()
        self._stderr.close()

    def restart(self) -> None:
        """Stop and start again on the same port, with the same directories (eggs, queues, logs kept)."""
        self.stop()
        self.start()

    def __enter__(self) -> ScrapydServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _output(self) -> str:
        """scrapyd's own stderr (where it logs), the end of it."""
        parts = []
        for name in ("scrapyd.stderr", "scrapyd.stdout"):
            path = self.workdir / name
            if path.exists():
                parts.append(f"--- {name} ---\n" + path.read_text(errors="replace")[-4000:])
        return "\n".join(parts)

    # --- HTTP API --------------------------------------------------------------------------

    def _get(self, endpoint: str, timeout: float = 10, **params: str) -> dict[str, Any]:
        query = f"?{urlencode(params)}" if params else ""
        with urlopen(f"{self.url}{endpoint}{query}", timeout=timeout) as response:
            return json.loads(response.read())

    def _post(self, endpoint: str, fields: list[tuple[str, str]], timeout: float = 60) -> dict[str, Any]:
        with urlopen(f"{self.url}{endpoint}", data=urlencode(fields).encode(), timeout=timeout) as response:
            answer = json.loads(response.read())
        if answer.get("status") != "ok":
            raise ScrapydError(f"{endpoint} refused {fields!r}: {answer}")
        return answer

    def deploy(self, project_dir: Path, version: str | None = None) -> str:
        """``scrapyd-deploy`` the project in ``project_dir`` (a copy of it, see the module docstring)."""
        self._deploys += 1
        version = version or str(time.time_ns() // 1000)  # increasing: scrapyd runs the latest
        build = self.workdir / f"deploy-{self._deploys}"
        shutil.copytree(project_dir, build / "project", ignore=_COPY_IGNORE)
        config = build / "config"
        config.mkdir()
        (config / "scrapy.cfg").write_text(f"[deploy:{TARGET}]\nurl = {self.url}\n", encoding="utf-8")
        proc = subprocess.run(
            [*_script("scrapyd-deploy"), TARGET, "-v", version],
            cwd=build / "project",
            env=dict(self.env, XDG_CONFIG_HOME=str(config)),
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            raise ScrapydError(f"scrapyd-deploy exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
        if answer.get("status") != "ok" or answer.get("version") != version:
            raise ScrapydError(f"scrapyd-deploy: unexpected answer {answer}\n{proc.stderr}")
        return version

    def schedule(self, spider: str, settings: dict[str, object] | None = None, **fields: object) -> str:
        """``schedule.json``: spider arguments as form fields, settings as ``setting=NAME=VALUE``."""
        form = [("project", PROJECT), ("spider", spider)]
        form += [(key, str(value)) for key, value in fields.items()]
        form += [("setting", f"{name}={value}") for name, value in (settings or {}).items()]
        jobid = self._post("schedule.json", form)["jobid"]
        self._spiders[jobid] = spider
        return jobid

    def jobs(self) -> dict[str, list[dict[str, Any]]]:
        return self._get("listjobs.json", project=PROJECT)

    def cancel(self, jobid: str) -> str | None:
        """``cancel.json``: a pending job leaves the queue, a running one gets SIGINT; its previous state."""
        return self._post("cancel.json", [("project", PROJECT), ("job", jobid)])["prevstate"]

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Cancel every pending and running job and poll until none is left.

        Each job is cancelled once, and again every 5 s while it runs (Scrapy stops at once on
        a second SIGINT); a job that ends while it is being cancelled is not an error.
        """
        cancelled: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        while (jobs := self.jobs())["pending"] or jobs["running"]:
            for job in jobs["pending"] + jobs["running"]:
                if time.monotonic() - cancelled.get(job["id"], float("-inf")) >= 5:
                    cancelled[job["id"]] = time.monotonic()
                    try:
                        self.cancel(job["id"])
                    except (HTTPError, ScrapydError):  # it ended meanwhile: scrapyd could not signal it
                        pass
            if time.monotonic() > deadline:
                raise ScrapydError(f"jobs still pending or running {timeout} s after cancel.json: {jobs}")
            time.sleep(0.05)

    def wait_started(self, jobid: str, timeout: float = 120.0) -> dict[str, Any]:
        """Poll ``listjobs.json`` until the job is running or finished; its entry there (``start_time``)."""
        return self.wait_finished(jobid, timeout, states=("running", "finished"))

    def wait_finished(
        self, jobid: str, timeout: float = 120.0, states: tuple[str, ...] = ("finished",)
    ) -> dict[str, Any]:
        """Poll ``listjobs.json`` until the job is finished (or in one of ``states``); its entry there."""
        deadline = time.monotonic() + timeout
        while True:
            jobs = self.jobs()
            for job in (job for state in states for job in jobs[state]):
                if job["id"] == jobid:
                    return job
            if time.monotonic() > deadline:
                now_in = [s for s in ("pending", "running") if any(j["id"] == jobid for j in jobs[s])]
                state = now_in[0] if now_in else "unknown to scrapyd"
                tail = self._log_path(jobid)
                log = tail.read_text(errors="replace")[-3000:] if tail.exists() else "(no job log)"
                raise ScrapydError(f"job {jobid} still {state} after {timeout} s; its log ends:\n{log}")
            time.sleep(0.1)

    def _log_path(self, jobid: str) -> Path:
        if jobid in self._spiders:
            return self.logs_dir / PROJECT / self._spiders[jobid] / f"{jobid}.log"
        found = sorted(self.logs_dir.glob(f"{PROJECT}/*/{jobid}.log"))
        return found[0] if found else self.logs_dir / PROJECT / f"{jobid}.log"

    def job_log(self, jobid: str) -> str:
        return self._log_path(jobid).read_text(encoding="utf-8", errors="replace")

    def items_path(self, jobid: str) -> Path:
        """The job's items file, as scrapyd names it (``items_dir/PROJECT/SPIDER/JOB.jl``)."""
        return self.items_dir / PROJECT / self._spiders[jobid] / f"{jobid}.jl"
