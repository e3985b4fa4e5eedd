"""Kibana saved objects (validated offline) and ``scrapy kibana-setup`` (against a local stand-in).

Kibana cannot run on the test machines. The NDJSON is checked the way Kibana's
import reads it: every line an object of a known type, every stringified
attribute valid JSON, every reference resolving to an object in the file, ids
fixed. Fields the objects use must exist in the store's mappings. The import
command is run against a local server that checks the request as Kibana's
``POST /api/saved_objects/_import`` route does (method, path, ``kbn-xsrf``
header, multipart ``file`` field with an ``.ndjson`` name, auth).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from trawl.stores.elasticsearch import kibana_crates
from trawl.stores.elasticsearch.kibana import DATA_VIEW_TITLE, ndjson, saved_objects
from trawl.stores.elasticsearch.templates import TRAWL_PROPERTIES, URL_PROPERTIES

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import run_scrapy
    from tests.servers.kibana import FakeKibana
    from tests.servers.noida import free_port
except ImportError:
    from conftest import run_scrapy  # type: ignore[no-redef]
    from servers.kibana import FakeKibana  # type: ignore[no-redef]
    from servers.noida import free_port  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
NDJSON = ROOT / "trawl" / "stores" / "elasticsearch" / "kibana_objects" / "trawl-saved-objects.ndjson"
STRINGIFIED = {
    "visState",
    "uiStateJSON",
    "panelsJSON",
    "optionsJSON",
    "fields",
    "fieldFormatMap",
    "runtimeFieldMap",
    "sourceFilters",
    "fieldAttrs",
    "typeMeta",
}
TYPES = {"index-pattern", "search", "visualization", "dashboard"}
EXPECTED_IDS = [
    ("index-pattern", "trawl-urls"),
    ("search", "trawl-search-javascript"),
    ("search", "trawl-search-api-endpoints"),
    ("search", "trawl-search-login-admin"),
    ("search", "trawl-search-interesting-extensions"),
    ("search", "trawl-search-parameters"),
    ("visualization", "trawl-vis-urls-per-source"),
    ("visualization", "trawl-vis-urls-per-host"),
    ("visualization", "trawl-vis-urls-per-status"),
    ("visualization", "trawl-vis-urls-per-mime"),
    ("visualization", "trawl-vis-captures-over-time"),
    ("dashboard", "trawl-dashboard"),
]


def mapped_fields() -> set[str]:
    fields = {"@timestamp"}
    fields |= {f"url.{name}" for name in URL_PROPERTIES}
    fields |= {f"trawl.{name}" for name in TRAWL_PROPERTIES}
    return fields


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    lines = NDJSON.read_bytes().splitlines()
    assert lines, "empty NDJSON"
    return [json.loads(line) for line in lines]


def test_shipped_file_is_what_the_command_imports(objects: list[dict[str, Any]]) -> None:
    assert NDJSON.read_bytes() == ndjson(), (
        "regenerate: python -m trawl.stores.elasticsearch.kibana"
        " > trawl/stores/elasticsearch/kibana_objects/trawl-saved-objects.ndjson"
    )
    assert objects == json.loads(json.dumps(saved_objects()))


def test_every_line_is_a_saved_object(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        assert obj["type"] in TYPES
        assert isinstance(obj["attributes"], dict) and obj["attributes"].get("title")
        assert isinstance(obj["references"], list)
        assert re.fullmatch(r"\d+\.\d+\.\d+", obj["coreMigrationVersion"])
        assert re.fullmatch(r"\d+\.\d+\.\d+", obj["typeMigrationVersion"])


def test_ids_are_stable_and_unique(objects: list[dict[str, Any]]) -> None:
    assert [(o["type"], o["id"]) for o in objects] == EXPECTED_IDS


def _stringified(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    attributes = obj["attributes"]
    for key in STRINGIFIED & attributes.keys():
        yield key, attributes[key]
    meta = attributes.get("kibanaSavedObjectMeta")
    if meta is not None:
        yield "searchSourceJSON", meta["searchSourceJSON"]


def test_every_stringified_field_parses(objects: list[dict[str, Any]]) -> None:
    seen = set()
    for obj in objects:
        for key, text in _stringified(obj):
            assert isinstance(text, str), (obj["id"], key)
            json.loads(text)
            seen.add(key)
    assert {"visState", "panelsJSON", "searchSourceJSON", "fieldFormatMap"} <= seen


def test_every_reference_resolves_inside_the_file(objects: list[dict[str, Any]]) -> None:
    present = {(o["type"], o["id"]) for o in objects}
    for obj in objects:
        names = [ref["name"] for ref in obj["references"]]
        assert len(names) == len(set(names)), obj["id"]
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in present, (obj["id"], ref)
        used: set[str] = set()
        meta = obj["attributes"].get("kibanaSavedObjectMeta")
        if meta is not None:
            source = json.loads(meta["searchSourceJSON"])
            if "indexRefName" in source:
                assert source["indexRefName"] in names, obj["id"]
                used.add(source["indexRefName"])
            assert "index" not in source  # ids go through references, never inline
        if obj["type"] == "dashboard":
            for panel in json.loads(obj["attributes"]["panelsJSON"]):
                name = f"{panel['panelIndex']}:{panel['panelRefName']}"
                assert name in names, name
                used.add(name)
        assert used == set(names), f"{obj['id']}: unused references {set(names) - used}"


def test_data_view_covers_the_store_indexes(objects: list[dict[str, Any]]) -> None:
    view = objects[0]
    assert view["attributes"]["title"] == DATA_VIEW_TITLE == "trawl-urls-*"
    assert view["attributes"]["timeFieldName"] == "@timestamp"


def _kql_fields(query: str) -> set[str]:
    return set(re.findall(r"([A-Za-z_@][\w.@]*)\s*:", query))


def test_fields_exist_in_the_store_mappings(objects: list[dict[str, Any]]) -> None:
    fields = mapped_fields()
    used: set[str] = set()
    for obj in objects:
        attributes = obj["attributes"]
        used |= set(attributes.get("columns", []))
        used |= {sort[0] for sort in attributes.get("sort", [])}
        meta = attributes.get("kibanaSavedObjectMeta")
        if meta is not None:
            used |= _kql_fields(json.loads(meta["searchSourceJSON"]).get("query", {}).get("query", ""))
        if "visState" in attributes:
            for agg in json.loads(attributes["visState"])["aggs"]:
                if "field" in agg["params"]:
                    used.add(agg["params"]["field"])
        if obj["type"] == "index-pattern":
            used |= set(json.loads(attributes["fieldFormatMap"]))
            used.add(attributes["timeFieldName"])
    assert used - fields == set()
    assert {"url.extension", "url.path", "url.query", "trawl.sources", "trawl.status_codes"} <= used


def test_saved_searches_cover_what_waymore_users_look_for(objects: list[dict[str, Any]]) -> None:
    searches = {o["attributes"]["title"]: o for o in objects if o["type"] == "search"}
    titles = " ".join(searches).lower()
    for word in ("javascript", "api", "login", "admin", "extensions", "parameters"):
        assert word in titles
    js = json.loads(
        searches["trawl: JavaScript files"]["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"]
    )
    assert js["query"] == {
        "query": 'url.extension : ("js" or "mjs" or "jsx" or "ts" or "map")',
        "language": "kuery",
    }


def test_dashboard_shows_every_visualization(objects: list[dict[str, Any]]) -> None:
    dashboard = objects[-1]
    panels = json.loads(dashboard["attributes"]["panelsJSON"])
    visualizations = [o["id"] for o in objects if o["type"] == "visualization"]
    assert sorted(ref["id"] for ref in dashboard["references"]) == sorted(visualizations)
    assert len({p["panelIndex"] for p in panels}) == len(panels) == len(visualizations)
    for panel in panels:  # inside Kibana's 48-column grid, no overlap
        grid = panel["gridData"]
        assert grid["x"] + grid["w"] <= 48
    cells = [(p["gridData"]["x"], p["gridData"]["y"]) for p in panels]
    assert len(set(cells)) == len(cells)


# --------------------------------------------------------------------------------------
# kibana-setup against a stand-in for Kibana's import route (tests/servers/kibana.py)
# --------------------------------------------------------------------------------------


def test_the_stand_in_refuses_what_kibana_refuses() -> None:
    """The fake is only worth what it checks: a request without kbn-xsrf, or with a .txt, fails."""
    with FakeKibana() as kibana:
        url = f"{kibana.url}/api/saved_objects/_import?overwrite=true"
        no_xsrf = Request(
            url, data=b"x", headers={"Content-Type": "multipart/form-data; boundary=b"}, method="POST"
        )
        with pytest.raises(HTTPError) as info:
            urlopen(no_xsrf)
        assert info.value.code == 400 and b"kbn-xsrf" in info.value.read()
        body = b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\n\r\n{}\r\n--b--\r\n'
        txt = Request(
            url,
            data=body,
            method="POST",
            headers={"kbn-xsrf": "true", "Content-Type": "multipart/form-data; boundary=b"},
        )
        with pytest.raises(HTTPError) as info:
            urlopen(txt)
        assert b"Invalid file extension .txt" in info.value.read()
        assert kibana.imports == []


def test_kibana_setup_imports_the_objects(workdir: Path, objects: list[dict[str, Any]]) -> None:
    with FakeKibana() as kibana:
        result = run_scrapy(workdir, "kibana-setup", "--kibana-url", kibana.url + "/")
    assert result.returncode == 0, result.stderr
    crates = len(kibana_crates.saved_objects())
    assert result.stdout.strip() == f"imported {len(objects) + crates} saved objects into {kibana.url}"
    assert len(kibana.imports) == 1
    assert kibana.imports[0]["overwrite"] is True
    assert kibana.imports[0]["space"] == "default"
    assert kibana.imports[0]["objects"] == objects + json.loads(json.dumps(kibana_crates.saved_objects()))


def test_kibana_setup_with_auth_and_space(workdir: Path) -> None:
    expected = "Basic " + base64.b64encode(b"elastic:s3cret").decode()
    with FakeKibana(auth=expected) as kibana:
        denied = run_scrapy(workdir, "kibana-setup", "--kibana-url", kibana.url)
        ok = run_scrapy(
            workdir,
            "kibana-setup",
            "--kibana-url",
            kibana.url,
            "--user",
            "elastic:s3cret",
            "--space",
            "security",
        )
    assert denied.returncode == 1
    assert denied.stderr.strip().splitlines() == [
        f"trawl: error: Kibana at {kibana.url} refused the import: HTTP 401:"
        " [security_exception] unable to authenticate (check --user / --api-key)"
    ]
    assert ok.returncode == 0, ok.stderr
    assert [i["space"] for i in kibana.imports] == ["security"]
    with FakeKibana(auth="ApiKey a2V5OnNlY3JldA==") as kibana:
        keyed = run_scrapy(
            workdir, "kibana-setup", "--kibana-url", kibana.url, "--api-key", "a2V5OnNlY3JldA=="
        )
    assert keyed.returncode == 0, keyed.stderr


def test_kibana_setup_reports_objects_kibana_refused(workdir: Path) -> None:
    with FakeKibana(fail_ids={"trawl-dashboard"}) as kibana:
        result = run_scrapy(workdir, "kibana-setup", "--kibana-url", kibana.url)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"trawl: error: Kibana at {kibana.url} imported 21 objects, 1 failed:"
        " dashboard trawl-dashboard: missing_references"
    ]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ((), 2, "trawl: error: give --kibana-url http://host:5601 (or set KIBANA_URL)"),
        (("--kibana-url", "ftp://x"), 2, "trawl: error: --kibana-url 'ftp://x': give http(s)://host:5601"),
        (
            ("--kibana-url", "http://k", "--user", "a:b", "--api-key", "k"),
            2,
            "trawl: error: give --user or --api-key",
        ),
        (
            ("--kibana-url", "http://127.0.0.1:{port}"),
            1,
            "trawl: error: cannot reach Kibana at http://127.0.0.1:",
        ),
    ],
)
def test_kibana_setup_errors_are_one_line(
    workdir: Path, args: tuple[str, ...], status: int, message: str
) -> None:
    args = tuple(a.format(port=free_port()) for a in args)
    result = run_scrapy(workdir, "kibana-setup", *args, env={"KIBANA_URL": ""})
    assert result.returncode == status, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)


def test_listed_once_under_its_hyphenated_name(workdir: Path) -> None:
    """``kibana_setup`` was the module name Scrapy also listed; ``scrapy -h`` now lists the command once."""
    result = run_scrapy(workdir, "kibana_setup", "--kibana-url", "http://127.0.0.1:9")
    assert result.returncode == 2 and "Unknown command: kibana_setup" in result.stdout


CRATES_NDJSON = NDJSON.with_name("trawl-crates-saved-objects.ndjson")


def test_crates_objects_are_shipped_valid_and_read_mapped_fields() -> None:
    """The crates.io objects: the shipped file is what the command imports; every reference resolves;
    every field a panel reads is in its index's strict mapping (:mod:`trawl.stores.elasticsearch.kinds`)."""
    from trawl.sources.crates.records import CRATES_KINDS
    from trawl.stores.elasticsearch.kinds import kind_index, mappings

    assert CRATES_NDJSON.read_bytes() == kibana_crates.ndjson(), (
        "regenerate: python -m trawl.stores.elasticsearch.kibana_crates > "
        + str(CRATES_NDJSON.relative_to(ROOT))
    )
    objects = [json.loads(line) for line in CRATES_NDJSON.read_bytes().splitlines()]
    fields = {kind_index("trawl", k): set(mappings(k)["properties"]) for k in CRATES_KINDS}
    views = {o["id"]: o["attributes"]["title"] for o in objects if o["type"] == "index-pattern"}
    present = {(o["type"], o["id"]) for o in objects}
    titles = " ".join(o["attributes"]["title"] for o in objects).lower()
    for words in (
        "top crates by downloads",
        "recently updated",
        "versions published per week",
        "most depended-on",
    ):
        assert words in titles
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in present, (obj["id"], ref)
        attributes = obj["attributes"]
        view = next((r["id"] for r in obj["references"] if r["type"] == "index-pattern"), None)
        used = set(attributes.get("columns", [])) | {s[0] for s in attributes.get("sort", [])}
        if "visState" in attributes:
            used |= {
                a["params"]["field"]
                for a in json.loads(attributes["visState"])["aggs"]
                if "field" in a["params"]
            }
        if obj["type"] == "index-pattern":
            used |= {attributes["timeFieldName"]} if "timeFieldName" in attributes else set()
            view = obj["id"]
        if view is not None:
            assert used <= fields[views[view]], (obj["id"], used - fields[views[view]])
