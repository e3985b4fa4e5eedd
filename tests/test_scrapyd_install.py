"""docs/scrapyd.md's install in a fresh virtualenv of Python 3.11 and 3.12: the egg builds, scrapyd runs it.

``pip install -e '.[scrapyd]'`` in a new virtualenv (a copy of the checkout,
so that nothing is built in it), then ``scrapyd-deploy --build-egg``, the egg
``scrapyd-deploy`` would upload, built by ``python setup.py bdist_egg`` with
that virtualenv's setuptools (3.11's ensurepip brings 65, which refuses
``license = "MIT"``; 3.12's brings none). Then scrapyd's own runner lists the
sources from the egg, as a job starts: scrapyd 1.6 reads eggs through
``pkg_resources``, which setuptools 82 removes (81 warns). PyPI is needed (pip's cache
helps); without it the test skips, saying so.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What scrapyd-deploy needs of the checkout: the package, its metadata and the deploy target.
PROJECT_FILES = ("pyproject.toml", "setup.py", "scrapy.cfg", "README.md")
#: A fresh install of trawl and scrapyd takes 30-50 s with pip's cache warm; twice that cold.
INSTALL_WITHIN = 900

pytestmark = pytest.mark.slow


def interpreter(version: str) -> str | None:
    """A working ``pythonX.Y``: on ``PATH``, Debian's, or pyenv's (whose shim fails unless selected)."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [
        shutil.which(f"python{version}"),
        f"/usr/bin/python{version}",
        *sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"), reverse=True),
    ]
    for candidate in candidates:
        if candidate is None or not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True,
        )  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def project_copy(folder: Path) -> Path:
    folder.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, folder / name)
    shutil.copytree(ROOT / "trawl", folder / "trawl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return folder


def registry_unreachable(python: Path) -> str | None:
    """Why PyPI cannot be asked (one line), or None when it answers."""
    asked = subprocess.run(
        [str(python), "-m", "pip", "download", "--no-deps", "--dest", str(python.parent.parent / "probe"),
         "scrapyd-client"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if asked.returncode == 0:
        return None
    lines = [line for line in asked.stderr.splitlines() if line.startswith("ERROR")] or ["no answer"]
    return lines[-1]


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_the_documented_install_builds_an_egg_scrapyd_runs(version: str, tmp_path: Path) -> None:
    base = interpreter(version)
    if base is None:
        pytest.skip(f"no Python {version} on this machine")
    project = project_copy(tmp_path / "trawl")
    env_dir = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", str(env_dir)], check=True, capture_output=True)
    python = env_dir / "bin" / "python"
    reason = registry_unreachable(python)
    if reason is not None:
        pytest.skip(f"PyPI unreachable: {reason}")

    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-e", ".[scrapyd]"],
        cwd=project, capture_output=True, text=True, timeout=INSTALL_WITHIN,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert "does not provide the extra" not in installed.stderr

    egg = tmp_path / "trawl.egg"
    built = subprocess.run(
        [str(env_dir / "bin" / "scrapyd-deploy"), "--build-egg", str(egg), "--debug"],
        cwd=project, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    with zipfile.ZipFile(egg) as archive:
        names = set(archive.namelist())
        entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
    assert "trawl/settings.py" in names and "trawl/sources/cdx/wayback.py" in names
    assert not any(name.startswith("tests/") for name in names)
    assert "settings = trawl.settings" in entry_points

    # scrapyd's runner, as scrapyd starts a job: the project's latest egg from eggs_dir (default ./eggs).
    server = tmp_path / "scrapyd"
    (server / "eggs" / "trawl").mkdir(parents=True)
    shutil.copy2(egg, server / "eggs" / "trawl" / "r1.egg")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "TRAWL_"))}
    listed = subprocess.run(
        [str(python), "-m", "scrapyd.runner", "list"],
        cwd=server, env={**env, "SCRAPY_PROJECT": "trawl"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert {"wayback", "commoncrawl", "all"} <= set(listed.stdout.split())
    assert "No module named 'pkg_resources'" not in listed.stderr
