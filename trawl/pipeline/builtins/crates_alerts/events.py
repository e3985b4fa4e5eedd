"""What changed since the last evaluation: the alerts' events, and the state to remember.

For each watched crate: its versions (``num``), the yanked ones, and the crates
its current version depends on (:func:`~trawl.commands._crates_questions.graph.edges`),
read as whole columns and filtered to the watched crates. A crate seen for the
first time is its baseline: nothing fires for it (a crate added to the watchlist
does not announce its whole history). For the growth threshold: the crates
:func:`~trawl.commands._crates_questions.downloads.growing` finds; one fires when it
crosses the threshold, and again only after it fell below it and crossed anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trawl.commands._crates_questions.downloads import growing
from trawl.commands._crates_questions.graph import crate_names, edges
from trawl.commands._crates_questions.layers import Layer
from trawl.pipeline.builtins.crates_alerts.rules import Rules
from trawl.sources.crates.records import VersionBatch


@dataclass(frozen=True)
class Event:
    """One alert: ``kind`` one of ``version``, ``yanked``, ``dependency``, ``growth``."""

    kind: str
    crate: str
    detail: str

    def text(self) -> str:
        return {
            "version": f"{self.crate}: new version {self.detail}",
            "yanked": f"{self.crate}: version {self.detail} yanked",
            "dependency": f"{self.crate}: new dependency {self.detail}",
            "growth": f"{self.crate}: downloads {self.detail}",
        }[self.kind]

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "crate": self.crate, "detail": self.detail, "text": self.text()}


def _watched_facts(layer: Layer, names: list[str]) -> dict[str, dict[str, list[str]]]:
    """Per watched crate (as the rules name it): its ``versions``, ``yanked`` and ``dependencies``."""
    crates = crate_names(layer).with_columns(pl.col("name").str.to_lowercase().alias("lower"))
    wanted = pl.DataFrame({"watched": names, "lower": [n.lower() for n in names]})
    ids = crates.join(wanted, on="lower").select("crate_id", "watched")
    versions = (
        layer.read(VersionBatch, ["crate_id", "num", "yanked"])
        .join(ids, on="crate_id")
        .with_columns(pl.col("yanked").fill_null(False))
    )
    depends = (
        edges(layer)
        .join(ids.rename({"crate_id": "dependent"}), on="dependent")
        .join(
            crate_names(layer).rename({"crate_id": "dependency", "name": "on"}), on="dependency", how="left"
        )
        .with_columns(pl.coalesce("on", pl.lit("#") + pl.col("dependency").cast(pl.String)).alias("on"))
    )
    facts: dict[str, dict[str, list[str]]] = {
        name: {"versions": [], "yanked": [], "dependencies": []} for name in ids.get_column("watched")
    }
    for (name,), group in versions.group_by("watched"):
        facts[str(name)]["versions"] = sorted(group.get_column("num").to_list())
        facts[str(name)]["yanked"] = sorted(group.filter(pl.col("yanked")).get_column("num").to_list())
    for (name,), group in depends.group_by("watched"):
        facts[str(name)]["dependencies"] = sorted(set(group.get_column("on").to_list()))
    return facts


def evaluate(layer: Layer, rules: Rules, state: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
    """The events since ``state`` (what the last evaluation saw), and the state to save now."""
    events: list[Event] = []
    seen_before: dict[str, Any] = state.get("crates") or {}
    now_crates: dict[str, Any] = {}
    if rules.crates:
        facts = _watched_facts(layer, sorted(rules.crates))
        for name, now in sorted(facts.items()):
            now_crates[name] = now
            before = seen_before.get(name)
            if before is None:
                continue  # the baseline
            watched = rules.crates[name]
            for kind, column in (
                ("version", "versions"),
                ("yanked", "yanked"),
                ("dependency", "dependencies"),
            ):
                if kind in watched:
                    events += [
                        Event(kind, name, v) for v in now[column] if v not in set(before.get(column, []))
                    ]
        for name, before in seen_before.items():  # not in the store right now: keep what was seen
            if name in rules.crates and name not in now_crates:
                now_crates[name] = before
    new_state: dict[str, Any] = {"crates": now_crates}
    if rules.growth is not None:
        factor, window = rules.growth
        rows = growing(layer, factor, window)
        before_growing = set(state.get("growing") or [])
        for row in rows.iter_rows(named=True):
            if row["name"] in before_growing or row["name"] is None:
                continue
            ratio = f"x{row['growth']:.1f}" if row["growth"] is not None else "from 0"
            detail = f"{ratio} in {window} days ({row['previous']:,} -> {row['last']:,})"
            events.append(Event("growth", row["name"], detail))
        new_state["growing"] = sorted(n for n in rows.get_column("name").to_list() if n is not None)
        new_state["growth"] = [factor, window]
    return events, new_state
