"""Three workers under faults: each round one fault, and the store, the queue and the budgets exact after it.

Three domains x three sources (wayback and commoncrawl, whose pages spread over
the workers, and otx, a task kept whole), each domain on its own fake upstreams
answering after ``--latency`` seconds, into one PostgreSQL store (a throwaway
cluster), queued in a redis-server of their own. Each round queues the nine
tasks with ``trawl enqueue``, starts three ``trawl worker --until-empty --tasks
2`` and applies one fault at a seeded moment (once the store holds a seeded
share of the URLs, and for a role, once a worker has it; a plain task's kill
once a worker runs one, its tasks lasting seconds):

* ``kill-plain``: ``kill -9`` of a worker running an otx task;
* ``kill-owner``, ``kill-joiner``: ``kill -9`` of a spread run's owner, of a joiner;
* ``sigterm``: SIGTERM to a worker holding a task (it finishes what it holds);
* ``redis-stop``: Redis stopped for 10 s (its queue saved to disk), started again on its port;
* ``redis-sleep``: ``DEBUG SLEEP`` 3-6 s (Redis answers nobody meanwhile);
* ``pg-restart``: ``pg_ctl stop -m fast``, 10 s down, started again on its port and folder.

A killed or stopped worker is started again, as an operator's supervisor would.
After each round: the store holds exactly the records of one plain ``trawl crawl
all`` per domain (every URL, its sources and captures, no duplicate row);
nothing is pending, in flight or dead-lettered and no worker logged a dead
letter; every worker not signalled exited 0, and only when the store was
complete and the queue idle; no window of a source's merged request log holds
more than its shared budget, and never more than its concurrency in flight.

    python bench/chaos_distributed.py [--rounds 20] [--seed 1] [--urls 600] [--latency 0.1] [--only FAULT]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import redis  # noqa: E402

from tests.helpers.politeness import max_in_window  # noqa: E402
from tests.servers.commoncrawl import FakeCommonCrawl  # noqa: E402
from tests.servers.devdata import build_dataset, expected_urls  # noqa: E402
from tests.servers.devserver import DEV_KEY, crawl_settings  # noqa: E402
from tests.servers.ia_cdx import FakeCdxServer  # noqa: E402
from tests.servers.inflight import max_in_flight  # noqa: E402
from tests.servers.otx import FakeOtxServer  # noqa: E402
from tests.servers.postgres_server import PostgresServer  # noqa: E402
from tests.servers.redis_server import RedisServer  # noqa: E402
from trawl.distributed.queue import WorkQueue  # noqa: E402

SOURCES = ("wayback", "commoncrawl", "otx")
DOMAINS = ("example.com", "example.org", "example.net")
TRAWL = [sys.executable, "-m", "trawl.cli"]
FAULTS = ("kill-plain", "kill-owner", "kill-joiner", "sigterm", "redis-stop", "redis-sleep", "pg-restart")
#: The shared budgets (requests, seconds) and concurrency: tight enough that the three workers meet them.
BUDGETS = {"wayback": (5, 1.0), "commoncrawl": (5, 1.0), "otx": (5, 1.0)}
CONCURRENCY = 2
SETTINGS = {
    "RATE_LIMITS_ENABLED": "True",
    "RATE_LIMITS": json.dumps({s: f"{n}/{t:g}s" for s, (n, t) in BUDGETS.items()}),
    "SOURCE_CONCURRENCY": json.dumps(dict.fromkeys(SOURCES, CONCURRENCY)),
    "AUTOTHROTTLE_ENABLED": "False",
    "TRAWL_CACHE_DIR": "",
    "PROGRESS_INTERVAL": "0",
}
ARGUMENTS = ["-a", "sources=" + ",".join(SOURCES), "-a", "filters=false", "-a", "cc_indexes=0"]
#: How long Redis and PostgreSQL stay down.
DOWN_FOR = 10.0
#: A round that has not ended by then is a hang: its workers are killed and the round fails.
DEADLINE = 400.0


def settings_args(settings: dict[str, Any]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


def trawl(cwd: Path, *args: str) -> str:
    done = subprocess.run([*TRAWL, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if done.returncode or "Traceback" in done.stderr:
        raise SystemExit(f"trawl {args[0]} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def records(cwd: Path, uri: str) -> list[dict[str, Any]]:
    out = trawl(cwd, "search", "*", "--format", "jsonl", "--store", uri)
    return [json.loads(line) for line in out.splitlines()]


def count_urls(uri: str) -> int | None:
    """URLs in the store now; None while the server is away."""
    try:
        with psycopg.connect(uri, connect_timeout=2) as con:
            row = con.execute("SELECT to_regclass('public.urls') IS NOT NULL").fetchone()
            if not row or not row[0]:
                return 0
            found = con.execute("SELECT count(*) FROM urls").fetchone()
            return int(found[0]) if found else 0
    except psycopg.Error:
        return None


@dataclass
class Worker:
    """One ``trawl worker --until-empty`` process, its output in a file."""

    log: Path
    process: subprocess.Popen[bytes]
    signalled: str = ""  # "kill" or "term" once the fault hit it
    exited_at: float | None = None
    complete_at_exit: bool | None = None  # the store complete and the queue idle when it was seen gone
    replaced: bool = False  # started again by the supervisor

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.text()))

    def holds(self, role: str) -> bool:
        """Whether it runs a task of ``role`` now (its log's starts minus its ends)."""
        if role == "plain":
            return self.count(r"took otx for ") > self.count(
                r"otx for \S+ (done in|handed back|dead-lettered)"
            )
        if role == "owner":
            ended = r"(wayback|commoncrawl) for \S+ (done in|handed back|dead-lettered)"
            return self.count(r"spreading run \w+'s pages \(owner\)") > self.count(ended)
        if role == "joiner":
            return self.count(r"spreading run \w+'s pages \(joiner\)") > self.count(
                r"its share of spread run|left spread run"
            )
        return self.count(r": took |: joined spread run ") > self.count(
            r" done in | handed back | dead-lettered|its share of spread run|left spread run"
        )


@dataclass
class Round:
    number: int
    fault: str
    share: float  # of the expected URLs stored when the fault hits
    delay: float  # seconds after the trigger
    workers: list[Worker] = field(default_factory=list)
    hit_at: float | None = None
    hit_stored: int = 0
    problems: list[str] = field(default_factory=list)
    wall: float = 0.0
    budgets: list[str] = field(default_factory=list)


class Chaos:
    def __init__(self, stack: ExitStack, work: Path, args: argparse.Namespace) -> None:
        self.work = work
        self.args = args
        self.pg = stack.enter_context(PostgresServer())
        self.redis = stack.enter_context(RedisServer(options=["--enable-debug-command", "yes"]))
        self.servers: dict[str, dict[str, Any]] = {}
        self.upstream: dict[str, dict[str, Any]] = {}
        expected: set[str] = set()
        for seed, domain in enumerate(DOMAINS):
            data = build_dataset(args.urls, sources=SOURCES, domain=domain, seed=seed, crawls=2)
            servers = {
                "wayback": FakeCdxServer(data.wayback, lines_per_page=25),
                "commoncrawl": FakeCommonCrawl(data.commoncrawl, collinfo=data.collinfo(), lines_per_block=4),
                "otx": FakeOtxServer(urls=data.otx, valid_keys={DEV_KEY}),
            }
            servers["otx"].max_limit = 10  # 20 pages a domain: an otx task runs for seconds
            for server in servers.values():
                stack.enter_context(server)
            self.servers[domain] = servers
            self.upstream[domain] = {
                k: v for k, v in crawl_settings(servers).items() if k.endswith(("_URL", "_KEY"))
            }
            expected |= expected_urls(data)
        self.expected = expected
        plain = self.pg.create_database("plain")
        for domain in DOMAINS:
            own = {**self.upstream[domain], **SETTINGS, "RATE_LIMITS_ENABLED": "False", "STORE_URI": plain}
            trawl(work, "crawl", "all", "-a", f"domain={domain}", *ARGUMENTS, *settings_args(own))
        self.reference = {r["url"]: r for r in records(work, plain)}
        if set(self.reference) != expected:
            raise SystemExit(
                f"the plain runs stored {len(self.reference)} URLs, not the {len(expected)} expected"
            )
        self.set_latency(args.latency)

    def set_latency(self, latency: float) -> None:
        for servers in self.servers.values():
            for server in servers.values():
                server.latency = latency

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url, socket_timeout=30)

    # --- one round ---------------------------------------------------------------------------

    def round(self, r: Round) -> None:
        client = self.client()
        client.flushall()
        for servers in self.servers.values():
            for server in servers.values():
                server.requests.clear()
                server.spans.clear()
        uri = self.pg.create_database(f"round_{r.number}")
        for domain in DOMAINS:
            trawl(self.work, "enqueue", domain, *ARGUMENTS,
                  *settings_args({**self.upstream[domain], "TRAWL_REDIS_URL": self.redis.url}))  # fmt: skip
        own = {**SETTINGS, "TRAWL_REDIS_URL": self.redis.url, "STORE_URI": uri, "QUEUE_HEARTBEAT": "0.5"}
        started = time.monotonic()
        for _ in range(3):
            r.workers.append(self.start_worker(r, own))
        # An otx task lasts a few seconds, and may be over before a share of the URLs is stored: a plain
        # task's kill waits only for a worker running one.
        target = 0 if r.fault == "kill-plain" else int(r.share * len(self.expected))
        delay = r.delay / 2 if r.fault == "kill-plain" else r.delay
        triggered_at: float | None = None
        outage: threading.Thread | None = None
        while (any(w.process.poll() is None for w in r.workers) or self.restarts_due(r)
               or (outage is not None and outage.is_alive())):  # fmt: skip
            if time.monotonic() - started > DEADLINE:
                r.problems.append(f"hung: workers still running after {DEADLINE:.0f} s")
                for w in r.workers:
                    if w.process.poll() is None:
                        w.process.kill()
                        w.process.wait()
                break
            self.watch_exits(r, uri)
            if r.hit_at is None:
                stored = count_urls(uri) or 0
                if triggered_at is None and stored >= target and self.victim(r) is not False:
                    triggered_at = time.monotonic()
                if triggered_at is not None and time.monotonic() - triggered_at >= delay:
                    victim = self.victim(r)
                    if victim is not False:
                        r.hit_at, r.hit_stored = time.monotonic() - started, stored
                        # A server's outage runs on a thread: the exits are watched meanwhile.
                        outage = threading.Thread(target=self.hit, args=(r, victim), daemon=True)
                        outage.start()
            for w in list(r.workers):  # the supervisor: a signalled worker that ended is started again
                if w.signalled and w.process.poll() is not None and not w.replaced:
                    w.replaced = True
                    r.workers.append(self.start_worker(r, own))
            time.sleep(0.1)  # the bench's own polling interval
        self.watch_exits(r, uri)
        r.wall = time.monotonic() - started
        if r.hit_at is None:
            r.problems.append("the fault never hit (the run ended first)")
        self.check(r, uri, client)
        client.close()

    def restarts_due(self, r: Round) -> bool:
        return any(w.signalled and not w.replaced for w in r.workers)

    def start_worker(self, r: Round, own: dict[str, str]) -> Worker:
        log = self.work / f"round{r.number}-worker{len(r.workers)}.log"
        handle = log.open("wb")
        process = subprocess.Popen([*TRAWL, "worker", "--until-empty", "--tasks", "2", *settings_args(own)],
                                   cwd=self.work, stdin=subprocess.DEVNULL, stdout=handle,
                                   stderr=subprocess.STDOUT)  # fmt: skip
        handle.close()
        return Worker(log, process)

    def watch_exits(self, r: Round, uri: str) -> None:
        for w in r.workers:
            if w.exited_at is None and w.process.poll() is not None:
                w.exited_at = time.monotonic()
                if not w.signalled and w.process.returncode == 0:
                    try:
                        idle = WorkQueue(self.client()).idle()
                    except redis.RedisError:
                        idle = False
                    w.complete_at_exit = idle and count_urls(uri) == len(self.expected)

    def victim(self, r: Round) -> Worker | None | bool:
        """The worker the fault hits (None: a server's fault), False: none fits yet."""
        role = {"kill-plain": "plain", "kill-owner": "owner", "kill-joiner": "joiner", "sigterm": "any"}.get(
            r.fault
        )
        if role is None:
            return None
        fits = [w for w in r.workers if w.process.poll() is None and not w.signalled and w.holds(role)]
        return fits[0] if fits else False

    def hit(self, r: Round, victim: Worker | None) -> None:
        if victim is not None:
            victim.signalled = "term" if r.fault == "sigterm" else "kill"
            victim.process.send_signal(signal.SIGTERM if r.fault == "sigterm" else signal.SIGKILL)
        elif r.fault == "redis-stop":
            client = self.client()
            client.config_set("save", "3600 1")  # the queue's Redis persists (docs/distributed.md)
            client.close()
            self.redis.stop()
            time.sleep(DOWN_FOR)  # the outage itself
            self.redis.start()
        elif r.fault == "redis-sleep":
            client = redis.Redis.from_url(self.redis.url)
            client.execute_command("DEBUG", "SLEEP", f"{r.delay + 3:.1f}")  # blocks every client meanwhile
            client.close()
        elif r.fault == "pg-restart":
            self.pg.stop()
            time.sleep(DOWN_FOR)  # the outage itself
            self.pg.start()

    # --- after the round ---------------------------------------------------------------------

    def check(self, r: Round, uri: str, client: redis.Redis) -> None:
        found = records(self.work, uri)
        urls = [x["url"] for x in found]
        if len(urls) != len(set(urls)):
            r.problems.append(f"{len(urls) - len(set(urls))} duplicate rows")
        got = {x["url"]: x for x in found}
        missing, extra = set(self.reference) - set(got), set(got) - set(self.reference)
        if missing or extra:
            r.problems.append(f"{len(missing)} URLs missing, {len(extra)} extra (e.g. {sorted(missing)[:2]})")
        differ = [u for u in set(got) & set(self.reference) if got[u] != self.reference[u]]
        if differ:
            u = sorted(differ)[0]
            r.problems.append(f"{len(differ)} records differ, e.g. {got[u]} != {self.reference[u]}")
        status = WorkQueue(client).status()
        left = (sum(status.pending.values()), sum(status.in_flight.values()), sum(status.dead.values()))
        if left != (0, 0, 0):
            r.problems.append(
                f"queue left: {left[0]} pending, {left[1]} in flight, {left[2]} dead ({status.reasons})"
            )
        for n, w in enumerate(r.workers):
            text = w.text()
            for bad in (r"dead-lettered:|[1-9]\d* dead-lettered", "Traceback"):
                if re.search(bad, text):
                    r.problems.append(f"worker {n} logged {bad!r}")
            code = w.process.returncode
            if w.signalled == "kill":
                continue
            if code != 0:
                r.problems.append(f"worker {n} exited {code}")
            elif not w.signalled and not w.complete_at_exit:
                r.problems.append(f"worker {n} exited 0 before the work was done")
        for source, (requests, period) in BUDGETS.items():
            spans = sorted(span for d in DOMAINS for span in self.servers[d][source].spans)
            most = max_in_window([arrived for arrived, _ in spans], period)
            flight = max_in_flight(spans)
            r.budgets.append(f"{source} {len(spans)} req, {most}/{period:g}s, {flight} in flight")
            if most > requests or flight > CONCURRENCY:
                r.problems.append(
                    f"{source}: {most} requests in {period:g} s (budget {requests}), {flight} in flight"
                )


def quiet_fake_servers() -> None:
    """A worker killed mid-request resets its connections: the fakes' threads would print a traceback
    each (``socketserver``'s default) into the bench's figures."""
    import socketserver

    socketserver.BaseServer.handle_error = lambda self, request, address: None  # type: ignore[method-assign]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--urls", type=int, default=600, help="distinct URLs a domain (default 600)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds an upstream takes to answer")
    parser.add_argument("--only", choices=FAULTS, help="every round this fault")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (worker logs)")
    args = parser.parse_args()
    quiet_fake_servers()
    rng = random.Random(args.seed)
    faults = [args.only] * args.rounds if args.only else list(FAULTS) * (args.rounds // len(FAULTS) + 1)
    if not args.only:
        rng.shuffle(faults)
    plan = [
        Round(n, faults[n - 1], rng.uniform(0.05, 0.6), rng.uniform(0.0, 2.0))
        for n in range(1, args.rounds + 1)
    ]
    exact = 0
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="trawl-chaos-")) if args.keep else Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="trawl-chaos-")))  # fmt: skip
        chaos = Chaos(stack, work, args)
        print(f"{len(DOMAINS)} domains x {len(SOURCES)} sources, {len(chaos.expected):,} URLs,"
              f" seed {args.seed};"
              f" work folder {work}; {uptime()}", flush=True)  # fmt: skip
        for r in plan:
            chaos.round(r)
            exact += not r.problems
            exits = ",".join(f"{w.process.returncode}{'(' + w.signalled + ')' if w.signalled else ''}"
                             for w in r.workers)  # fmt: skip
            hit = f"{r.hit_at:.1f} s" if r.hit_at is not None else "never"
            verdict = "exact" if not r.problems else "NOT EXACT: " + "; ".join(r.problems)
            print(
                f"round {r.number:2d} {r.fault:11s} hit at {hit} ({r.hit_stored} stored), {r.wall:.1f} s,"
                f" exits {exits}; {'; '.join(r.budgets)}: {verdict}",
                flush=True,
            )
    print(f"{exact} of {len(plan)} rounds exact; {uptime()}")
    return 0 if exact == len(plan) else 1


if __name__ == "__main__":
    sys.exit(main())
