"""Counts as a reader says them: "1 request", "2 requests", "1,204 URLs".

A bare number and noun read "1 requests" and "1 errors" in progress lines and summaries.
"""

from __future__ import annotations

from typing import Any

#: Nouns whose plural is not the noun plus "s".
IRREGULAR: dict[str, str] = {"entry": "entries", "index": "indexes", "retry": "retries"}


def plural(noun: str, count: int) -> str:
    if count == 1:
        return noun
    return IRREGULAR.get(noun, noun + "s")


def counted(value: Any, noun: str) -> str:
    """``counted(1, "request")`` -> ``"1 request"``; thousands separated."""
    number = int(value or 0)
    return f"{number:,} {plural(noun, number)}"
