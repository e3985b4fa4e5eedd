"""trawl's miner against xnLinkFinder on real browser bundles from npm, in one run.

For each bundle (``BUNDLES``: pinned npm packages, installed with ``npm install --prefix``):

- **found**: the distinct findings of each tool, after :func:`key` (below);
- **recall**: the share of the endpoints read by hand in the code
  (``bench/data/mining_vs_xnl/<name>.hand.txt``) that a tool found;
- **precision**: on a seeded random sample of up to 30 of each tool's findings, the
  share judged true by the written rules (``RULES`` below, the ``*.also.txt`` lists
  hold the URLs judged true that are not on the hand-read list);
- **method**: of the hand-read endpoints found, how many with the method the code gives;
- **wall**: each tool run once per bundle as a fresh process (xnLinkFinder under
  ``script -qec``: it needs a terminal), so both pay their start-up. trawl runs its
  library entry point (``trawl.mining.extract_file``), which is what ``trawl crawl
  responses`` runs in-process for small inputs. Then the whole command, ``trawl crawl
  responses -a files=`` on a waymore folder of the five files, once, against the sum of
  xnLinkFinder's five runs.

Findings are compared as keys: the placeholders ``{x}``, ``:x``, ``${x}`` and ``EXPR`` are
``{}``; an unknown base (``EXPR/x``) and the bundle's own origin are cut, so that
``/signup`` (xnLinkFinder's raw string) and ``EXPR/signup`` (trawl) are one key, and a
relative ``rest/v1`` is ``/rest/v1``; the scheme and a trailing ``/`` are cut. A path
resolved against the bundle's folder keeps the folder (``/dist/rest/v1``) and is false.

    python bench/bench_mining_vs_xnlinkfinder.py [--dir /tmp/xb] [--xnl /tmp/xnl/bin/xnLinkFinder] [--seed 27]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "mining_vs_xnl"
ORIGIN = "https://cdn.example.com"
SAMPLE = 30

RULES = """\
true:  T1 on the hand-read list (what the code requests or builds a request for);
       T2 on the bundle's also-list: a URL the code renders as a link or navigates to;
       T3 (route tables) a path written in the file as a route string ("GET /path").
false: F1 specification identifiers and namespaces ($schema, OpenAPI dialects, XML namespaces);
       F2 framework error-reference templates; F3 examples and placeholders (example.com, /a/b/c);
       F4 not a URL (property chains, prose words, module names); F5 a wrong base (a path
       resolved against the bundle's folder); F6 references in comments and licences (RFCs,
       project pages) never requested nor shown."""


@dataclass(frozen=True)
class Bundle:
    name: str
    package: str
    path: str  # inside node_modules
    url_path: str  # where the bundle is served from (ORIGIN + url_path)


BUNDLES = (
    Bundle(
        "swagger-ui",
        "swagger-ui-dist@5.35.0",
        "swagger-ui-dist/swagger-ui-bundle.js",
        "/dist/swagger-ui-bundle.js",
    ),
    Bundle(
        "octokit-routes",
        "@octokit/plugin-rest-endpoint-methods@18.0.0",
        "@octokit/plugin-rest-endpoint-methods/dist-src/generated/endpoints.js",
        "/dist/endpoints.js",
    ),
    Bundle(
        "supabase",
        "@supabase/supabase-js@2.109.0",
        "@supabase/supabase-js/dist/umd/supabase.js",
        "/dist/supabase.js",
    ),
    Bundle(
        "react-dom",
        "react-dom@19.3.1",
        "react-dom/cjs/react-dom-client.production.js",
        "/dist/react-dom-client.production.js",
    ),
    Bundle("axios", "axios@1.21.1", "axios/dist/axios.min.js", "/dist/axios.min.js"),
)

_ROUTE = re.compile(r"[\"'`](?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) ([^\"'`\s]+)")
_QUERY_TEMPLATE = re.compile(r"\{\?[^}]*\}")
_PLACEHOLDER = re.compile(r"\{[^}/]*\}|\$\{[^}]*\}|EXPR|(?<=/):[A-Za-z_]\w*")
_TRAWL = """
import sys
from trawl.mining.extract import extract_file
body = open(sys.argv[1], "rb").read()
for e in extract_file(body, sys.argv[2], "application/javascript").endpoints:
    print(e.method or "", e.url, e.how, sep="\\t")
"""


def key(raw: str) -> str:
    """A finding as comparable text (the module docstring's rules)."""
    value = raw.strip().split("#", 1)[0]
    if value.startswith(ORIGIN + "/"):
        value = value[len(ORIGIN) :]
    value = re.sub(r"^EXPR(?=/)", "", value)
    value = re.sub(r"^(?:https?|wss?):(?=//)", "", value)
    value = _PLACEHOLDER.sub("{}", _QUERY_TEMPLATE.sub("", value))
    if not value.startswith("/"):
        value = "/" + value.removeprefix("./")
    return value.rstrip("/") or "/"


def read_list(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def hand_keys(name: str) -> tuple[dict[str, str], set[str]]:
    """The hand-read endpoints (key -> method or "") and the also-list's keys."""
    hand: dict[str, str] = {}
    for line in read_list(DATA / f"{name}.hand.txt"):
        method, _, url = line.rpartition(" ")
        hand[key(url)] = method
    return hand, {key(line) for line in read_list(DATA / f"{name}.also.txt")}


def install(target: Path) -> None:
    missing = [b.package for b in BUNDLES if not (target / "node_modules" / b.path).exists()]
    if missing:
        subprocess.run(["npm", "install", "--no-save", "--prefix", str(target), *missing], check=True)


def run_trawl(file: Path, url: str) -> tuple[float, dict[str, set[str]]]:
    """Wall seconds and key -> methods of trawl's findings (one fresh interpreter)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _TRAWL, str(file), url], capture_output=True, text=True, check=True, cwd=ROOT
    )
    wall = time.perf_counter() - start
    found: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        method, url_, _ = line.split("\t")
        found.setdefault(key(url_), set()).add(method)
    return wall, found


def run_xnl(xnl: str, file: Path, work: Path) -> tuple[float, dict[str, set[str]]]:
    """Wall seconds and keys of xnLinkFinder's links for a folder holding only ``file``."""
    folder = work / file.stem
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(file, folder / file.name)
    out, params = work / f"{file.stem}.links", work / f"{file.stem}.params"
    command = f"{xnl} -i {folder} -o {out} -op {params} -ow -nb"
    start = time.perf_counter()
    subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, check=True)
    wall = time.perf_counter() - start
    return wall, {key(line): set() for line in read_list(out) if line.strip()}


def judge(found: str, hand: dict[str, str], also: set[str], routes: set[str]) -> bool:
    return found in hand or found in also or found in routes


def route_keys(file: Path) -> set[str]:
    text = file.read_text(errors="replace")
    return {key(m) for m in _ROUTE.findall(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", default="/tmp/xb", help="where the npm packages are installed")
    parser.add_argument("--xnl", default="/tmp/xnl/bin/xnLinkFinder")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--show", action="store_true", help="print every finding not judged true")
    args = parser.parse_args()
    target = Path(args.dir)
    install(target)
    work = target / "xnl-work"
    work.mkdir(parents=True, exist_ok=True)
    print(f"load before: {os.getloadavg()[0]:.2f} (uptime: {subprocess.getoutput('uptime').strip()})")
    print(RULES)
    rng = random.Random(args.seed)
    totals = {"trawl": [0, 0, 0, 0, 0.0], "xnl": [0, 0, 0, 0, 0.0]}  # hand found, hand, true, sampled, wall
    print(f"{'bundle':<15} {'KB':>5} {'tool':<6} {'found':>5} {'recall':>9} {'method':>6}", end="")
    print(f" {'precision':>10} {'wall s':>7}")
    for bundle in BUNDLES:
        file = target / "node_modules" / bundle.path
        hand, also = hand_keys(bundle.name)
        routes = route_keys(file)
        results = {
            "trawl": run_trawl(file, ORIGIN + bundle.url_path),
            "xnl": run_xnl(args.xnl, file, work),
        }
        for tool, (wall, found) in results.items():
            hits = [k for k in hand if k in found]
            methods = sum(1 for k in hits if hand[k] and hand[k] in found[k])
            sample = rng.sample(sorted(found), min(SAMPLE, len(found)))
            true = sum(judge(k, hand, also, routes) for k in sample)
            total = totals[tool]
            total[0] += len(hits)
            total[1] += len(hand)
            total[2] += true
            total[3] += len(sample)
            total[4] += wall
            recall = f"{len(hits)}/{len(hand)}" if hand else "-"
            precision = f"{true}/{len(sample)}" if sample else "-"
            method = f"{methods}" if hand else "-"
            print(
                f"{bundle.name:<15} {file.stat().st_size // 1024:>5} {tool:<6} {len(found):>5} {recall:>9}"
                f" {method:>6} {precision:>10} {wall:>7.2f}"
            )
            if args.show:
                for k in sorted(found):
                    if not judge(k, hand, also, routes):
                        print(f"    false? {k}")
                for k in hand:
                    if k not in found:
                        print(f"    missed {k}")
    for tool, (hits, hand_n, true, sampled, wall) in totals.items():
        print(
            f"{'all':<15} {'':>5} {tool:<6} {'':>5} {f'{hits}/{hand_n}':>9} {hits / hand_n:>6.0%}"
            f" {true / max(1, sampled):>10.2f} {wall:>7.2f}"
        )
    command_wall, mined = run_command(target, work)
    xnl_wall = totals["xnl"][4]
    print(f"trawl crawl responses, the five files in one run: {command_wall:.2f} s wall ({mined})")
    print(f"  xnLinkFinder on the same files, five runs: {xnl_wall:.2f} s")
    print(f"load after: {subprocess.getoutput('uptime').strip()}")


def run_command(target: Path, work: Path) -> tuple[float, str]:
    """The whole command a user runs on saved files (a waymore folder): Scrapy, the store, the miner."""
    folder = work / "command"
    shutil.rmtree(folder, ignore_errors=True)
    saved = folder / "saved" / "example.com"
    saved.mkdir(parents=True)
    index = []
    for number, bundle in enumerate(BUNDLES, 1):
        shutil.copy(target / "node_modules" / bundle.path, saved / f"{number}.js")
        index.append(
            f"{number},https://web.archive.org/web/20210101000000id_/{ORIGIN}{bundle.url_path},2024-01-01\n"
        )
    (saved / "index.txt").write_text("".join(index))
    trawl = Path(sys.executable).with_name("trawl")
    command = [str(trawl), "crawl", "responses", "-a", "domain=example.com", "-a", f"files={saved}"]
    command += ["-s", f"STORE_URI=sqlite:///{folder}/trawl.db", "-s", f"FILES_STORE={folder}/files"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, check=False)
    wall = time.perf_counter() - start
    said = [line for line in done.stderr.splitlines() if ": mined " in line]
    summary = said[-1].split(": mined ", 1)[1].split(";")[0] + ")" if said else f"exit {done.returncode}"
    return wall, "mined " + summary


if __name__ == "__main__":
    main()
