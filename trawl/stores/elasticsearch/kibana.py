"""Kibana saved objects for the Elasticsearch store, and their import.

:func:`saved_objects` builds them (Kibana 8.x saved-object format, agg-based
visualizations, ids fixed so a second import overwrites the first);
``trawl/stores/elasticsearch/kibana_objects/trawl-saved-objects.ndjson`` is :func:`ndjson` written out
(``python -m trawl.stores.elasticsearch.kibana > THAT_FILE``), and a test
checks that the two agree. :func:`import_saved_objects` posts them to
``POST /api/saved_objects/_import?overwrite=true`` the way Kibana's UI does.

The data view covers ``trawl-urls-*`` (the default ``ELASTICSEARCH_INDEX_PREFIX``).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit
from urllib.request import Request, urlopen

from trawl.errors import TrawlError, TrawlUsageError

DATA_VIEW_ID = "trawl-urls"
DATA_VIEW_TITLE = "trawl-urls-*"
CORE_MIGRATION_VERSION = "8.8.0"
#: The saved-object format versions the objects are written in (Kibana migrates them forward).
TYPE_MIGRATION_VERSIONS = {
    "index-pattern": "8.0.0",
    "search": "8.0.0",
    "visualization": "8.5.0",
    "dashboard": "8.7.0",
}
_INDEX_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"


def _dumps(value: Any) -> str:
    """Kibana's stringified JSON fields: compact, keys in the order given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _object(kind: str, object_id: str, attributes: dict[str, Any], references: list[dict[str, str]]) -> dict:
    return {
        "attributes": attributes,
        "coreMigrationVersion": CORE_MIGRATION_VERSION,
        "id": object_id,
        "managed": False,
        "references": references,
        "type": kind,
        "typeMigrationVersion": TYPE_MIGRATION_VERSIONS[kind],
    }


def _index_reference() -> list[dict[str, str]]:
    return [{"id": DATA_VIEW_ID, "name": _INDEX_REF, "type": "index-pattern"}]


def _search_source(query: str = "") -> dict[str, str]:
    return {
        "searchSourceJSON": _dumps(
            {"query": {"query": query, "language": "kuery"}, "filter": [], "indexRefName": _INDEX_REF}
        )
    }


def data_view() -> dict:
    return _object(
        "index-pattern",
        DATA_VIEW_ID,
        {
            "allowNoIndex": False,
            "fieldAttrs": _dumps(
                {"url.full": {"customLabel": "URL"}, "trawl.captures": {"customLabel": "Captures"}}
            ),
            "fieldFormatMap": _dumps(
                {"url.full": {"id": "url", "params": {"type": "a", "urlTemplate": None}}}
            ),
            "fields": "[]",
            "name": "trawl URLs",
            "runtimeFieldMap": "{}",
            "sourceFilters": _dumps([{"value": "trawl.source_counts"}]),
            "timeFieldName": "@timestamp",
            "title": DATA_VIEW_TITLE,
            "typeMeta": "{}",
        },
        [],
    )


COLUMNS = ["url.full", "trawl.sources", "trawl.status_codes", "trawl.mime_types", "trawl.captures"]

#: (id, title, description, KQL query, extra columns): what waymore users look for first.
SAVED_SEARCHES = [
    (
        "trawl-search-javascript",
        "trawl: JavaScript files",
        "Scripts and source maps: endpoints, keys and routes hide in them.",
        'url.extension : ("js" or "mjs" or "jsx" or "ts" or "map")',
        [],
    ),
    (
        "trawl-search-api-endpoints",
        "trawl: API endpoints",
        "Paths and hosts that look like APIs (REST versions, GraphQL, Swagger/OpenAPI).",
        "url.path : (*/api/* or */api or */v1/* or */v2/* or */v3/* or *graphql* or *swagger*"
        " or *openapi* or *api-docs* or */rest/* or *.json) or url.domain : api.*",
        [],
    ),
    (
        "trawl-search-login-admin",
        "trawl: Login and admin pages",
        "Authentication, administration and internal panels.",
        "url.path : (*login* or *logon* or *signin* or *sign-in* or *signup* or *register* or *auth*"
        " or *admin* or *administrator* or *dashboard* or *portal* or *panel* or *wp-admin* or *wp-login*"
        " or *phpmyadmin* or *console* or *manager*)",
        [],
    ),
    (
        "trawl-search-interesting-extensions",
        "trawl: Files with interesting extensions",
        "Backups, configuration, data, documents and server-side scripts.",
        'url.extension : ("bak" or "backup" or "old" or "orig" or "swp" or "tmp" or "sql" or "db"'
        ' or "sqlite" or "mdb" or "zip" or "rar" or "7z" or "tar" or "gz" or "tgz" or "bz2" or "env"'
        ' or "ini" or "conf" or "config" or "cfg" or "yml" or "yaml" or "toml" or "xml" or "json"'
        ' or "log" or "txt" or "csv" or "xls" or "xlsx" or "doc" or "docx" or "pdf" or "pem" or "key"'
        ' or "crt" or "p12" or "pfx" or "jks" or "php" or "asp" or "aspx" or "jsp" or "cgi" or "pl"'
        ' or "py" or "sh" or "wsdl")',
        [],
    ),
    (
        "trawl-search-parameters",
        "trawl: URLs with parameters",
        "URLs with a query string, and the names of their parameters (trawl.params).",
        "url.query : *",
        ["trawl.params"],
    ),
]


def saved_search(object_id: str, title: str, description: str, query: str, extra: list[str]) -> dict:
    return _object(
        "search",
        object_id,
        {
            "columns": COLUMNS[:1] + extra + COLUMNS[1:],
            "description": description,
            "grid": {},
            "hideChart": False,
            "isTextBasedQuery": False,
            "kibanaSavedObjectMeta": _search_source(query),
            "sort": [["trawl.last_seen", "desc"]],
            "title": title,
        },
        _index_reference(),
    )


def _count() -> dict:
    return {"id": "1", "enabled": True, "type": "count", "params": {}, "schema": "metric"}


def _terms(field: str, size: int, schema: str) -> dict:
    return {
        "id": "2",
        "enabled": True,
        "type": "terms",
        "params": {
            "field": field,
            "orderBy": "1",
            "order": "desc",
            "size": size,
            "otherBucket": False,
            "missingBucket": False,
        },
        "schema": schema,
    }


def visualization(object_id: str, title: str, vis_type: str, aggs: list[dict], params: dict) -> dict:
    return _object(
        "visualization",
        object_id,
        {
            "description": "",
            "kibanaSavedObjectMeta": _search_source(),
            "title": title,
            "uiStateJSON": "{}",
            "version": 1,
            "visState": _dumps({"title": title, "type": vis_type, "aggs": aggs, "params": params}),
        },
        _index_reference(),
    )


VISUALIZATIONS = [
    visualization(
        "trawl-vis-urls-per-source",
        "trawl: URLs per source",
        "horizontal_bar",
        [_count(), _terms("trawl.sources", 20, "segment")],
        {"type": "histogram", "addTooltip": True, "addLegend": False},
    ),
    visualization(
        "trawl-vis-urls-per-host",
        "trawl: URLs per host",
        "table",
        [_count(), _terms("url.domain", 50, "bucket")],
        {"perPage": 20, "showPartialRows": False, "showMetricsAtAllLevels": False, "showTotal": True},
    ),
    visualization(
        "trawl-vis-urls-per-status",
        "trawl: URLs per status code",
        "pie",
        [_count(), _terms("trawl.status_codes", 20, "segment")],
        {"type": "pie", "addTooltip": True, "addLegend": True, "legendPosition": "right", "isDonut": True},
    ),
    visualization(
        "trawl-vis-urls-per-mime",
        "trawl: URLs per mime type",
        "pie",
        [_count(), _terms("trawl.mime_types", 20, "segment")],
        {"type": "pie", "addTooltip": True, "addLegend": True, "legendPosition": "right", "isDonut": True},
    ),
    visualization(
        "trawl-vis-captures-over-time",
        "trawl: Captures over time (by first capture)",
        "histogram",
        [
            {
                "id": "1",
                "enabled": True,
                "type": "sum",
                "params": {"field": "trawl.captures"},
                "schema": "metric",
            },
            {
                "id": "2",
                "enabled": True,
                "type": "date_histogram",
                "params": {
                    "field": "@timestamp",
                    "useNormalizedEsInterval": True,
                    "scaleMetricValues": False,
                    "interval": "auto",
                    "drop_partials": False,
                    "min_doc_count": 1,
                    "extended_bounds": {},
                },
                "schema": "segment",
            },
        ],
        {"type": "histogram", "addTooltip": True, "addLegend": False},
    ),
]

DASHBOARD_ID = "trawl-dashboard"


def dashboard() -> dict:
    layout = [(0, 0, 24, 15), (24, 0, 24, 15), (0, 15, 24, 15), (24, 15, 24, 15), (0, 30, 48, 15)]
    panels = []
    references = []
    for number, (vis, (x, y, w, h)) in enumerate(zip(VISUALIZATIONS, layout, strict=True), start=1):
        index = str(number)
        panels.append(
            {
                "version": CORE_MIGRATION_VERSION,
                "type": "visualization",
                "gridData": {"x": x, "y": y, "w": w, "h": h, "i": index},
                "panelIndex": index,
                "embeddableConfig": {"enhancements": {}},
                "panelRefName": f"panel_{index}",
            }
        )
        references.append({"id": vis["id"], "name": f"{index}:panel_{index}", "type": "visualization"})
    return _object(
        "dashboard",
        DASHBOARD_ID,
        {
            "description": "URLs trawl collected by source, host, status, mime type; captures over time.",
            "kibanaSavedObjectMeta": {
                "searchSourceJSON": _dumps({"query": {"query": "", "language": "kuery"}, "filter": []})
            },
            "optionsJSON": _dumps({"useMargins": True, "syncColors": False, "hidePanelTitles": False}),
            "panelsJSON": _dumps(panels),
            "refreshInterval": {"pause": True, "value": 0},
            "timeFrom": "now-30y",
            "timeRestore": True,
            "timeTo": "now",
            "title": "trawl: URLs",
            "version": 1,
        },
        references,
    )


def saved_objects() -> list[dict]:
    """Every object, dependencies first (the data view, then what refers to it)."""
    return [data_view(), *(saved_search(*spec) for spec in SAVED_SEARCHES), *VISUALIZATIONS, dashboard()]


def ndjson() -> bytes:
    """The objects as Kibana's export writes them: one compact JSON object per line."""
    return b"".join(
        json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode() + b"\n"
        for obj in saved_objects()
    )


# --------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------


@dataclass
class ImportResult:
    success_count: int
    errors: list[dict]


def import_url(kibana_url: str, space: str | None = None) -> str:
    parts = urlsplit(kibana_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TrawlUsageError(f"--kibana-url {kibana_url!r}: give http(s)://host:5601")
    base = kibana_url.rstrip("/")
    if space and space != "default":
        base += f"/s/{quote(space, safe='')}"
    return f"{base}/api/saved_objects/_import?overwrite=true"


def multipart(field: str, filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with one file field, and its Content-Type."""
    boundary = f"----trawl{uuid.uuid4().hex}"
    body = (
        (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
            "Content-Type: application/ndjson\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def import_saved_objects(
    kibana_url: str,
    content: bytes,
    *,
    user: str | None = None,
    api_key: str | None = None,
    space: str | None = None,
    ca_certs: str | None = None,
    insecure: bool = False,
    timeout: float = 60.0,
) -> ImportResult:
    """Import ``content`` (NDJSON) into Kibana; :class:`TrawlError` with one line on any failure."""
    url = import_url(kibana_url, space)
    body, content_type = multipart("file", "trawl-saved-objects.ndjson", content)
    headers = {"kbn-xsrf": "true", "Content-Type": content_type, "Accept": "application/json"}
    if user:
        name, _, password = user.partition(":")
        headers["Authorization"] = "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()
    if api_key:
        headers["Authorization"] = f"ApiKey {api_key}"
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context(cafile=ca_certs or None)
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    request = Request(url, data=body, headers=headers, method="POST")
    shown = kibana_url.rstrip("/")
    try:
        with urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310 - the user's URL
            answer = response.read()
    except HTTPError as exc:
        detail = _kibana_message(exc.read())
        hint = " (check --user / --api-key)" if exc.code in (401, 403) else ""
        raise TrawlError(f"Kibana at {shown} refused the import: HTTP {exc.code}: {detail}{hint}") from None
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrawlError(f"cannot reach Kibana at {shown}: {reason}") from None
    try:
        result = json.loads(answer)
    except ValueError:
        raise TrawlError(f"Kibana at {shown} answered something that is not JSON: {answer[:100]!r}") from None
    errors = result.get("errors") or []
    if not result.get("success", False) or errors:
        first = errors[0] if errors else {}
        what = f"{first.get('type')} {first.get('id')}: {first.get('error', {}).get('type')}" if first else ""
        raise TrawlError(
            f"Kibana at {shown} imported {result.get('successCount', 0)} objects,"
            f" {len(errors)} failed{': ' + what if what else ''}"
        )
    return ImportResult(int(result.get("successCount", 0)), errors)


def _kibana_message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode(errors="replace").strip() or "no message"
    return str(data.get("message") or data.get("error") or data)[:300]


if __name__ == "__main__":
    sys.stdout.buffer.write(ndjson())
