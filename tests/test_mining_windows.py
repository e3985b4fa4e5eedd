"""A script over WINDOW_BYTES is parsed a window at a time: the same findings, a bounded memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trawl.mining import extract_file
from trawl.mining.readers import javascript, jswindows

ROOT = Path(__file__).resolve().parents[1]
URL = "https://app.example.com/static/bundle.min.js"


def bundle(functions: int) -> bytes:
    """A minified bundle: one IIFE of functions, each with a real call and traps for a window that
    would start inside a literal (a string, a regex and a comment holding quotes and a fake call)."""
    parts = []
    for i in range(functions):
        parts.append(
            f'function f{i}(a){{var s=\'q",fetch("/invented/{i}"),"\';var r=/"[^"]*"/g;'
            f'/* fetch("/comment/{i}") */var t=`x${{a}}"y`;'
            f'return fetch("/api/v1/items/{i}",{{method:"POST"}}).then(function(x){{return x.json()}})}}'
        )
        if i % 700 == 0:
            parts.append("\n")
    return ("!function(){" + ";".join(parts) + "}();").encode()


def keys(body: bytes) -> set[tuple]:
    found = extract_file(body, URL, "application/javascript")
    assert found.reader == "javascript"
    return {(e.url, e.how, e.method, e.query, e.line) for e in found.endpoints}


def test_a_big_bundle_in_windows_finds_what_a_whole_read_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    body = bundle(3000)
    assert len(body) > 2 * jswindows.WINDOW_BYTES
    windowed = keys(body)
    monkeypatch.setattr(javascript, "WINDOW_BYTES", len(body) + 1)
    assert windowed == keys(body)
    urls = {url for url, how, method, *_ in windowed if how == "fetch" and method == "POST"}
    assert urls == {f"https://app.example.com/api/v1/items/{i}" for i in range(3000)}
    assert not [key for key in windowed if "invented" in key[0] or "comment" in key[0]]


def test_a_name_declared_again_and_again_keeps_its_literals() -> None:
    """Not a constant whose one use may lie in another window: every window keeps its literal."""
    line = b'var u = "/api/v9/big";\n'
    body = line * (3 * jswindows.WINDOW_BYTES // len(line))
    assert {url for url, *_ in keys(body)} == {"https://app.example.com/api/v9/big"}


def test_lines_are_the_files_lines() -> None:
    body = bundle(3000)
    found = {url: line for url, how, _, _, line in keys(body) if how == "fetch"}
    last = "https://app.example.com/api/v1/items/2999"
    assert found[last] == body.count(b"\n", 0, body.index(b'"/api/v1/items/2999"')) + 1
    assert found[last] == 6


def test_a_window_never_starts_inside_a_literal() -> None:
    body = bundle(3000)
    root = javascript._parse(body[: jswindows.WINDOW_BYTES])
    for target in range(1000, jswindows.WINDOW_BYTES - 2000, 997):
        cut = jswindows.safe_cut(root, target)
        node = root.descendant_for_byte_range(cut, cut + 1)
        while node is not None:
            inside = node.type in ("string", "template_string", "regex", "comment") and node.start_byte < cut
            assert not inside, (target, cut, node.type)
            node = node.parent


MEASURE = """
import resource, sys
from trawl.mining import extract_file
body = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
extract_file(body, "https://app.example.com/b.js", "application/javascript")
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10)
"""


def test_memory_does_not_grow_with_the_script(tmp_path: Path) -> None:
    """A whole parse of this 1.2 MB bundle grows a process by about 85 MB; windows by about 25."""
    script = tmp_path / "bundle.js"
    script.write_bytes(bundle(6000))
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(script)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert int(done.stdout) < 45
