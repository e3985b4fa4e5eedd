"""Index names, strict ECS mappings and the templates that carry them.

One document per canonical URL in ``<prefix>-urls-v1``: the composable index
template ``<prefix>-urls`` (two component templates, settings and mappings)
covers ``<prefix>-urls-*``, so a reindex into ``-v2`` or a hand-made index of
the pattern gets the same strict mappings. ECS ``url.*`` fields and trawl's
provenance under ``trawl.*``; ``<prefix>-pages`` is the resume ledger,
``<prefix>-runs`` one document per run. Installed at every open (idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trawl.stores.elasticsearch.config import index_prefix, setting

MAPPING_VERSION = 1
#: Capture timestamps as sources give them, or ISO dates, or epoch milliseconds.
TS_FORMAT = "yyyyMMddHHmmss||strict_date_optional_time||epoch_millis"


@dataclass(frozen=True)
class Names:
    prefix: str

    @property
    def urls(self) -> str:
        return f"{self.prefix}-urls-v{MAPPING_VERSION}"

    @property
    def urls_pattern(self) -> str:
        return f"{self.prefix}-urls-*"

    @property
    def template(self) -> str:
        return f"{self.prefix}-urls"

    @property
    def pages(self) -> str:
        return f"{self.prefix}-pages"

    @property
    def runs(self) -> str:
        return f"{self.prefix}-runs"


def names_from(settings: Any) -> Names:
    return Names(index_prefix(setting(settings, "ELASTICSEARCH_INDEX_PREFIX")))


_KEYWORD = {"type": "keyword", "ignore_above": 1024}
#: URLs, paths and queries: 8191 is Lucene's largest term in UTF-8 bytes divided by 4 (32766 / 4).
_LONG_KEYWORD = {"type": "keyword", "ignore_above": 8191}

URL_PROPERTIES: dict[str, Any] = {
    "full": _LONG_KEYWORD,
    "original": _LONG_KEYWORD,
    "scheme": _KEYWORD,
    "domain": _KEYWORD,
    "registered_domain": _KEYWORD,
    "subdomain": _KEYWORD,
    "top_level_domain": _KEYWORD,
    "port": {"type": "long"},
    "path": _LONG_KEYWORD,
    "query": _LONG_KEYWORD,
    "extension": _KEYWORD,
}

TRAWL_PROPERTIES: dict[str, Any] = {
    "sources": _KEYWORD,
    "first_seen": {"type": "date", "format": TS_FORMAT, "ignore_malformed": True},
    "last_seen": {"type": "date", "format": TS_FORMAT, "ignore_malformed": True},
    "captures": {"type": "long"},
    "status_codes": {"type": "short", "ignore_malformed": True},
    "mime_types": _KEYWORD,
    "params": _KEYWORD,
    "run_ids": _KEYWORD,
    "first_run": _KEYWORD,
    "last_run": _KEYWORD,
    # {source: [run id, captures in that run, best run]}: read back for merges, never searched.
    "source_counts": {"type": "object", "enabled": False},
    "added_at": {"type": "date"},
    "updated_at": {"type": "date"},
}


def component_templates(names: Names, settings: Any) -> dict[str, dict[str, Any]]:
    shards = int(setting(settings, "ELASTICSEARCH_SHARDS"))
    replicas = str(setting(settings, "ELASTICSEARCH_REPLICAS"))
    index_settings: dict[str, Any] = {"number_of_shards": shards}
    if "-" in replicas:
        index_settings["auto_expand_replicas"] = replicas
    else:
        index_settings["number_of_replicas"] = int(replicas)
    return {
        f"{names.template}-settings": {"template": {"settings": {"index": index_settings}}},
        f"{names.template}-mappings": {
            "template": {
                "mappings": {
                    "dynamic": "strict",
                    "_meta": {"trawl_mapping_version": MAPPING_VERSION},
                    "properties": {
                        "@timestamp": {"type": "date"},
                        "url": {"properties": URL_PROPERTIES},
                        "trawl": {"properties": TRAWL_PROPERTIES},
                    },
                }
            },
            "_meta": {"description": "trawl URL records: ECS url.* and trawl provenance"},
        },
    }


def index_template(names: Names) -> dict[str, Any]:
    return {
        "index_patterns": [names.urls_pattern],
        "composed_of": [f"{names.template}-settings", f"{names.template}-mappings"],
        "priority": 200,
        "_meta": {"managed_by": "trawl", "trawl_mapping_version": MAPPING_VERSION},
    }


PAGES_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "run": {"type": "keyword"},
        "source": {"type": "keyword"},
        "page": {"type": "keyword"},
        "rows": {"type": "long"},
        "stored_at": {"type": "date"},
    },
}
RUNS_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "run_id": {"type": "keyword"},
        "job": {"type": "keyword"},
        "source": {"type": "keyword"},
        "domain": {"type": "keyword"},
        "started_at": {"type": "date"},
        "finished_at": {"type": "date"},
        "finish_reason": {"type": "keyword"},
        "stats": {"type": "object", "enabled": False},
    },
}
#: The ledger and the runs stay small: one shard, a replica once there is a second node.
_SMALL_INDEX = {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}}


def install_templates(client: Any, names: Names, settings: Any) -> None:
    """Component and index templates, then the indexes (idempotent: run at every open)."""
    for name, body in component_templates(names, settings).items():
        client.cluster.put_component_template(name=name, **body)
    client.indices.put_index_template(name=names.template, **index_template(names))
    _create_index(client, names.urls, None)
    _create_index(client, names.pages, PAGES_MAPPINGS, _SMALL_INDEX)
    if not _create_index(client, names.runs, RUNS_MAPPINGS, _SMALL_INDEX):
        # A runs index made before jobs were recorded: adding a field is allowed on a strict mapping.
        client.indices.put_mapping(index=names.runs, properties={"job": RUNS_MAPPINGS["properties"]["job"]})


def _create_index(client: Any, name: str, mappings: Any, settings: Any = None) -> bool:
    """Create the index if it is missing; False when it existed already."""
    from elasticsearch import BadRequestError

    if client.indices.exists(index=name):
        return False
    try:
        kwargs: dict[str, Any] = {}
        if mappings is not None:
            kwargs["mappings"] = mappings
        if settings is not None:
            kwargs["settings"] = settings
        client.indices.create(index=name, **kwargs)
    except BadRequestError as exc:  # created meanwhile by another worker
        if "resource_already_exists" not in str(exc):
            raise
        return False
    return True
