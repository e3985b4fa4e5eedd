"""Recorded upstream responses (copied from ../shared/api-samples/ into tests/data/)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def sample_body(name: str) -> bytes:
    """The verbatim body of a recorded response, without its ``#`` header block."""
    raw = (DATA / name).read_bytes()
    marker = raw.find(b"# ---- body")
    if marker < 0:
        raise ValueError(f"{name} has no body marker")
    return raw[raw.index(b"\n", marker) + 1 :]
