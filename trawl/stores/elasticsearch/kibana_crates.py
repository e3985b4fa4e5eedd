"""Kibana saved objects over the crates.io indexes (``trawl-records-<kind>``, :mod:`.kinds`).

A data view per index the objects read, five panels and a dashboard
("trawl: crates.io"): top crates by downloads, recently updated crates (a saved
search), versions published per week, most depended-on crates, and the daily
downloads of the most downloaded versions over the last weeks ("fastest
growing": a rising line; the ratio itself is ``trawl crates trends``). The
dependency index holds the depended-on crate's id, not its name: the panel
lists ids (``trawl crates rdeps`` names them). Built like :mod:`.kibana`'s
objects (same format, fixed ids), written out to
``kibana_objects/trawl-crates-saved-objects.ndjson``
(``python -m trawl.stores.elasticsearch.kibana_crates > THAT_FILE``) and
imported by ``kibana-setup`` with them. The titles assume the default
``ELASTICSEARCH_INDEX_PREFIX`` (``trawl``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from trawl.stores.elasticsearch.kibana import CORE_MIGRATION_VERSION, _count, _dumps, _object, _terms

_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"
#: Data view id -> (index, time field or None).
DATA_VIEWS = {
    "trawl-crates": ("trawl-records-crate", "updated_at"),
    "trawl-crate-versions": ("trawl-records-version", "created_at"),
    "trawl-crate-dependencies": ("trawl-records-dependency", None),
    "trawl-crate-downloads": ("trawl-records-version_download", "date"),
}


def data_view(view_id: str) -> dict:
    index, time_field = DATA_VIEWS[view_id]
    attributes: dict[str, Any] = {
        "allowNoIndex": True,
        "fieldAttrs": "{}",
        "fieldFormatMap": "{}",
        "fields": "[]",
        "name": f"trawl {index.rpartition('-')[2].replace('_', ' ')}s",
        "runtimeFieldMap": "{}",
        "sourceFilters": "[]",
        "title": index,
        "typeMeta": "{}",
    }
    if time_field:
        attributes["timeFieldName"] = time_field
    return _object("index-pattern", view_id, attributes, [])


def _source(query: str = "") -> dict[str, str]:
    return {
        "searchSourceJSON": _dumps(
            {"query": {"query": query, "language": "kuery"}, "filter": [], "indexRefName": _REF}
        )
    }


def _view_ref(view_id: str) -> list[dict[str, str]]:
    return [{"id": view_id, "name": _REF, "type": "index-pattern"}]


def _metric(kind: str, field: str) -> dict:
    return {"id": "1", "enabled": True, "type": kind, "params": {"field": field}, "schema": "metric"}


def _histogram(field: str, interval: str, agg_id: str = "2") -> dict:
    params = {
        "field": field,
        "useNormalizedEsInterval": True,
        "scaleMetricValues": False,
        "interval": interval,
        "drop_partials": False,
        "min_doc_count": 1,
        "extended_bounds": {},
    }
    return {"id": agg_id, "enabled": True, "type": "date_histogram", "params": params, "schema": "segment"}


def visualization(
    object_id: str, title: str, view_id: str, vis_type: str, aggs: list[dict], params: dict
) -> dict:
    state = {"title": title, "type": vis_type, "aggs": aggs, "params": params}
    attributes = {
        "description": "",
        "kibanaSavedObjectMeta": _source(),
        "title": title,
        "uiStateJSON": "{}",
        "version": 1,
        "visState": _dumps(state),
    }
    return _object("visualization", object_id, attributes, _view_ref(view_id))


_TABLE = {"perPage": 20, "showPartialRows": False, "showMetricsAtAllLevels": False, "showTotal": False}
_split = {**_terms("version_id", 10, "group"), "id": "3"}
VISUALIZATIONS = [
    visualization(
        "trawl-vis-crates-top-downloads",
        "crates: top crates by downloads",
        "trawl-crates",
        "table",
        [_metric("max", "downloads"), _terms("name", 25, "bucket")],
        _TABLE,
    ),
    visualization(
        "trawl-vis-crates-versions-per-week",
        "crates: versions published per week",
        "trawl-crate-versions",
        "histogram",
        [_count(), _histogram("created_at", "w")],
        {"type": "histogram", "addTooltip": True, "addLegend": False},
    ),
    visualization(
        "trawl-vis-crates-most-depended-on",
        "crates: most depended-on (crate ids)",
        "trawl-crate-dependencies",
        "table",
        [_count(), _terms("crate_id", 25, "bucket")],
        _TABLE,
    ),
    visualization(
        "trawl-vis-crates-fastest-growing",
        "crates: daily downloads of the top versions",
        "trawl-crate-downloads",
        "line",
        [_metric("sum", "downloads"), _histogram("date", "d"), _split],
        {"type": "line", "addTooltip": True, "addLegend": True, "legendPosition": "right"},
    ),
]
RECENTLY_UPDATED = _object(
    "search",
    "trawl-search-crates-recently-updated",
    {
        "columns": ["name", "updated_at", "downloads"],
        "description": "Crates by their last update, newest first.",
        "grid": {},
        "hideChart": True,
        "isTextBasedQuery": False,
        "kibanaSavedObjectMeta": _source(),
        "sort": [["updated_at", "desc"]],
        "title": "crates: recently updated",
    },
    _view_ref("trawl-crates"),
)
DASHBOARD_ID = "trawl-crates-dashboard"


def dashboard() -> dict:
    panels, references = [], []
    placed = [*VISUALIZATIONS[:3], RECENTLY_UPDATED, VISUALIZATIONS[3]]
    layout = [(0, 0, 24, 15), (24, 0, 24, 15), (0, 15, 24, 15), (24, 15, 24, 15), (0, 30, 48, 15)]
    for number, (obj, (x, y, w, h)) in enumerate(zip(placed, layout, strict=True), start=1):
        index = str(number)
        panels.append(
            {
                "version": CORE_MIGRATION_VERSION,
                "type": obj["type"],
                "panelIndex": index,
                "gridData": {"x": x, "y": y, "w": w, "h": h, "i": index},
                "embeddableConfig": {"enhancements": {}},
                "panelRefName": f"panel_{index}",
            }
        )
        references.append({"id": obj["id"], "name": f"{index}:panel_{index}", "type": obj["type"]})
    attributes = {
        "description": "crates.io: top crates, recent updates, versions per week, most depended-on, growth.",
        "kibanaSavedObjectMeta": {
            "searchSourceJSON": _dumps({"query": {"query": "", "language": "kuery"}, "filter": []})
        },
        "optionsJSON": _dumps({"useMargins": True, "syncColors": False, "hidePanelTitles": False}),
        "panelsJSON": _dumps(panels),
        "refreshInterval": {"pause": True, "value": 0},
        "timeFrom": "now-90d",
        "timeRestore": True,
        "timeTo": "now",
        "title": "trawl: crates.io",
        "version": 1,
    }
    return _object("dashboard", DASHBOARD_ID, attributes, references)


def saved_objects() -> list[dict]:
    """Every object, dependencies first (the data views, then what refers to them)."""
    return [*(data_view(v) for v in DATA_VIEWS), RECENTLY_UPDATED, *VISUALIZATIONS, dashboard()]


def ndjson() -> bytes:
    return b"".join(
        json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode() + b"\n"
        for obj in saved_objects()
    )


if __name__ == "__main__":
    sys.stdout.buffer.write(ndjson())
